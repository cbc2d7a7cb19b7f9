// Package upstreamtest is what the --flavor upstream tests of the component packages (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) share: it renders install-configs with the upstream flavor through the
// whole pipeline (pkg/pipeline: validate, one engine run of every registered component, export) once per test
// binary and case, resolves the paths a container sees through its pod's mounts (rendertest.MountedPath), checks
// the kubeconfigs, volumes, scratch directory, probes and host-path mounts of the pods, parses --name=value
// arguments, reads and writes the committed flag lists of the upstream binaries (derived from the --help of the
// binaries test/e2e builds), finds those binaries and lets them parse the pods' flags. It is for tests only:
// import it from _test.go files.
package upstreamtest

import (
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/operator"
	"github.com/render-static/render-static/pkg/pipeline"
)

// Case is one install-config rendered with the upstream flavor. Paths are relative to a package directory two
// levels below the repository root (pkg/<component>).
type Case struct {
	Name, InstallConfig string
	// NodeIPs as --node-ip takes them; empty: the install-config's "# node-ip:" comment.
	NodeIPs string
	// BindAddress is where the components listen: every address of the node's IP family (or families).
	BindAddress string
}

// Cases: the conformance install-config (IPv4, the node and infrastructure name of rendertest.SNO, so that the
// OpenShift flavor's render of it is comparable file by file), IPv6, dual stack, and a cluster-wide proxy.
var Cases = []Case{
	{"ipv4", rendertest.InstallConfig(), rendertest.NodeIP, "0.0.0.0"},
	{"ipv6", "../../testdata/installconfig/good/ipv6.yaml", "", "::"},
	{"dualstack", "../../testdata/installconfig/good/dualstack.yaml", "", "::"},
	{"proxy", "../../testdata/installconfig/good/proxy.yaml", "", "0.0.0.0"},
}

// Render is one upstream-flavor render.
type Render struct {
	Case    Case
	Inputs  *clusterconfig.Inputs
	Settled *pipeline.Settled
	Tree    *export.Tree
	Took    time.Duration
	files   rendertest.Files
}

var renders rendertest.Once[Case, *Render]

// Get renders a case once per process (later calls return the same render, or the same error).
func Get(c Case) (*Render, error) {
	return renders.Get(c, func() (*Render, error) { return render(c) })
}

func render(c Case) (*Render, error) {
	start := time.Now()
	ips := c.NodeIPs
	if ips == "" {
		var err error
		if ips, err = rendertest.NodeIPs(c.InstallConfig); err != nil {
			return nil, err
		}
	}
	// Dir is validated but never written: the tree stays in memory.
	in, eng, o, err := rendertest.Pipeline(pipeline.Options{InstallConfig: c.InstallConfig, NodeIP: ips, NodeName: rendertest.NodeName,
		Dir: "unused", CertValidity: certs.DefaultLeafValidity, InfraID: rendertest.InfraID, Flavor: string(clusterconfig.FlavorUpstream)})
	if err != nil {
		return nil, err
	}
	return &Render{Case: c, Inputs: in, Settled: eng, Tree: o.Tree, Took: time.Since(start), files: rendertest.FilesOf(o.Tree)}, nil
}

// File returns a node file of the render (with or without the leading slash).
func (r *Render) File(p string) (export.File, bool) { return r.files.File(p) }

// Files returns the node paths of the render (with the leading slash).
func (r *Render) Files() map[string]export.File { return r.files }

// Pod decodes the static pod manifest /etc/kubernetes/manifests/<file>.
func (r *Render) Pod(file string) (*corev1.Pod, error) { return r.files.Pod(file) }

// ContainerFile reads the file a container of pod sees at p: through its mounts, a file the render lays down.
func (r *Render) ContainerFile(pod *corev1.Pod, container, p string) ([]byte, error) {
	host, err := rendertest.HostPath(pod, container, p)
	if err != nil {
		return nil, err
	}
	f, ok := r.File(host)
	if !ok {
		return nil, fmt.Errorf("%s (%s in container %s) is not in the render", host, p, container)
	}
	if len(f.Contents) == 0 {
		return nil, fmt.Errorf("%s (%s in container %s) is empty", host, p, container)
	}
	return f.Contents, nil
}

