package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// explicit: RENDER_STATIC_E2E=1 asks for the end-to-end run itself; then not being root fails too.
func explicit() bool { return os.Getenv("RENDER_STATIC_E2E") == "1" }

// preconditions skips (or fails: testtools.Missing, explicit) unless everything the node needs is here: not -short, root,
// Ignition, ignition-validate, ip, containerd and runc, the CNI plugins, nft and iptables (hack/install-test-deps.sh
// installs them).
func preconditions(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped in -short mode (it builds upstream binaries and boots a control plane)")
	}
	if os.Getenv(EnvInner) != "" {
		return
	}
	if os.Geteuid() != 0 {
		msg := "e2e: needs root (Ignition chowns and chroots, the test creates network and mount namespaces)"
		if explicit() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var missing []string
	if _, err := FindIgnition(); err != nil {
		missing = append(missing, err.Error())
	}
	for _, tool := range []string{"ignition-validate", "ip", "containerd", "containerd-shim-runc-v2", "ctr", "runc", "nmcli", "xz",
		"nft", "xtables-nft-multi", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" not on PATH")
		}
	}
	if _, err := os.Stat(filepath.Join(DebianCNIDir, "bridge")); err != nil {
		missing = append(missing, "the CNI reference plugins ("+DebianCNIDir+", containernetworking-plugins)")
	}
	if _, err := GoTool(); err != nil {
		missing = append(missing, err.Error())
	}
	if len(missing) > 0 {
		// testtools' rule (RENDER_STATIC_REQUIRE_TOOLS=1 fails), and RENDER_STATIC_E2E=1 asks for the run itself.
		msg := "e2e: missing tools (run hack/install-test-deps.sh): " + strings.Join(missing, "; ")
		if explicit() {
			t.Fatal(msg)
		}
		testtools.Missing(t, "%s", msg)
	}
}

var buildOnce struct {
	sync.Mutex
	res *BuildResult
}

// binaries builds (or finds cached) the upstream binaries. The first test to call it pays for the build.
func binaries(t *testing.T) *BuildResult {
	t.Helper()
	buildOnce.Lock()
	defer buildOnce.Unlock()
	if buildOnce.res != nil {
		return &BuildResult{BinDir: buildOnce.res.BinDir, Key: buildOnce.res.Key, Cached: true}
	}
	if d := os.Getenv("RENDER_STATIC_E2E_BINDIR"); d != "" { // development: binaries from elsewhere
		t.Logf("upstream binaries: RENDER_STATIC_E2E_BINDIR=%s (not built)", d)
		buildOnce.res = &BuildResult{BinDir: d, Cached: true}
		return buildOnce.res
	}
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Minute)
	defer cancel()
	res, err := EnsureBinaries(ctx, BuildOptions{ToolsDir: "tools", Logf: t.Logf})
	if err != nil {
		t.Fatalf("building the upstream binaries: %v", err)
	}
	if res.Cached {
		t.Logf("upstream binaries: cached in %s", res.BinDir)
	} else {
		t.Logf("upstream binaries: built in %s into %s", res.Duration.Round(time.Second), res.BinDir)
	}
	buildOnce.res = res
	return res
}

