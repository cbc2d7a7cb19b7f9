package scheduler_test

import (
	"regexp"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/internal/testkit/upstreamtest"
	"github.com/render-static/render-static/pkg/scheduler"
)

// upstreamPod is what --flavor upstream's kube-scheduler pod must be (upstreamtest.Pod's tests): a flag-only pod
// for the upstream image, no config file, no environment, every file one the render lays down (the rest of the
// render is the OpenShift flavor's); --kubeconfig its only deprecated flag (kube-scheduler v1.34 has no other for
// its client connection: its replacement is --config; kubeadm v1.34 passes it too); HTTPS probes on 10259.
var upstreamPod = &upstreamtest.Pod{
	Component: component,
	PodName:   "openshift-kube-scheduler", Namespace: scheduler.TargetNamespace, PodFile: podFile,
	ImageName: scheduler.UpstreamImage,
	MinFlags:  50, MinValues: map[string]int{"cipher-suite": 10, "tls-version": 4},
	AllowedDeprecated: map[string]bool{"kubeconfig": true},
	Forbidden:         []string{"--config"},
	Port:              10259,
	Want: func(*upstreamtest.Render, upstreamtest.Case) map[string]string {
		return map[string]string{"cert-dir": "/var/run/kubernetes"}
	},

	// The OpenShift pod's flags, and the kubeconfig its config.yaml names (clientConnection).
	OpenShiftFlags: func(t *testing.T, openshift *rendertest.Render, pod *corev1.Pod) map[string]string {
		osFlags := map[string]string{}
		for _, a := range pod.Spec.Containers[0].Args {
			name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			osFlags[name] = value
		}
		f, ok := openshift.File(revDir + "/configmaps/config/config.yaml")
		if !ok {
			t.Fatal("no config.yaml in the OpenShift flavor")
		}
		m := regexp.MustCompile(`"kubeconfig":"([^"]+)"`).FindStringSubmatch(string(f.Contents))
		if m == nil {
			t.Fatalf("config.yaml names no kubeconfig: %s", f.Contents)
		}
		osFlags["kubeconfig"] = m[1]
		return osFlags
	},
	SamePaths:           "authentication-kubeconfig authorization-kubeconfig cert-dir kubeconfig",
	MinLayoutFiles:      15,
	SameFiles:           []string{revDir + "/configmaps/config/config.yaml", revDir + "/configmaps/scheduler-kubeconfig/kubeconfig"},
	OpenShiftContainers: "wait-for-host-port kube-scheduler kube-scheduler-cert-syncer kube-scheduler-recovery-controller",
	OpenShiftFlag:       "--config=",

	FlagListHeader: `kube-scheduler v1.34.3, from the --help of the binary test/e2e builds (k8s.io/kubernetes v1.34.3):
flag NAME TYPE [deprecated] (TYPE bool: no value type), cipher-suite (preferred), insecure-cipher-suite, tls-version.
Regenerate with
  go test ./pkg/scheduler -run TestUpstreamFlagsParseWithTheBinary -args -update-upstream-flags`,
	ValueLists: upstreamtest.TLSValueLists,
	Rejected:   [][]string{{"--config=/x.yaml", "--policy-config-file=/p"}, {"--bind-address=not-an-ip"}, {"--secure-port=x"}},
}

// TestUpstream runs upstreamtest.Pod's tests of the pod, the files it shares with the OpenShift pod, the layout and
// the OpenShift flavor; TestUpstreamFlagsParseWithTheBinary its flag-list test.
func TestUpstream(t *testing.T)                        { upstreamPod.Run(t) }
func TestUpstreamFlagsParseWithTheBinary(t *testing.T) { upstreamPod.TestFlagsParseWithTheBinary(t) }

// TestUpstreamArgs: the flags of the rendered inputs are the pod's; what the flag-only scheduler cannot run is
// refused (a profile other than upstream's default plugins, a profile customization, a policy), and so is an input
// it cannot start without.
func TestUpstreamArgs(t *testing.T) {
	r := upstreamPod.Render(t, upstreamtest.Cases[0])
	observed := r.ObservedConfig(t, component)
	inputs := func() scheduler.UpstreamInputs {
		return scheduler.UpstreamInputs{Observed: observed(), NodeIPs: r.Inputs.NodeIPs, Verbosity: 2}
	}
	refused := []upstreamtest.ArgsCase[scheduler.UpstreamInputs]{
		{Name: "without servingInfo.minTLSVersion", Says: "minTLSVersion", Mutate: func(in *scheduler.UpstreamInputs) { upstreamtest.WithoutMinTLSVersion(in.Observed) }},
		{Name: "without node IPs", Mutate: func(in *scheduler.UpstreamInputs) { in.NodeIPs = nil }},
	}
	for name, s := range map[string]configv1.SchedulerSpec{
		"HighNodeUtilization": {Profile: configv1.HighNodeUtilization},
		"NoScoring":           {Profile: configv1.NoScoring},
		"DRA":                 {ProfileCustomizations: configv1.ProfileCustomizations{DynamicResourceAllocation: configv1.DRAEnablementEnabled}},
		"policy":              {Policy: configv1.ConfigMapNameReference{Name: "my-policy"}},
	} {
		refused = append(refused, upstreamtest.ArgsCase[scheduler.UpstreamInputs]{Name: name, Mutate: func(in *scheduler.UpstreamInputs) { in.Scheduler = s }})
	}
	upstreamtest.CheckArgs(t, r, podFile, inputs, scheduler.UpstreamArgs, refused)

	in := inputs()
	in.Scheduler.Profile = configv1.LowNodeUtilization
	if _, err := scheduler.UpstreamArgs(in); err != nil {
		t.Errorf("LowNodeUtilization: %v", err)
	}
}