// Kubeconfig is what a kubeconfig a pod names must be (Path: as the container sees it).
type Kubeconfig = rendertest.Kubeconfig

// CheckKubeconfig verifies a kubeconfig a container of pod reads: its server; that its CA (a file the container
// sees) verifies kube-apiserver's serving certificate for the server name; that its client certificate and key
// (files the container sees) belong together, are the user's and chain to kube-apiserver's client CA.
func (r *Render) CheckKubeconfig(pod *corev1.Pod, container string, k Kubeconfig) error {
	return rendertest.CheckKubeconfig(func(p string) ([]byte, error) { return r.ContainerFile(pod, container, p) }, r.File, k)
}

// Certificate parses the first certificate of a node file.
func (r *Render) Certificate(nodePath string) (*x509.Certificate, error) {
	return rendertest.Certificate(r.File, nodePath)
}

// Arg is one "--name=value" argument.
type Arg struct{ Name, Value string }

// ParseArgs splits arguments that must all be --name=value.
func ParseArgs(args []string) ([]Arg, error) {
	var out []Arg
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok || name == "" {
			return nil, fmt.Errorf("argument %q is not --name=value", a)
		}
		out = append(out, Arg{name, value})
	}
	return out, nil
}

// Values returns every value of a flag, in order.
func Values(args []Arg, name string) []string {
	var out []string
	for _, a := range args {
		if a.Name == name {
			out = append(out, a.Value)
		}
	}
	return out
}

// FlagList is a committed list of an upstream binary's flags: "flag NAME TYPE [deprecated]" lines (TYPE bool for
// a flag without a value type) and "KIND VALUE" lines of value lists (cipher-suite, tls-version, controller, ...).
type FlagList struct {
	Flags      map[string]string // name → type
	Deprecated map[string]bool
	Values     map[string]map[string]bool // kind → values
}

// LoadFlagList reads a committed flag list.
func LoadFlagList(file string) (*FlagList, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	l := &FlagList{Flags: map[string]string{}, Deprecated: map[string]bool{}, Values: map[string]map[string]bool{}}
	for i, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "flag" && (len(f) == 3 || len(f) == 4 && f[3] == "deprecated"):
			l.Flags[f[1]] = f[2]
			l.Deprecated[f[1]] = len(f) == 4
		case f[0] != "flag" && len(f) == 2:
			if l.Values[f[0]] == nil {
				l.Values[f[0]] = map[string]bool{}
			}
			l.Values[f[0]][f[1]] = true
		default:
			return nil, fmt.Errorf("%s:%d: cannot parse %q", file, i+1, line)
		}
	}
	return l, nil
}

// ValueList says which value list of a flag's --help text becomes "Kind VALUE" lines: the comma-separated items
// between After and Before in the flag's description (Before "" or absent: to its end).
type ValueList struct{ Kind, Flag, After, Before string }

// TLSValueLists are the cipher suites (preferred and insecure) and TLS versions of a Kubernetes component's help.
var TLSValueLists = []ValueList{
	{"cipher-suite", "tls-cipher-suites", "Preferred values:", "."},
	{"insecure-cipher-suite", "tls-cipher-suites", "Insecure values:", "."},
	{"tls-version", "tls-min-version", "Possible values:", ""},
}

