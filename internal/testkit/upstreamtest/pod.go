package upstreamtest

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/rendertest"
)

// The tests every flag-only upstream pod of a component whose operator renders a config.yaml (kube-controller-
// manager, kube-scheduler) must pass. A component's upstream_test.go is one Pod table and the tests only it has;
// its TestUpstream calls Run and its TestUpstreamFlagsParseWithTheBinary TestFlagsParseWithTheBinary.

// KubernetesVersion is the upstream Kubernetes release of the upstream flavor's images and of the binaries test/e2e
// builds (k8s.io/kubernetes).
const KubernetesVersion = "v1.34.3"

// Update is -update-upstream-flags: the flag-list tests rewrite their package's committed list from the binary.
var Update = flag.Bool("update-upstream-flags", false, "rewrite the package's testdata/upstream/*-flags.txt from the e2e-built binary's --help")

// KubeAPIServerCerts is kube-apiserver's cert directory on the node: the CAs and serving certificates the
// components' kubeconfigs are checked against.
const KubeAPIServerCerts = "/etc/kubernetes/static-pod-resources/kube-apiserver-certs"

// Pod is what one component's upstream pod must be.
type Pod struct {
	// Component names the binary, the container, the pod's component label, the upstream image
	// (registry.k8s.io/<Component>:<KubernetesVersion>) and the node directories (<Component>-pod-1, -certs).
	Component string
	// PodName and Namespace are the static pod's; PodFile its manifest under /etc/kubernetes/manifests.
	PodName, Namespace, PodFile string
	// ImageName is the name Inputs.Images resolves to the upstream image.
	ImageName string

	// MinFlags and MinValues: the committed flag list is complete (at least this many flags, and values of each
	// kind).
	MinFlags  int
	MinValues map[string]int
	// AllowedDeprecated are the deprecated flags the pod may pass (each must be deprecated in the list).
	AllowedDeprecated map[string]bool
	// FileFlags are the flags whose values name files the binary reads, beyond the kubeconfigs and the serving
	// certificate; Once the flags given exactly once beyond those Want names.
	FileFlags map[string]bool
	Once      []string
	// Forbidden are words no part of the command line may contain, beyond OpenShift's, shells, config.yaml and
	// feature gates.
	Forbidden []string
	// Port is the secure port of the probes (the kubeconfig's user is system:<Component>).
	Port int
	// ProxyEnv is the environment the pod must have (the cluster-wide proxy); nil: no environment at all.
	ProxyEnv func(r *Render) ([]string, error)
	// Want are the values of flags given once, for a case, beyond the bind address, the secure port, kubeadm's
	// lease, -v=2 and the minimum TLS version.
	Want func(r *Render, c Case) map[string]string
	// Check is what only this component's pod must pass.
	Check func(t *testing.T, p *PodUnderTest)

	// OpenShiftFlags are the OpenShift flavor's flags (exec line and config.yaml): name → value.
	OpenShiftFlags func(t *testing.T, openshift *rendertest.Render, pod *corev1.Pod) map[string]string
	// SamePaths are the path flags the upstream pod shares with the OpenShift pod, sorted, space-separated.
	SamePaths string
	// MinLayoutFiles: how many of the component's files the layout comparison must cover; SameFiles are revision
	// files whose contents must be the same in both flavors.
	MinLayoutFiles int
	SameFiles      []string
	// OpenShiftContainers are the OpenShift pod's containers (init containers first); OpenShiftFlag a flag its
	// first container still passes.
	OpenShiftContainers, OpenShiftFlag string

	// FlagListHeader is the committed flag list's comment (verbatim); ValueLists the value lists of its --help;
	// Rejected are argument lists the binary must refuse.
	FlagListHeader string
	ValueLists     []ValueList
	Rejected       [][]string
}

// image is the upstream image; binary names the binary and its version in messages.
func (s *Pod) image() string  { return "registry.k8s.io/" + s.Component + ":" + KubernetesVersion }
func (s *Pod) binary() string { return s.Component + " " + KubernetesVersion }

// Run runs the tests of the pod (Pod), the files it shares with the OpenShift pod (SameFilesAsOpenShift), the
// layout (LayoutIsTheOpenShiftFlavors) and the OpenShift flavor (OpenShiftFlavorUnchanged) as subtests.
func (s *Pod) Run(t *testing.T) {
	t.Run("Pod", s.TestPod)
	t.Run("SameFilesAsOpenShift", s.TestSameFilesAsOpenShift)
	t.Run("LayoutIsTheOpenShiftFlavors", s.TestLayoutIsTheOpenShiftFlavors)
	t.Run("OpenShiftFlavorUnchanged", s.TestOpenShiftFlavorUnchanged)
}

// FlagListFile is the committed flag list, relative to the component's package directory.
func (s *Pod) FlagListFile() string { return "testdata/upstream/" + s.Component + "-flags.txt" }