// innerSpec is what the outer test hands the re-executed inner test.
type innerSpec struct {
	Phase      string   // boot (first boot), reboot (the same root again), lab (an interactive shell)
	Case       string   // ipv4, ipv6, ...
	Root       string   // the node's disk: Ignition laid aio.ign here
	Work       string   // scratch: one directory per phase (overlays, logs), state.json between phases
	BinDir     string   // upstream binaries
	Images     string   // the image archive containerd imports ("": none, the mirror case)
	NodeName   string   //
	NodeAddrs  []string // CIDR notation: node IP / machine network prefix
	Kubeconfig string   // admin kubeconfig (on the host filesystem, outside the node's disk)
	Domain     string   // <cluster>.<baseDomain>
	// OpenShiftPods holds the openshift flavor's rendered static pods of the same install-config: each must pass
	// the live kube-apiserver's server-side dry-run validation as a pod.
	OpenShiftPods string
	CLI           string // render-static, for the phases that run it (renew, a worker)
	// InterruptAiokube has the first boot stop aiokube half-way (the reboot must finish it); otherwise it runs to
	// its end and the first boot prints when it was done.
	InterruptAiokube bool
	// Fleet, when set, has the first boot run the fleet's Indexed Job (examples/fleet/job.yaml) on the node.
	Fleet *fleetJobSpec
	// The lab (lab_test.go): LabCommand is run with no input instead of an interactive shell (LAB_CMD);
	// LabTerminal says the inner's standard input is the controlling terminal the shell takes.
	LabCommand  string
	LabTerminal bool
	// Conformance has the reboot run Kubernetes' own [sig-network] DNS and Services conformance specs against the
	// node after the workload checks (conformance_test.go: runNetworkConformance).
	Conformance bool `json:"conformance,omitempty"`
	// Mirror, in the mirror-only case (issue 38, mirror.go), says nothing is imported: the first boot pulls every
	// image by digest from the harness's registry, which then stops; the reboot runs from what the node has.
	Mirror *mirrorSpec `json:"mirror,omitempty"`
	// Worker, for a control-plane node's reboot, is the worker that joins it on day 2 (worker_test.go).
	Worker *workerSpec `json:"worker,omitempty"`
	// A worker's own boot (Phase workerPhase): its overlays' lower layer (the control-plane node's view of the host's
	// directories, Node.Lower), its kubelet's cgroupRoot, the file whose appearance stops it, and the file it
	// writes its kubelet's start time to.
	Lower      string `json:"lower,omitempty"`
	CgroupRoot string `json:"cgroupRoot,omitempty"`
	StopFile   string `json:"stopFile,omitempty"`
	StartFile  string `json:"startFile,omitempty"`
}

func (s *innerSpec) addrs(t *testing.T) []NodeAddress {
	var out []NodeAddress
	for _, a := range s.NodeAddrs {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			t.Fatalf("node address %q: %v", a, err)
		}
		out = append(out, NodeAddress{IP: p.Addr(), Prefix: p.Bits()})
	}
	return out
}

func (s *innerSpec) ips() []string {
	var out []string
	for _, a := range s.NodeAddrs {
		ip, _, _ := strings.Cut(a, "/")
		out = append(out, ip)
	}
	return out
}

// runNode re-executes this test binary as TestInner inside new network, mount and PID namespaces (one boot of the
// node; every line it prints goes to logf), with the machine saved and put back around it (onHost).
func runNode(t *testing.T, spec *innerSpec, timeout time.Duration, logf func(string, ...any)) error {
	t.Helper()
	return onHost(t, spec, func(specPath string) error {
		return RunInner(context.Background(), "TestInner", specPath, timeout, logf)
	})
}