var (
	helpFlagRE    = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)(?: (\S+))?(?:\s{2,}(.*))?$`)
	helpSectionRE = regexp.MustCompile(`^\S.*:$`)
)

// FlagListFromHelp turns a Kubernetes component's --help into the committed list: every flag with its value type
// and whether it is deprecated (its description says DEPRECATED, or it is in the "Deprecated flags:" section),
// then the value lists. header is written first, as comment lines.
func FlagListFromHelp(help, header string, lists []ValueList) (string, error) {
	type entry struct {
		typ, desc  string
		deprecated bool
	}
	flags := map[string]*entry{}
	var cur *entry
	section := ""
	for _, line := range strings.Split(help, "\n") {
		if helpSectionRE.MatchString(line) {
			section, cur = line, nil
			continue
		}
		if m := helpFlagRE.FindStringSubmatch(line); m != nil {
			typ := m[2]
			if typ == "" {
				typ = "bool"
			}
			cur = &entry{typ: typ, desc: m[3], deprecated: section == "Deprecated flags:"}
			flags[m[1]] = cur
			continue
		}
		if cur != nil && strings.HasPrefix(line, "     ") {
			cur.desc += " " + strings.TrimSpace(line)
		} else {
			cur = nil
		}
	}
	if len(flags) == 0 {
		return "", fmt.Errorf("--help lists no flags")
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(header), "\n") {
		b.WriteString("# " + l + "\n")
	}
	for _, n := range slices.Sorted(maps.Keys(flags)) {
		e := flags[n]
		fmt.Fprintf(&b, "flag %s %s", n, e.typ)
		if e.deprecated || strings.Contains(e.desc, "DEPRECATED:") {
			b.WriteString(" deprecated")
		}
		b.WriteString("\n")
	}
	for _, l := range lists {
		e, ok := flags[l.Flag]
		if !ok {
			return "", fmt.Errorf("--help has no --%s", l.Flag)
		}
		_, rest, ok := strings.Cut(e.desc, l.After)
		if !ok {
			return "", fmt.Errorf("--help: no %q in the description of --%s", l.After, l.Flag)
		}
		if l.Before != "" {
			rest, _, _ = strings.Cut(rest, l.Before)
		}
		n := 0
		for _, v := range strings.Split(rest, ",") {
			if v = strings.TrimSpace(v); v != "" {
				fmt.Fprintf(&b, "%s %s\n", l.Kind, v)
				n++
			}
		}
		if n == 0 {
			return "", fmt.Errorf("--help: no %s in the description of --%s", l.Kind, l.Flag)
		}
	}
	return b.String(), nil
}

// Binary finds an e2e-built upstream binary (test/e2e's cache: $RENDER_STATIC_E2E_CACHE or
// ~/go/cache/render-static-e2e, <key>/bin/<name>) whose --version says version, or "".
func Binary(name, version string) string {
	dir := os.Getenv("RENDER_STATIC_E2E_CACHE")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, "go", "cache", "render-static-e2e")
	}
	found, _ := filepath.Glob(filepath.Join(dir, "*", "bin", name))
	for _, b := range found {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, b, "--version").CombinedOutput()
		cancel()
		if err == nil && strings.Contains(string(out), version) {
			return b
		}
	}
	return ""
}

// Help is the --help of bin (its standard output).
func Help(bin string) (string, error) {
	out, err := exec.Command(bin, "--help").Output()
	if err != nil {
		return "", fmt.Errorf("%s --help: %v", path.Base(bin), err)
	}
	return string(out), nil
}

// ParsesFlags runs bin with args and --help last: the binary parses every flag (an unknown flag or a malformed
// value fails) and exits 0 after printing its help.
func ParsesFlags(bin string, args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append(append([]string(nil), args...), "--help")...).CombinedOutput()
	if err != nil {
		s := string(out)
		if len(s) > 2000 {
			s = s[:2000] + "…"
		}
		return fmt.Errorf("%s does not parse the arguments: %v\n%s", filepath.Base(bin), err, s)
	}
	return nil
}

// CheckScratchDir: dir is a writable emptyDir mount of the container.
func CheckScratchDir(t testing.TB, pod *corev1.Pod, c *corev1.Container, dir string) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil && !m.ReadOnly {
				return
			}
		}
	}
	t.Errorf("%s is not a writable emptyDir mount of %s", dir, c.Name)
}

// CheckVolumes: the pod mounts from the node exactly the revision and the cert directory, read-only, at the
// OpenShift pod's mount points; both hold files of the render.
func CheckVolumes(t testing.TB, r *Render, pod *corev1.Pod, c *corev1.Container, component string) {
	t.Helper()
	want := map[string]string{
		"/etc/kubernetes/static-pod-resources/" + component + "-pod-1": operator.ResourcesInPod,
		"/etc/kubernetes/static-pod-resources/" + component + "-certs": operator.CertsInPod,
	}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		at, ok := want[v.HostPath.Path]
		if !ok || v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectory {
			t.Errorf("hostPath volume %s %+v: want only %v, of type Directory", v.Name, v.HostPath, want)
			continue
		}
		delete(want, v.HostPath.Path)
		mounted := false
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name {
				mounted = m.MountPath == at && m.ReadOnly && m.SubPath == ""
			}
		}
		if !mounted {
			t.Errorf("volume %s (%s) is not mounted read-only at %s", v.Name, v.HostPath.Path, at)
		}
		n := 0
		for p := range r.Files() {
			if strings.HasPrefix(p, v.HostPath.Path+"/") {
				n++
			}
		}
		if n == 0 {
			t.Errorf("the render lays down nothing in %s", v.HostPath.Path)
		}
	}
	if len(want) > 0 {
		t.Errorf("no hostPath volume for %v", want)
	}
}

// CheckProbes: startup, liveness and readiness probes GET /healthz over HTTPS on the secure port of the node IP
// (the bind address covers it); the pod is a host-network, node-critical pod.
func CheckProbes(t testing.TB, pod *corev1.Pod, c *corev1.Container, nodeIP string, port int) {
	t.Helper()
	CheckHTTPProbes(t, c, Probes{Scheme: corev1.URISchemeHTTPS, Host: nodeIP, Port: port, Startup: "/healthz", Liveness: "/healthz", Readiness: "/healthz"})
	if len(c.Ports) != 1 || int(c.Ports[0].ContainerPort) != port {
		t.Errorf("ports %+v, want %d", c.Ports, port)
	}
	if !pod.Spec.HostNetwork || pod.Spec.PriorityClassName != "system-node-critical" {
		t.Errorf("hostNetwork %v priorityClassName %q", pod.Spec.HostNetwork, pod.Spec.PriorityClassName)
	}
}

// Probes is what a container's probes must GET: one scheme, host and port, and each probe's path.
type Probes struct {
	Scheme                       corev1.URIScheme
	Host                         string
	Port                         int
	Startup, Liveness, Readiness string
}

// CheckHTTPProbes: the container has startup, liveness and readiness probes, each an HTTP GET of want.
func CheckHTTPProbes(t testing.TB, c *corev1.Container, want Probes) {
	t.Helper()
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		path  string
	}{{"startup", c.StartupProbe, want.Startup}, {"liveness", c.LivenessProbe, want.Liveness}, {"readiness", c.ReadinessProbe, want.Readiness}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("no %s probe", p.what)
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path || g.Port.IntValue() != want.Port || g.Scheme != want.Scheme || g.Host != want.Host {
			t.Errorf("%s probe %s://%s:%s%s, want %s://%s:%d%s", p.what, g.Scheme, g.Host, g.Port.String(), g.Path, want.Scheme, want.Host, want.Port, p.path)
		}
	}
}

// HostPathMounts maps the mount points of the pod's first container to the node directories of the hostPath
// volumes mounted there.
func HostPathMounts(p *corev1.Pod) map[string]string {
	hostPaths := map[string]string{}
	for _, v := range p.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	out := map[string]string{}
	for _, m := range p.Spec.Containers[0].VolumeMounts {
		if hp, ok := hostPaths[m.Name]; ok {
			out[m.MountPath] = hp
		}
	}
	return out
}

// RequireBinary is Binary for a test of the committed flag list: without the binary it ends the test
// (testtools.Missing), or fails it when the list is to be rewritten (update).
func RequireBinary(t testing.TB, name, version string, update bool) string {
	t.Helper()
	bin := Binary(name, version)
	if bin == "" {
		if update {
			t.Fatalf("-update-upstream-flags needs the e2e-built %s (make e2e-build builds it)", name)
		}
		testtools.Missing(t, "no e2e-built %s (%s) in the e2e cache: make e2e-build builds it", name, version)
	}
	return bin
}

// CheckFlagList: the committed flag list file is got, the list made from bin's --help; with update, got is
// written to file first. regenerate is the command that rewrites it.
func CheckFlagList(t testing.TB, file, bin, got string, update bool, regenerate string) {
	t.Helper()
	if update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(file); err != nil || string(want) != got {
		t.Errorf("%s is not %s's --help (%s): %v", file, bin, regenerate, err)
	}
}

// SamePathFlags checks that every argument whose value is an absolute path has the same value in the OpenShift
// pod (osFlags: name → value) and returns their names, sorted.
func SamePathFlags(t testing.TB, args []Arg, osFlags map[string]string) []string {
	t.Helper()
	var same []string
	for _, a := range args {
		if !strings.HasPrefix(a.Value, "/") {
			continue
		}
		if v, ok := osFlags[a.Name]; !ok || v != a.Value {
			t.Errorf("--%s=%s; the OpenShift pod: %q", a.Name, a.Value, v)
			continue
		}
		same = append(same, a.Name)
	}
	sort.Strings(same)
	return same
}

// CompareLayout checks that the upstream render lays down the same files naming component, with the same modes, as
// the OpenShift flavor's render, and returns how many files it compared.
func CompareLayout(t testing.TB, up *Render, openshift *rendertest.Render, component string) int {
	t.Helper()
	n := 0
	for _, f := range openshift.Tree.Files() {
		if !strings.Contains(f.Path, component) {
			continue
		}
		n++
		u, ok := up.File(f.Path)
		switch {
		case !ok:
			t.Errorf("the upstream flavor lacks %s", f.Path)
		case u.Mode != f.Mode:
			t.Errorf("%s: mode %o, the OpenShift flavor's %o", f.Path, u.Mode, f.Mode)
		}
	}
	for p := range up.Files() {
		if _, ok := openshift.File(p); strings.Contains(p, component) && !ok {
			t.Errorf("only the upstream flavor lays down %s", p)
		}
	}
	return n
}

// One returns the value of a flag that must be given exactly once.
func One(t testing.TB, args []Arg, name string) string {
	t.Helper()
	v := Values(args, name)
	if len(v) != 1 {
		t.Errorf("--%s given %d times, want once", name, len(v))
		return ""
	}
	return v[0]
}

// CheckCommandLine: the container's command and arguments contain none of bad.
func CheckCommandLine(t testing.TB, c *corev1.Container, bad []string) {
	t.Helper()
	whole := strings.Join(append(append([]string(nil), c.Command...), c.Args...), " ")
	for _, b := range bad {
		if strings.Contains(whole, b) {
			t.Errorf("command line contains %q: %s", b, whole)
		}
	}
}

// CheckFlags: every argument is a flag of the list (binary: the binary and version it is of), not deprecated unless
// allowed, given once, and a bool flag's value is a bool.
func CheckFlags(t testing.TB, args []Arg, list *FlagList, binary string, allowedDeprecated map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, a := range args {
		typ, ok := list.Flags[a.Name]
		switch {
		case !ok:
			t.Errorf("--%s is not a %s flag", a.Name, binary)
		case list.Deprecated[a.Name] && !allowedDeprecated[a.Name]:
			t.Errorf("--%s is deprecated in %s", a.Name, binary)
		case typ == "bool" && a.Value != "true" && a.Value != "false":
			t.Errorf("--%s=%s: a bool flag", a.Name, a.Value)
		case seen[a.Name]:
			t.Errorf("--%s given more than once", a.Name)
		}
		seen[a.Name] = true
	}
}

// CheckFileFlags: every file flag (fileFlags) names a non-empty file of the render, through the container's
// mounts; no other flag but --cert-dir names an absolute path.
func CheckFileFlags(t testing.TB, r *Render, pod *corev1.Pod, c *corev1.Container, args []Arg, fileFlags map[string]bool) {
	t.Helper()
	pathRE := regexp.MustCompile(`(?:^|,)/[a-z]`)
	for _, a := range args {
		switch {
		case fileFlags[a.Name]:
			if _, err := r.ContainerFile(pod, c.Name, a.Value); err != nil {
				t.Errorf("--%s: %v", a.Name, err)
			}
		case a.Name == "cert-dir":
		case pathRE.MatchString(a.Value):
			t.Errorf("--%s=%s names a path but is not a known file flag", a.Name, a.Value)
		}
	}
}
