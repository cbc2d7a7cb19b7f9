package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	MaybeRunContainer() // the runner's container processes are this binary, re-executed
	os.Exit(m.Run())
}

// required: RENDER_STATIC_REQUIRE_TOOLS=1 (make test) or RENDER_STATIC_E2E=1 turn a missing tool into a failure.
func required() bool {
	return os.Getenv("RENDER_STATIC_REQUIRE_TOOLS") == "1" || os.Getenv("RENDER_STATIC_E2E") == "1"
}

// explicit: RENDER_STATIC_E2E=1 asks for the end-to-end run itself; then not being root fails too.
func explicit() bool { return os.Getenv("RENDER_STATIC_E2E") == "1" }

// preconditions skips (or fails, see required) unless everything the podless boot needs is here: not -short,
// root, Ignition, ignition-validate, ip.
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
	for _, tool := range []string{"ignition-validate", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" not on PATH")
		}
	}
	if _, err := GoTool(); err != nil {
		missing = append(missing, err.Error())
	}
	if len(missing) > 0 {
		msg := "e2e: missing tools (run hack/install-test-deps.sh): " + strings.Join(missing, "; ")
		if required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
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
	Kind       string   // "selftest" or "upstream"
	Case       string   // ipv4, ipv6, ...
	Ign        string   // aio.ign
	Work       string   // scratch (root/, logs/, run/)
	BinDir     string   // upstream binaries
	NodeName   string   //
	NodeAddrs  []string // CIDR notation: node IP / machine network prefix
	Hostnames  []string // names that resolve to the node IPs (api, api-int, node name)
	Kubeconfig string   // admin kubeconfig (on the host filesystem)
	Domain     string   // <cluster>.<baseDomain>
	Partial    bool     // boot only the pods the runner can run; check only what they provide
	// Break, "<container>=<argument>", appends an argument to that container of the laid-out static pods
	// (after Ignition, before the boot): the negative test breaks a flag and expects that component's log.
	Break string
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

// runInner writes the spec and re-executes this test binary as TestInner inside new network and mount
// namespaces, relaying its output.
func runInner(t *testing.T, spec *innerSpec, timeout time.Duration) {
	t.Helper()
	data, _ := json.MarshalIndent(spec, "", "  ")
	path := filepath.Join(spec.Work, "inner.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RunInner(context.Background(), "TestInner", path, timeout, func(f string, a ...any) { t.Logf("│ "+f, a...) }); err != nil {
		t.Fatalf("%v (container logs: %s)", err, filepath.Join(spec.Work, "logs"))
	}
}

// TestInner is the part of the e2e tests that runs inside the private namespaces; it is started only by
// runInner (TestRunnerSelfTest, TestUpstreamE2E).
func TestInner(t *testing.T) {
	p := os.Getenv(EnvInner)
	if p == "" {
		t.Skip("runs only inside the namespaces TestRunnerSelfTest/TestUpstreamE2E create")
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var spec innerSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	switch spec.Kind {
	case "selftest":
		innerSelfTest(t, &spec)
	case "upstream":
		innerUpstream(t, &spec)
	default:
		t.Fatalf("unknown kind %q", spec.Kind)
	}
}

// timings collects phase durations and prints them as one line the README's table is made of.
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

// bootInner is the common inner sequence: namespace network and /etc/hosts, Ignition, runner start. The
// returned runner is stopped (in reverse order, by PID) and its logs printed on failure, at cleanup.
func bootInner(t *testing.T, spec *innerSpec, tm *timings) *Runner {
	t.Helper()
	ctx := context.Background()
	addrs := spec.addrs(t)
	tm.step("netns", func() {
		if err := ConfigureNetns(ctx, addrs); err != nil {
			t.Fatal(err)
		}
		if err := PrivateEtc(spec.Work, HostsFile(addrs, spec.Hostnames...)); err != nil {
			t.Fatal(err)
		}
	})
	root := filepath.Join(spec.Work, "root")
	tm.step("ignition", func() {
		res, err := Ignite(ctx, spec.Ign, root, filepath.Join(spec.Work, "ignition"))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ignition laid %s into %s in %.1fs", spec.Ign, root, res.Duration.Seconds())
	})
	if spec.Break != "" {
		breakContainerArg(t, root, spec.Break)
	}
	r := &Runner{
		Root: root, BinDir: spec.BinDir, WorkDir: filepath.Join(spec.Work, "run"), LogDir: filepath.Join(spec.Work, "logs"),
		NodeName: spec.NodeName, NodeIPs: spec.ips(), Hosts: HostsFile(addrs, spec.Hostnames...), Logf: t.Logf,
	}
	t.Cleanup(func() {
		st := time.Now()
		forced := r.Stop()
		tm.add("stop", time.Since(st))
		if len(forced) > 0 {
			t.Errorf("containers needed SIGKILL: %v", forced)
		}
		if t.Failed() {
			var b strings.Builder
			r.DumpLogs(&b, 120)
			t.Logf("container logs (last 120 lines each; full logs in %s):\n%s", r.LogDir, b.String())
		}
		t.Log(tm.String())
	})
	tm.step("boot", func() {
		if err := r.LoadPods(); err != nil {
			t.Fatal(err)
		}
		if spec.Partial {
			dropped := r.DropUnrunnable()
			t.Logf("partial boot (RENDER_STATIC_E2E_PARTIAL=1): not starting %v", dropped)
		}
		var names []string
		for _, p := range r.Pods {
			names = append(names, p.File)
		}
		t.Logf("static pods: %v", names)
		sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if err := r.Start(sctx); err != nil {
			t.Fatal(err)
		}
	})
	return r
}

// breakContainerArg appends an argument ("<container>=<argument>") to that container in the node's static pod
// manifests.
func breakContainerArg(t *testing.T, root, breakSpec string) {
	t.Helper()
	container, arg, ok := strings.Cut(breakSpec, "=")
	if !ok {
		t.Fatalf("Break %q is not <container>=<argument>", breakSpec)
	}
	files, _ := filepath.Glob(filepath.Join(root, "etc", "kubernetes", "manifests", "*"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var pod corev1.Pod
		if err := json.Unmarshal(raw, &pod); err != nil {
			continue
		}
		for i := range pod.Spec.Containers {
			if c := &pod.Spec.Containers[i]; c.Name == container {
				c.Args = append(c.Args, arg)
				out, err := json.Marshal(&pod)
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

func sortedKeys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
