package node

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/pkg/export"
)

// testCRD is a CRD manifest added to the export in the apply tests, so the CRD round is exercised.
const testCRD = "01_cluster_customresourcedefinition.apiextensions.k8s.io_widgets.example.com.yaml"

// unitEnv reads the Environment= assignments of a unit, unescaped as systemd does.
func unitEnv(t testing.TB, contents string) map[string]string {
	t.Helper()
	env := map[string]string{}
	unesc := strings.NewReplacer(`\\`, `\`, `\"`, `"`, "%%", "%")
	sc := bufio.NewScanner(strings.NewReader(contents))
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, `Environment="`) {
			continue
		}
		kv := unesc.Replace(strings.TrimSuffix(strings.TrimPrefix(l, `Environment="`), `"`))
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// stubBin is the directory of the stub oc and systemctl.
func stubBin(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs(repo("testdata/node/bin"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stubAPI is the stub oc and systemctl with an API server storage of their own, and how to run the node's scripts
// against them.
type stubAPI struct {
	api, log string // the stub's storage and its record of calls
	bin      string // the stubs
	// hostPath replaces the host's PATH after bin ("": the host's own).
	hostPath string
}

func newStubAPI(t testing.TB) stubAPI {
	t.Helper()
	dir := t.TempDir()
	return stubAPI{api: filepath.Join(dir, "api"), log: filepath.Join(dir, "calls.log"), bin: stubBin(t)}
}

// runScript runs a script with bash against the stub API, with the environment env and extra ("K=V"), and
// returns its output and error.
func (s *stubAPI) runScript(script string, env map[string]string, extra ...string) (string, error) {
	cmd := exec.Command("bash", script)
	host := s.hostPath
	if host == "" {
		host = os.Getenv("PATH")
	}
	cmd.Env = []string{"PATH=" + s.bin + ":" + host, "STUB_LOG=" + s.log, "STUB_API=" + s.api}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// calls returns the stub's recorded calls so far, and empties the record.
func (s *stubAPI) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(s.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	_ = os.Remove(s.log)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// applyEnv is a laid-down node root, with everything the first boot finds there, and how to run aiokube on it.
type applyEnv struct {
	stubAPI
	root      string
	tree      *export.Tree
	manifests []string // file names, sorted
	env       map[string]string
	tokens    []offlineToken // the legacy token secrets the render minted, with their files on the node
}

// newApplyEnv lays down the node's files, the exported manifests of the fixture (plus a CRD), an admin kubeconfig
// and the revision directories holding the render's legacy service-account tokens under a temporary root, as
// aio.ign would on the node.
func newApplyEnv(t *testing.T) *applyEnv {
	t.Helper()
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	addLegacyTokens(t, f)
	f.converge(t)
	ms := f.exported(t)
	o := testOptions
	o.Manifests = ms
	tr, err := f.n.Tree(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	a := newStubRun(t, filepath.Join(t.TempDir(), "root"), unitOf(t, tr, AIOKubeUnit).Contents)
	a.tree = tr
	if err := export.WriteRootfs(a.root, tr); err != nil {
		t.Fatal(err)
	}
	write := func(p string, mode fs.FileMode, data []byte) {
		if err := export.WriteFile(filepath.Join(a.root, p), mode, data); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		mode := fs.FileMode(0644)
		if m.Secret() {
			mode = 0600
		}
		write(path.Join(o.ManifestsDir, m.File), mode, m.YAML)
		a.manifests = append(a.manifests, m.File)
	}
	write(path.Join(o.ManifestsDir, testCRD), 0644, []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n"))
	a.manifests = append(a.manifests, testCRD)
	slices.Sort(a.manifests)
	write(o.AdminKubeconfig, 0600, []byte("apiVersion: v1\nkind: Config\n"))
	a.tokens = layDownLegacyTokens(t, f, a.root)
	return a
}

// newStubRun is how to run aiokube on the node root root as aiokube.service (unit: its contents) would, with short
// waits, the stub oc and systemctl, and a stub API of its own.
func newStubRun(t *testing.T, root, unit string) *applyEnv {
	t.Helper()
	a := &applyEnv{stubAPI: newStubAPI(t), root: root}
	a.env = unitEnv(t, unit)
	a.env["AIOKUBE_ROOT"] = root
	a.env["AIOKUBE_RETRY_SECONDS"] = "0"
	a.env["AIOKUBE_POLL_SECONDS"] = "0"
	a.env["AIOKUBE_ATTEMPTS"] = "3"
	a.env["AIOKUBE_API_WAIT_SECONDS"] = "5"
	a.env["AIOKUBE_TOKEN_WAIT_SECONDS"] = "5"
	return a
}

// run runs aiokube.sh as aiokube.service would, with extra environment, and returns its output and error.
func (a *applyEnv) run(t *testing.T, extra ...string) (string, error) {
	t.Helper()
	return a.runScript(filepath.Join(a.root, AIOKubeScript), a.env, extra...)
}

// creates returns the manifest file names of the create calls (several per call: one -f each), in order.
func creates(calls []string) []string {
	var out []string
	for _, c := range calls {
		for _, b := range createBatches([]string{c}) {
			out = append(out, b...)
		}
	}
	return out
}

// createBatches returns, for each create call, the manifest file names it was given.
func createBatches(calls []string) [][]string {
	var out [][]string
	for _, c := range calls {
		f := strings.Fields(c)
		if !slices.Contains(f, "create") {
			continue
		}
		var files []string
		for i, w := range f {
			if w == "-f" && i+1 < len(f) {
				files = append(files, path.Base(f[i+1]))
			}
		}
		out = append(out, files)
	}
	return out
}

// reboot is a node that stopped after aiokube recorded the apply and before its clean-up was done: the render's
// files (the unit, the script, aiokube's state directory) come back as aio.ign laid them down, with only the apply
// recorded in the state.
func (a *applyEnv) reboot(t *testing.T) {
	t.Helper()
	if err := export.WriteRootfs(a.root, a.tree); err != nil {
		t.Fatal(err)
	}
	if err := export.WriteFile(filepath.Join(a.root, StateDir, "applied"), 0644, nil); err != nil {
		t.Fatal(err)
	}
}

func (a *applyEnv) exists(p string) bool {
	_, err := os.Lstat(filepath.Join(a.root, p))
	return err == nil
}

// TestApplyOrderAndCleanup: aiokube creates the namespaces while it waits for the API (before /readyz says ok),
// then CRDs (and waits until they are Established), then everything else, each manifest once, in lexical order,
// several per client process (AIOKUBE_BATCH); restores the status of custom resources right after creating
// them; then removes exactly what only the first boot needed and disables itself.
func TestApplyOrderAndCleanup(t *testing.T) {
	a := newApplyEnv(t)
	const batch = 7
	out, err := a.run(t, "STUB_READYZ_FAILS=2", "AIOKUBE_API_WAIT_SECONDS=60", "AIOKUBE_BATCH=7")
	if err != nil {
		t.Fatalf("aiokube: %v\n%s", err, out)
	}
	calls := a.calls(t)
	got := creates(calls)
	if !slices.Equal(got, a.manifests) {
		t.Fatalf("created\n  %v\nwant every manifest once, in lexical order:\n  %v", got, a.manifests)
	}
	// One process per batch: as many processes as the rounds need at AIOKUBE_BATCH files each, none larger.
	wantProcs := 0
	for _, prefix := range []string{"00_", "01_", ""} {
		n := 0
		for _, m := range a.manifests {
			if prefix == "" && !strings.HasPrefix(m, "00_") && !strings.HasPrefix(m, "01_") || prefix != "" && strings.HasPrefix(m, prefix) {
				n++
			}
		}
		wantProcs += (n + batch - 1) / batch
	}
	batches := createBatches(calls)
	for _, b := range batches {
		if len(b) > batch {
			t.Errorf("a create of %d files, more than AIOKUBE_BATCH=%d", len(b), batch)
		}
	}
	if len(batches) != wantProcs {
		t.Errorf("%d create processes for %d manifests, want %d (batches of %d per round)", len(batches), len(a.manifests), wantProcs, batch)
	}
	// The namespaces come first, before the API said it is ready; nothing else does.
	if len(calls) == 0 || !strings.Contains(calls[0], " create ") || !strings.Contains(calls[0], "/00_") || strings.Contains(calls[0], "/01_") {
		t.Errorf("the first call is %q, want the namespaces' create", calls[0])
	}
	readyAt := slices.IndexFunc(calls, func(c string) bool { return strings.Contains(c, "--raw=/readyz") })
	for i, c := range calls[:max(readyAt, 0)] {
		if strings.Contains(c, " create ") && (strings.Contains(c, "/01_") || strings.Contains(c, "/02_") || strings.Contains(c, "/05_")) {
			t.Errorf("call %d creates more than namespaces before the API was asked whether it is ready: %s", i, c)
		}
	}
	var ns, crd, rest int
	for _, m := range a.manifests {
		switch {
		case strings.HasPrefix(m, "00_"):
			ns++
		case strings.HasPrefix(m, "01_"):
			crd++
		default:
			rest++
		}
	}
	if ns == 0 || rest == 0 {
		t.Fatalf("the export has %d namespaces and %d other manifests", ns, rest)
	}
	// The CRD wait after the CRDs and before the rest; status right after its create; the rest only once the
	// API said it is ready (the stub's third /readyz).
	idx := func(pred func(string) bool) int { return slices.IndexFunc(calls, pred) }
	wait := idx(func(c string) bool { return strings.Contains(c, " wait ") && strings.Contains(c, testCRD) })
	lastCRD := idx(func(c string) bool { return strings.Contains(c, " create ") && strings.Contains(c, testCRD) })
	firstRest := idx(func(c string) bool { return strings.Contains(c, " create ") && strings.Contains(c, "/05_") })
	if !(lastCRD < wait && wait < firstRest) {
		t.Errorf("CRD create at %d, Established wait at %d, first other create at %d", lastCRD, wait, firstRest)
	}
	infra := "05_cluster_infrastructure.config.openshift.io_cluster.yaml"
	ci := idx(func(c string) bool {
		return strings.Contains(c, " create ") && strings.Contains(c, "/"+infra+" ") || strings.HasSuffix(c, "/"+infra)
	})
	pi := idx(func(c string) bool {
		return strings.Contains(c, "patch --subresource=status") && strings.Contains(c, infra+".json")
	})
	if ci < 0 || pi < ci || slices.ContainsFunc(calls[ci+1:max(pi, ci+1)], func(c string) bool { return strings.Contains(c, " create ") }) {
		t.Errorf("the Infrastructure's status is not restored right after the create of its batch (create at %d, patch at %d)", ci, pi)
	}
	lastReadyz := -1
	for i, c := range calls {
		if strings.Contains(c, "--raw=/readyz") {
			lastReadyz = i
		}
	}
	if lastReadyz > firstRest || strings.Count(strings.Join(calls, "\n"), "--raw=/readyz") != 3 {
		t.Errorf("the other manifests were created (call %d) before the API was ready (the third /readyz, call %d)", firstRest, lastReadyz)
	}
	if !strings.Contains(out, infra+": created") {
		t.Errorf("the journal does not record the progress:\n%s", out)
	}

	// Clean-up: exactly the bootstrap-only paths are gone, and aiokube disabled itself.
	for _, p := range testOptions.BootstrapOnly() {
		if a.exists(p) {
			t.Errorf("%s is left after the first boot", p)
		}
	}
	if a.exists("/opt/openshift") {
		t.Error("/opt/openshift is left (empty) after the first boot")
	}
	if !slices.Contains(calls, "systemctl disable "+AIOKubeUnit) {
		t.Errorf("aiokube did not disable itself: %v", calls)
	}
	for _, f := range a.tree.Files() {
		if bootstrapOnly(f.Path) {
			continue
		}
		if !a.exists(f.Path) {
			t.Errorf("%s was removed, but the node needs it", f.Path)
		}
	}
	preset, err := os.ReadFile(filepath.Join(a.root, "/etc/systemd/system-preset/20-render-static.preset"))
	if err != nil || strings.Contains(string(preset), AIOKubeUnit) || !strings.Contains(string(preset), "enable "+KubeletUnit) {
		t.Errorf("the preset after the first boot: %q %v", preset, err)
	}
	for _, u := range []string{KubeletUnit, ApproverService, ApproverTimer} {
		if !a.exists(path.Join("/etc/systemd/system", u)) {
			t.Errorf("%s was removed", u)
		}
	}
}

func bootstrapOnly(p string) bool {
	for _, b := range testOptions.BootstrapOnly() {
		if p == b || strings.HasPrefix(p, b+"/") {
			return true
		}
	}
	return false
}

// TestApplyResumesAfterReboot: a run that loses the API half-way fails and keeps its progress and inputs; the
// next run creates only what is left (an object created before the crash but not recorded counts as created),
// then cleans up. Clean-up itself resumes: with the apply recorded, a rerun only finishes the clean-up.
func TestApplyResumesAfterReboot(t *testing.T) {
	a := newApplyEnv(t)
	const limit = 5
	out, err := a.run(t, "STUB_CREATE_LIMIT=5")
	if err == nil {
		t.Fatalf("aiokube succeeded although the API went away:\n%s", out)
	}
	first := creates(a.calls(t))
	done, _ := os.ReadDir(filepath.Join(a.root, StateDir, "done"))
	if len(done) != limit {
		t.Errorf("%d manifests recorded as done, want %d", len(done), limit)
	}
	for _, p := range []string{testOptions.ManifestsDir, testOptions.AdminKubeconfig, AIOKubeScript, "/etc/systemd/system/" + AIOKubeUnit} {
		if !a.exists(p) {
			t.Errorf("a failed run removed %s", p)
		}
	}
	// The API server also holds the next object, whose creation the crash did not record.
	unrecorded := a.manifests[limit]
	if err := os.WriteFile(filepath.Join(a.api, "created", unrecorded), nil, 0644); err != nil {
		t.Fatal(err)
	}

	out, err = a.run(t)
	if err != nil {
		t.Fatalf("the second run: %v\n%s", err, out)
	}
	second := creates(a.calls(t))
	if !slices.Equal(second, a.manifests[limit:]) {
		t.Errorf("the second run created %v, want only what was not recorded: %v", second, a.manifests[limit:])
	}
	if len(first) < limit || !slices.Equal(first[:limit], a.manifests[:limit]) {
		t.Errorf("the first run created %v", first)
	}
	if a.exists(testOptions.ManifestsDir) || a.exists(AIOKubeDir) {
		t.Error("the second run did not clean up")
	}

	// A crash during clean-up: the apply is recorded, inputs half removed. A rerun creates nothing.
	b := newApplyEnv(t)
	if out, err := b.run(t); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b.calls(t)
	b.reboot(t)
	out, err = b.run(t)
	if err != nil {
		t.Fatalf("rerun after the apply: %v\n%s", err, out)
	}
	calls := b.calls(t)
	if c := creates(calls); len(c) != 0 {
		t.Errorf("a rerun after the apply created %v", c)
	}
	for _, p := range testOptions.BootstrapOnly() {
		if b.exists(p) {
			t.Errorf("%s is left after the resumed clean-up", p)
		}
	}
}

// TestApplyBounded: a kind the cluster does not serve is retried a bounded number of times, everything else is
// created, and the run fails without cleaning up; an API that never answers fails the run after the wait.
func TestApplyBounded(t *testing.T) {
	a := newApplyEnv(t)
	unserved := "05_cluster_infrastructure.config.openshift.io_cluster.yaml"
	out, err := a.run(t, "STUB_FAIL_FILES="+unserved)
	if err == nil {
		t.Fatalf("aiokube succeeded with an unserved kind:\n%s", out)
	}
	got := creates(a.calls(t))
	n := 0
	for _, c := range got {
		if c == unserved {
			n++
		}
	}
	if n != 3 {
		t.Errorf("the unserved manifest was tried %d times, want AIOKUBE_ATTEMPTS=3", n)
	}
	done, _ := os.ReadDir(filepath.Join(a.root, StateDir, "done"))
	if len(done) != len(a.manifests)-1 {
		t.Errorf("%d manifests created, want all but the unserved one (%d)", len(done), len(a.manifests)-1)
	}
	// Its batch's other manifests were created by the first pass, and not tried again.
	for _, m := range a.manifests {
		if c := strings.Count(" "+strings.Join(got, " ")+" ", " "+m+" "); m != unserved && c != 1 {
			t.Errorf("%s was given to create %d times, want once", m, c)
		}
	}
	if !strings.Contains(out, "giving up on "+unserved) || !a.exists(testOptions.ManifestsDir) {
		t.Errorf("the failure is not reported, or the inputs were removed:\n%s", out)
	}

	// An API that never answers (every call refused): the namespaces are tried while waiting, nothing is
	// recorded, and the run fails after the wait.
	b := newApplyEnv(t)
	out, err = b.run(t, "STUB_CREATE_LIMIT=0", "AIOKUBE_API_WAIT_SECONDS=0")
	if err == nil || !strings.Contains(out, "not ready") {
		t.Errorf("an API that never answers: err %v\n%s", err, out)
	}
	if done, _ := os.ReadDir(filepath.Join(b.root, StateDir, "done")); len(done) != 0 {
		t.Errorf("%d manifests recorded as created without an API", len(done))
	}
	if c := creates(b.calls(t)); slices.ContainsFunc(c, func(m string) bool { return !strings.HasPrefix(m, "00_") }) {
		t.Errorf("tried more than the namespaces without an API: %v", c)
	}

	// A readiness that never comes: the namespaces are created meanwhile (the API accepts them), nothing else.
	c := newApplyEnv(t)
	out, err = c.run(t, "STUB_READYZ_FAILS=1000", "AIOKUBE_API_WAIT_SECONDS=0")
	if err == nil || !strings.Contains(out, "not ready") {
		t.Errorf("an API never ready: err %v\n%s", err, out)
	}
	for _, m := range creates(c.calls(t)) {
		if !strings.HasPrefix(m, "00_") {
			t.Errorf("created %s before the API was ready", m)
		}
	}
}

// TestApplyBatchAccounting: a manifest counts as created only when the client's output says so for it. When a
// batch's output does not account for every file (here one the client neither created nor reported), its
// unconfirmed files are created one process each: every manifest ends up created and recorded exactly once.
func TestApplyBatchAccounting(t *testing.T) {
	a := newApplyEnv(t)
	var silent string
	for _, m := range a.manifests {
		if strings.HasPrefix(m, "05_") {
			silent = m
			break
		}
	}
	out, err := a.run(t, "STUB_SILENT_FILES="+silent, "AIOKUBE_BATCH=4")
	if err != nil {
		t.Fatalf("aiokube: %v\n%s", err, out)
	}
	var alone, inBatch int
	for _, b := range createBatches(a.calls(t)) {
		if slices.Contains(b, silent) {
			if len(b) == 1 {
				alone++
			} else {
				inBatch++
			}
		}
	}
	if inBatch != 1 || alone != 1 {
		t.Errorf("%s: in %d batches and %d creates of its own, want one each", silent, inBatch, alone)
	}
	if !strings.Contains(out, "does not account for 4 of 4 manifests: creating them one by one") {
		t.Errorf("the fallback is not logged:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(a.api, "created", silent)); err != nil {
		t.Errorf("%s was never created: %v", silent, err)
	}
	if inAPI, _ := os.ReadDir(filepath.Join(a.api, "created")); len(inAPI) != len(a.manifests) {
		t.Errorf("the API holds %d of %d manifests", len(inAPI), len(a.manifests))
	}
	for _, m := range a.manifests {
		if n := strings.Count(out, "aiokube: "+m+": created\n"); n != 1 {
			t.Errorf("%s logged as created %d times", m, n)
		}
	}
}

// hostPathWithout is a PATH of one directory holding the host's commands (the first of each name on PATH) but
// names: a host without them, whatever this one has installed.
func hostPathWithout(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if slices.Contains(names, e.Name()) {
				continue
			}
			if _, err := os.Lstat(filepath.Join(dir, e.Name())); err == nil {
				continue
			}
			if err := os.Symlink(filepath.Join(d, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestApplyWithKubectl: without oc on the node (the host's oc, if any, is left off PATH), aiokube uses kubectl.
func TestApplyWithKubectl(t *testing.T) {
	a := newApplyEnv(t)
	dir := t.TempDir()
	for _, l := range []struct{ name, target string }{{"kubectl", "oc"}, {"systemctl", "systemctl"}} {
		if err := os.Symlink(filepath.Join(a.bin, l.target), filepath.Join(dir, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	a.bin, a.hostPath = dir, hostPathWithout(t, "oc")
	out, err := a.run(t)
	if err != nil || !strings.Contains(out, "client: kubectl") {
		t.Fatalf("%v\n%s", err, out)
	}
}
