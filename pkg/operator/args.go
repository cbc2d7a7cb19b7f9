package operator

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
)

// Verbosity is the -v an operator gives its operand for a log level: 2, 4, 6 for Normal, Debug and Trace in every
// operator; TraceAll differs by operator and is the caller's traceAll: 8 for kube-controller-manager
// (cluster-kube-controller-manager-operator pkg/operator/targetconfigcontroller/targetconfigcontroller.go,
// managePod, as library-go pkg/operator/loglevel/util.go LogLevelToVerbosity), 10 for kube-apiserver
// (cluster-kube-apiserver-operator pkg/operator/targetconfigcontroller/targetconfigcontroller.go) and for
// kube-scheduler, whose node scores are logged at 10 (cluster-kube-scheduler-operator
// pkg/operator/targetconfigcontroller/targetconfigcontroller.go, managePod).
func Verbosity(l operatorv1.LogLevel, traceAll int) int {
	switch l {
	case operatorv1.Debug:
		return 4
	case operatorv1.Trace:
		return 6
	case operatorv1.TraceAll:
		return traceAll
	default:
		return 2
	}
}

// Flags are command-line flags in the order added; a flag may repeat.
type Flags [][2]string

// Add appends --name=value.
func (f *Flags) Add(name, value string) { *f = append(*f, [2]string{name, value}) }

// Args are the flags as "--name=value", sorted by name (a repeated flag keeps its order).
func (f Flags) Args() []string {
	sorted := append(Flags(nil), f...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i][0] < sorted[j][0] })
	out := make([]string, 0, len(sorted))
	for _, a := range sorted {
		out = append(out, "--"+a[0]+"="+a[1])
	}
	return out
}

// SortedArgs turns flags into "--name=value" arguments sorted by name.
func SortedArgs(flags map[string]string) []string {
	var f Flags
	for n, v := range flags {
		f.Add(n, v)
	}
	return f.Args()
}

// ListArgs turns flags with several values each (extendedArguments, unsupportedConfigOverrides arguments) into one
// "--name=value" argument per value, sorted as strings, as the operators sort them (cluster-kube-controller-manager-
// operator targetconfigcontroller.go GetKubeControllerManagerArgs; cluster-kube-scheduler-operator
// targetconfigcontroller.go for the unsupported arguments).
func ListArgs(flags map[string][]string) []string {
	var out []string
	for k, vs := range flags {
		for _, v := range vs {
			out = append(out, fmt.Sprintf("--%s=%s", k, v))
		}
	}
	sort.Strings(out)
	return out
}

// BindAddress is where an upstream pod listens on every address of the node, written as kube-apiserver's observed
// bind address is: 0.0.0.0 on an IPv4 node, :: when the node has an IPv6 address.
func BindAddress(nodeIPs []netip.Addr) (string, error) {
	if len(nodeIPs) == 0 {
		return "", fmt.Errorf("no node IP")
	}
	for _, ip := range nodeIPs {
		if ip.Is6() && !ip.Is4In6() {
			return "::", nil
		}
	}
	return "0.0.0.0", nil
}

// ImageTag is the tag of an image pull spec ("" for a digest or no tag): the operand version the recovery
// controllers report, where the operators take their payload version.
func ImageTag(pullSpec string) string {
	if strings.Contains(pullSpec, "@") {
		return ""
	}
	slash := strings.LastIndex(pullSpec, "/")
	if i := strings.LastIndex(pullSpec, ":"); i > slash {
		return pullSpec[i+1:]
	}
	return ""
}