// regenerate is the command that rewrites the flag list (the test runs in the package's directory).
func (s *Pod) regenerate(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return "go test ./pkg/" + filepath.Base(wd) + " -run TestUpstreamFlagsParseWithTheBinary -args -update-upstream-flags"
}

// Render renders a case; a render that fails fails the test.
func (s *Pod) Render(t *testing.T, c Case) *Render {
	t.Helper()
	r, err := Get(c)
	if err != nil {
		t.Fatalf("upstream render of %s: %v", c.InstallConfig, err)
	}
	return r
}

// FlagList loads the committed flag list and checks it is complete.
func (s *Pod) FlagList(t *testing.T) *FlagList {
	t.Helper()
	l, err := LoadFlagList(s.FlagListFile())
	if err != nil {
		t.Fatal(err)
	}
	short := len(l.Flags) < s.MinFlags
	for kind, n := range s.MinValues {
		short = short || len(l.Values[kind]) < n
	}
	for f := range s.AllowedDeprecated {
		short = short || !l.Deprecated[f]
	}
	if short {
		counts := map[string]int{}
		for kind := range l.Values {
			counts[kind] = len(l.Values[kind])
		}
		t.Fatalf("%s is incomplete: %d flags (want %d), values %v (want %v), deprecated %v (want %v)", s.FlagListFile(),
			len(l.Flags), s.MinFlags, counts, s.MinValues, l.Deprecated, s.AllowedDeprecated)
	}
	return l
}

// PodUnderTest is one case's upstream pod, for Check.
type PodUnderTest struct {
	R    *Render
	Case Case
	Pod  *corev1.Pod
	C    *corev1.Container
	Args []Arg
	List *FlagList
}

// One is the value of a flag given exactly once.
func (p *PodUnderTest) One(t *testing.T, name string) string {
	t.Helper()
	return One(t, p.Args, name)
}

// File is the file a file flag names, through the container's mounts.
func (p *PodUnderTest) File(t *testing.T, flag string) []byte {
	t.Helper()
	b, err := p.R.ContainerFile(p.Pod, p.C.Name, p.One(t, flag))
	if err != nil {
		t.Fatalf("--%s: %v", flag, err)
	}
	return b
}