// onHost writes the spec, saves what a kubelet changes on the machine (kernel.go), runs boot (one boot of the node:
// the inner test started on the spec's path), and puts the machine back afterwards, whatever happened inside.
func onHost(t *testing.T, spec *innerSpec, boot func(specPath string) error) error {
	t.Helper()
	data, _ := json.MarshalIndent(spec, "", "  ")
	path := filepath.Join(spec.Work, "inner-"+spec.Phase+".json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	hs, err := SaveHostState(t.Logf)
	if err != nil {
		return fmt.Errorf("saving the machine's kernel settings: %w", err)
	}
	defer func() {
		// A cgroup that cannot be removed is logged loudly and recorded for the next run (kernel.go); it does not
		// fail the boot. A kernel setting that cannot be written back does.
		changed, _, err := hs.Restore(t.Logf)
		if len(changed) > 0 {
			t.Logf("restored after the %s boot: %s", spec.Phase, strings.Join(changed, "; "))
		}
		if err != nil {
			t.Errorf("restoring the machine after the %s boot: %v", spec.Phase, err)
		}
	}()
	return boot(path)
}

// runInner is runNode with the inner test's output in this test's log; a failure inside fails this test.
func runInner(t *testing.T, spec *innerSpec, timeout time.Duration) {
	t.Helper()
	if err := runNode(t, spec, timeout, func(f string, a ...any) { t.Logf("│ "+f, a...) }); err != nil {
		t.Fatalf("%v (logs: %s)", err, filepath.Join(spec.Work, spec.Phase, "logs"))
	}
}

// TestInner is the part of the e2e tests that runs inside the node's private namespaces (it is their PID 1); it
// is started only by runInner.
func TestInner(t *testing.T) {
	p := os.Getenv(EnvInner)
	if p == "" {
		t.Skip("runs only inside the namespaces TestUpstreamE2E creates")
	}
	var spec innerSpec
	if err := readYAML(p, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Mirror != nil {
		workloadImage = spec.Mirror.Agnhost
	}
	switch spec.Phase {
	case "boot":
		innerFirstBoot(t, &spec)
	case "reboot":
		innerReboot(t, &spec)
	case "broken":
		innerBroken(t, &spec)
	case "lab":
		innerLab(t, &spec)
	case "renew":
		innerRenew(t, &spec)
	case workerPhase:
		innerWorker(t, &spec)
	case "poweroff":
		innerPowerOff(t, &spec)
	case "recover":
		innerRecover(t, &spec)
	default:
		t.Fatalf("unknown phase %q", spec.Phase)
	}
}

// timings collects phase durations and prints them as one line docs/e2e.md's table is made of.
type timings struct {
	name   string
	phases []string
	d      map[string]time.Duration
	t0     time.Time
}

func newTimings(name string) *timings {
	return &timings{name: name, d: map[string]time.Duration{}, t0: time.Now()}
}

func (tm *timings) add(phase string, d time.Duration) {
	if _, ok := tm.d[phase]; !ok {
		tm.phases = append(tm.phases, phase)
	}
	tm.d[phase] += d
}

// step times f as phase.
func (tm *timings) step(phase string, f func()) {
	t := time.Now()
	defer func() { tm.add(phase, time.Since(t)) }()
	f()
}

func (tm *timings) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "TIMING %s", tm.name)
	for _, p := range tm.phases {
		fmt.Fprintf(&b, " %s=%.1fs", p, tm.d[p].Seconds())
	}
	fmt.Fprintf(&b, " total=%.1fs", time.Since(tm.t0).Seconds())
	return b.String()
}

// breakContainerArg appends an argument ("<container>=<argument>") to that container in the node's static pod
// manifests (on the node's disk, before the boot).
func breakContainerArg(t *testing.T, root, breakSpec string) {
	t.Helper()
	container, arg, ok := strings.Cut(breakSpec, "=")
	if !ok {
		t.Fatalf("Break %q is not <container>=<argument>", breakSpec)
	}
	pods, err := StaticPods(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedKeys(pods) {
		pod, f := pods[name], filepath.Join(root, "etc", "kubernetes", "manifests", name)
		for i := range pod.Spec.Containers {
			if c := &pod.Spec.Containers[i]; c.Name == container {
				c.Args = append(c.Args, arg)
				out, err := json.Marshal(pod)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, out, 0o600); err != nil {
					t.Fatal(err)
				}
				t.Logf("broke %s in %s: appended %s", container, f, arg)
				return
			}
		}
	}
	t.Fatalf("no container %s in the static pods", container)
}

// TestBuildTools builds (or finds in the cache) the upstream binaries and checks their versions. It is what
// hack/e2e-build.sh runs to do the cold build ahead of (and outside the timeout of) the other tests.
func TestBuildTools(t *testing.T) {
	preconditions(t)
	res := binaries(t)
	for _, n := range BinaryNames() {
		st, err := os.Stat(filepath.Join(res.BinDir, n))
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		t.Logf("%-24s %4d MiB", n, st.Size()>>20)
	}
	if b, err := os.ReadFile(filepath.Join(res.BinDir, "BUILD.json")); err == nil {
		t.Logf("BUILD.json: %s", b)
	}
}