// TestPod checks the upstream pod of every case: revision 1; one flag-only container of the upstream image, no
// environment but the proxy's; flags of the upstream binary only, none deprecated but the allowed ones, no
// OpenShift flag or feature gate; every file it names laid down by the render, mapped through the pod's mounts,
// and only the revision and the cert directory mounted from the node; a kubeconfig (also for authentication and
// authorization) that reaches api-int as the component's user; the flags Want names; the TLS profile; HTTPS probes
// on the secure port; and the component's own Check.
func (s *Pod) TestPod(t *testing.T) {
	list := s.FlagList(t)
	for _, tc := range Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := s.Render(t, tc)
			if rev := r.Settled.Revisions[s.Component]; rev != 1 {
				t.Errorf("revision %d, want 1", rev)
			}
			pod, err := r.Pod(s.PodFile)
			if err != nil {
				t.Fatal(err)
			}
			if pod.Name != s.PodName || pod.Namespace != s.Namespace || pod.Labels["revision"] != "1" || pod.Labels["component"] != s.Component {
				t.Errorf("pod %s/%s labels %v", pod.Namespace, pod.Name, pod.Labels)
			}
			if len(pod.Spec.InitContainers) != 0 || len(pod.Spec.Containers) != 1 {
				t.Fatalf("pod has %d init containers and %d containers, want 0 and 1", len(pod.Spec.InitContainers), len(pod.Spec.Containers))
			}
			c := &pod.Spec.Containers[0]
			if c.Name != s.Component || c.Image != s.image() || c.Image != r.Inputs.Images.Image(s.ImageName) || strings.Join(c.Command, " ") != s.Component {
				t.Errorf("container %s image %s command %v, want %s %s [%s]", c.Name, c.Image, c.Command, s.Component, s.image(), s.Component)
			}
			s.checkEnv(t, r, tc, c)

			args, err := ParseArgs(c.Args)
			if err != nil {
				t.Fatal(err)
			}
			p := &PodUnderTest{R: r, Case: tc, Pod: pod, C: c, Args: args, List: list}
			CheckCommandLine(t, c, append([]string{"openshift", "/bin/sh", "/bin/bash", "hyperkube", "config.yaml", "feature-gates"}, s.Forbidden...))
			CheckFlags(t, args, list, s.binary(), s.AllowedDeprecated)
			fileFlags := map[string]bool{"kubeconfig": true, "authentication-kubeconfig": true, "authorization-kubeconfig": true,
				"tls-cert-file": true, "tls-private-key-file": true}
			maps.Copy(fileFlags, s.FileFlags)
			CheckFileFlags(t, r, pod, c, args, fileFlags)
			for _, name := range s.Once {
				p.One(t, name)
			}
			CheckScratchDir(t, pod, c, p.One(t, "cert-dir"))
			CheckVolumes(t, r, pod, c, s.Component)

			// All three client connections: api-int as the component's user.
			domain := r.Inputs.InstallConfig.ClusterDomain()
			kubeconfig := p.One(t, "kubeconfig")
			if a, z := p.One(t, "authentication-kubeconfig"), p.One(t, "authorization-kubeconfig"); a != kubeconfig || z != kubeconfig {
				t.Errorf("--authentication-kubeconfig=%s --authorization-kubeconfig=%s, want --kubeconfig's %s", a, z, kubeconfig)
			}
			if err := r.CheckKubeconfig(pod, c.Name, Kubeconfig{
				Path: kubeconfig, Server: "https://api-int." + domain + ":6443", User: "system:" + s.Component,
				ServerName: "api-int." + domain, ServingCertFile: KubeAPIServerCerts + "/secrets/internal-loadbalancer-serving-certkey/tls.crt",
				ClientCAFile: KubeAPIServerCerts + "/configmaps/client-ca/ca-bundle.crt",
			}); err != nil {
				t.Error(err)
			}

			want := map[string]string{
				"bind-address": tc.BindAddress, "secure-port": strconv.Itoa(s.Port), "permit-address-sharing": "true",
				"leader-elect": "true", "leader-elect-resource-namespace": "kube-system", "leader-elect-resource-name": s.Component,
				"v": "2", "tls-min-version": "VersionTLS12",
			}
			if s.Want != nil {
				maps.Copy(want, s.Want(r, tc))
			}
			for name, v := range want {
				if got := p.One(t, name); got != v {
					t.Errorf("--%s=%s, want %s", name, got, v)
				}
			}
			suites := strings.Split(p.One(t, "tls-cipher-suites"), ",")
			for _, cs := range suites {
				if !list.Values["cipher-suite"][cs] {
					t.Errorf("cipher suite %s is not one %s prefers (insecure: %v)", cs, s.Component, list.Values["insecure-cipher-suite"][cs])
				}
			}
			if len(suites) < 4 || !list.Values["tls-version"][p.One(t, "tls-min-version")] {
				t.Errorf("TLS profile: suites %v, min version %s", suites, p.One(t, "tls-min-version"))
			}
			CheckProbes(t, pod, c, r.Inputs.NodeIP().String(), s.Port)
			if s.Check != nil {
				s.Check(t, p)
			}
		})
	}
}

// checkEnv: flags only; the cluster-wide proxy (for the proxy case only) where the component takes it.
func (s *Pod) checkEnv(t *testing.T, r *Render, tc Case, c *corev1.Container) {
	t.Helper()
	if s.ProxyEnv == nil {
		if len(c.Env) > 0 {
			t.Errorf("env %v: the upstream pod takes flags only", c.Env)
		}
		return
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
		if !strings.HasSuffix(e.Name, "_PROXY") || e.ValueFrom != nil {
			t.Errorf("env %s: the upstream pod takes flags only (proxy variables aside)", e.Name)
		}
	}
	want, err := s.ProxyEnv(r)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(env, want) || (tc.Name == "proxy") != (len(want) > 0) {
		t.Errorf("proxy env %v, want %v", env, want)
	}
}

// TestSameFilesAsOpenShift: every path flag the upstream pod shares with the OpenShift pod names the same file, and
// the two pods mount the same node directories at the same places: the upstream flavor only changes which binary
// reads the revision.
func (s *Pod) TestSameFilesAsOpenShift(t *testing.T) {
	up := s.Render(t, Cases[0])
	openshift := rendertest.SNOFor(t)
	osPod, err := openshift.Pod(s.PodFile)
	if err != nil {
		t.Fatal(err)
	}
	upPod, err := up.Pod(s.PodFile)
	if err != nil {
		t.Fatal(err)
	}
	args, err := ParseArgs(upPod.Spec.Containers[0].Args)
	if err != nil {
		t.Fatal(err)
	}
	if same := SamePathFlags(t, args, s.OpenShiftFlags(t, openshift, osPod)); strings.Join(same, " ") != s.SamePaths {
		t.Errorf("path flags shared with the OpenShift pod: %v, want %s", same, s.SamePaths)
	}
	if o, u := HostPathMounts(osPod), HostPathMounts(upPod); fmt.Sprint(o) != fmt.Sprint(u) {
		t.Errorf("node directories mounted: OpenShift pod %v, upstream pod %v", o, u)
	}
}

// TestLayoutIsTheOpenShiftFlavors: the upstream flavor lays down the same files of the component, with the same
// modes, as the OpenShift flavor (same loops, certificates, revision and cert directory), and the same SameFiles;
// only the pod differs.
func (s *Pod) TestLayoutIsTheOpenShiftFlavors(t *testing.T) {
	up := s.Render(t, Cases[0])
	openshift := rendertest.SNOFor(t)
	if n := CompareLayout(t, up, openshift, s.Component); n < s.MinLayoutFiles {
		t.Errorf("only %d %s files compared", n, s.Component)
	}
	for _, p := range s.SameFiles {
		o, _ := openshift.File(p)
		u, ok := up.File(p)
		if !ok || len(o.Contents) == 0 || string(u.Contents) != string(o.Contents) {
			t.Errorf("%s differs between the flavors", p)
		}
	}
}

// TestFlagsParseWithTheBinary: with the e2e-built binary, the committed flag list is its --help, and its own flag
// set parses every case's arguments; it refuses the Rejected ones (so the check can fail).
func (s *Pod) TestFlagsParseWithTheBinary(t *testing.T) {
	bin := RequireBinary(t, s.Component, "Kubernetes "+KubernetesVersion, *Update)
	help, err := Help(bin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := FlagListFromHelp(help, s.FlagListHeader, s.ValueLists)
	if err != nil {
		t.Fatal(err)
	}
	CheckFlagList(t, s.FlagListFile(), bin, got, *Update, s.regenerate(t))
	for _, tc := range Cases {
		t.Run(tc.Name, func(t *testing.T) {
			pod, err := s.Render(t, tc).Pod(s.PodFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := ParsesFlags(bin, pod.Spec.Containers[0].Args); err != nil {
				t.Error(err)
			}
		})
	}
	for _, bad := range s.Rejected {
		if err := ParsesFlags(bin, bad); err == nil {
			t.Errorf("%s accepted %v", s.Component, bad)
		}
	}
}

// TestOpenShiftFlavorUnchanged: the OpenShift flavor still renders the operator's pod (the conformance tests
// compare it with the reference field by field): its containers, none of the upstream image, and its flag.
func (s *Pod) TestOpenShiftFlavorUnchanged(t *testing.T) {
	pod, err := rendertest.SNOFor(t).Pod(s.PodFile)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		names = append(names, c.Name)
		if strings.Contains(c.Image, "registry.k8s.io") {
			t.Errorf("container %s runs the upstream image %s in the OpenShift flavor", c.Name, c.Image)
		}
	}
	if strings.Join(names, " ") != s.OpenShiftContainers {
		t.Errorf("containers %v, want %s", names, s.OpenShiftContainers)
	}
	if !strings.Contains(strings.Join(pod.Spec.Containers[0].Args, " "), s.OpenShiftFlag) {
		t.Errorf("the OpenShift pod lost %s", s.OpenShiftFlag)
	}
}

// ArgsCase is an input an UpstreamArgs function must refuse: Mutate spoils a fresh copy of the rendered inputs;
// the error must contain Says ("": any error).
type ArgsCase[I any] struct {
	Name, Says string
	Mutate     func(*I)
}

// CheckArgs: the arguments of the rendered inputs are the pod's, and every case is refused.
func CheckArgs[I any](t *testing.T, r *Render, podFile string, inputs func() I, upstreamArgs func(I) ([]string, error), refused []ArgsCase[I]) {
	t.Helper()
	args, err := upstreamArgs(inputs())
	if err != nil {
		t.Fatalf("the rendered inputs: %v", err)
	}
	pod, err := r.Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(args, pod.Spec.Containers[0].Args) {
		t.Errorf("UpstreamArgs of the rendered inputs %v, the pod's %v", args, pod.Spec.Containers[0].Args)
	}
	for _, c := range refused {
		in := inputs()
		c.Mutate(&in)
		if got, err := upstreamArgs(in); err == nil || !strings.Contains(err.Error(), c.Says) {
			t.Errorf("%s: %v, error %v; want an error saying %q", c.Name, got, err, c.Says)
		}
	}
}

// ObservedConfig returns the component's observed config of the render, a fresh copy each call.
func (r *Render) ObservedConfig(t *testing.T, component string) func() map[string]any {
	t.Helper()
	spec, _, _, err := r.Settled.Component(component).Operator().GetStaticPodOperatorState()
	if err != nil {
		t.Fatal(err)
	}
	return func() map[string]any {
		var observed map[string]any
		if err := yaml.Unmarshal(spec.ObservedConfig.Raw, &observed); err != nil {
			t.Fatal(err)
		}
		return observed
	}
}

// WithoutMinTLSVersion takes servingInfo.minTLSVersion (the TLS profile's) out of an observed config: every
// UpstreamArgs refuses that.
func WithoutMinTLSVersion(observed map[string]any) {
	delete(observed["servingInfo"].(map[string]any), "minTLSVersion")
}
