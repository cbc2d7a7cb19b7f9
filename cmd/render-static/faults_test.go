package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/render-static/render-static/internal/faultpoint"
	"github.com/render-static/render-static/internal/testkit/testtools"
)

// The render directory against faults (issue 39, item 6): each test reproduces one defect a reliability trial found.

// bigInstallConfig is the bundled example with comments full of '<' (which JSON escapes as \u003c, six bytes each)
// making it size bytes: under the 64 MiB input limit, while its copy in state/render.json is over it.
func bigInstallConfig(t *testing.T, size int) string {
	t.Helper()
	ic, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Grow(size + len(ic))
	b.Write(ic)
	line := "# " + strings.Repeat("<", 1021) + "\n"
	for b.Len() < size {
		b.WriteString(line)
	}
	p := filepath.Join(t.TempDir(), "install-config.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRefusesStateThatCannotBeRead: an install-config whose saved copy in state/render.json would be over the
// 64 MiB a later run reads is refused at render time (exit 1, --install-config named, nothing written): rendered,
// its cluster could never be re-rendered, renewed or given a worker.
func TestRefusesStateThatCannotBeRead(t *testing.T) {
	testtools.Long(t, "renders")
	ic := bigInstallConfig(t, 12<<20)
	dir := filepath.Join(t.TempDir(), "aio")
	code, stdout, stderr := runCLI("--install-config", ic, "--node-ip", exampleIP, "--dir", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "--install-config: ") || !strings.Contains(stderr, "state/render.json") || !strings.Contains(stderr, "64 MiB") {
		t.Errorf("stderr does not name --install-config and why (its saved copy over 64 MiB):\n%s", stderr)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("%s was written", dir)
	}
}

// TestCorruptUpdateRefused: an update/update.json that cannot be read is not archived as updates/unknown (where a
// second one would be merged over the first): renew and the worker command refuse, naming it and what to do, and
// leave the directory as it was.
func TestCorruptUpdateRefused(t *testing.T) {
	testtools.Long(t, "renders and renews")
	dir := filepath.Join(t.TempDir(), "aio")
	renderExample(t, dir)
	runOK(t, "renew", "--dir", dir, "--force")
	if err := os.WriteFile(filepath.Join(dir, "update", "update.json"), []byte("{not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	for _, args := range [][]string{
		{"renew", "--dir", dir, "--force"},
		{"worker", "--dir", dir, "--node-name", "worker-0", "--node-ip", "192.168.126.11"},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
		}
		for _, want := range []string{"--dir: ", filepath.Join(dir, "update", "update.json"), "cannot be read", "restore"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr has no %q:\n%s", args, want, stderr)
			}
		}
		if _, err := os.Lstat(filepath.Join(dir, "updates", "unknown")); err == nil {
			t.Fatalf("%v: the corrupt update was archived as updates/unknown", args)
		}
		assertSameTree(t, before, tree(t, dir))
	}
}

// assertSameTree fails the test unless two trees (tree) are the same.
func assertSameTree(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, v := range after {
		if before[p] != v {
			t.Errorf("%s: %q, was %q", p, v, before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s: gone", p)
		}
	}
}

// TestFewerWorkersRefused: a re-render whose workers file leaves out a worker of the saved cluster is refused,
// naming the worker and why (render-static has no way to remove a worker: the node's CSR approver would go on
// approving its certificates), and DIR is left as it was.
func TestFewerWorkersRefused(t *testing.T) {
	testtools.Long(t, "renders")
	inputs := t.TempDir()
	ic, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, contents string) string {
		p := filepath.Join(inputs, name)
		if err := os.WriteFile(p, []byte(contents), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	two := write("two.yaml", strings.Replace(string(ic), "replicas: 0", "replicas: 2", 1))
	one := write("one.yaml", strings.Replace(string(ic), "replicas: 0", "replicas: 1", 1))
	both := write("both.yaml", "- nodeName: worker-0\n  nodeIP: 192.168.126.11\n- nodeName: worker-1\n  nodeIP: 192.168.126.12\n")
	first := write("first.yaml", "- nodeName: worker-0\n  nodeIP: 192.168.126.11\n")
	dir := filepath.Join(t.TempDir(), "aio")
	runOK(t, "--install-config", two, "--node-ip", exampleIP, "--dir", dir, "--workers", both)
	before := tree(t, dir)
	code, stdout, stderr := runCLI("--install-config", one, "--dir", dir, "--workers", first)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, want := range []string{"--workers: ", "worker-1", "cannot remove a worker"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr has no %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "worker-0") {
		t.Errorf("stderr names worker-0, which is kept:\n%s", stderr)
	}
	assertSameTree(t, before, tree(t, dir))
}

// TestMissingSignerRefused: a state edited consistently (a signer's file deleted, SHA256SUMS written again to match)
// is refused by a re-render and renew, naming the signer, instead of a new signer made silently in its place.
func TestMissingSignerRefused(t *testing.T) {
	testtools.Long(t, "renders")
	dir := filepath.Join(t.TempDir(), "aio")
	renderExample(t, dir)
	root := filepath.Join(dir, "state")
	signer := "objects/core_secret_openshift-kube-apiserver-operator_aggregator-client-signer.yaml"
	if err := os.Remove(filepath.Join(root, signer)); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(root, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(sums), "\n") {
		if !strings.HasSuffix(line, "  "+signer+"\n") {
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "SHA256SUMS"), []byte(strings.Join(kept, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	for _, args := range [][]string{{"--dir", dir}, {"renew", "--dir", dir}} {
		code, stdout, stderr := runCLI(args...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
		}
		if !strings.Contains(stderr, signer+": missing") || !strings.Contains(stderr, "the signer of secret") {
			t.Errorf("%v: stderr does not name the missing signer:\n%s", args, stderr)
		}
		assertSameTree(t, before, tree(t, dir))
	}
}

// TestLongNodeNameRefused: a node name that is a valid DNS subdomain (253 characters) but too long for the files
// that take it (a file name is at most 255 bytes) is refused by validation, naming the field, for the control-plane
// node, a workers file's worker and the worker command, and nothing is written.
func TestLongNodeNameRefused(t *testing.T) {
	testtools.Long(t, "renders")
	long := strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 61) // 253 characters
	inputs := t.TempDir()
	oneWorker, workers := oneWorkerInputs(t, inputs, "- nodeName: "+long+"\n  nodeIP: 192.168.126.11\n")
	dir := filepath.Join(t.TempDir(), "aio")
	for _, tc := range []struct {
		args  []string
		field string
	}{
		{[]string{"--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir, "--node-name", long}, "--node-name: "},
		{[]string{"--install-config", oneWorker, "--node-ip", exampleIP, "--dir", dir, "--workers", workers}, "workers[0].nodeName: "},
	} {
		code, stdout, stderr := runCLI(tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.field) || !strings.Contains(stderr, "255 bytes") {
			t.Errorf("%s: exit %d, want 1 and a problem of %s saying the 255 bytes a file name takes\nstdout: %s\nstderr: %s", tc.field, code, tc.field, stdout, stderr)
		}
		if _, err := os.Lstat(dir); err == nil {
			t.Fatalf("%s: %s was written", tc.field, dir)
		}
	}
	renderExample(t, dir)
	before := tree(t, dir)
	code, stdout, stderr := runCLI("worker", "--dir", dir, "--node-name", long, "--node-ip", "192.168.126.11")
	if code != 1 || !strings.Contains(stderr, "--node-name: ") || !strings.Contains(stderr, "255 bytes") {
		t.Errorf("worker: exit %d, want 1 and a problem of --node-name\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	assertSameTree(t, before, tree(t, dir))
}

// TestKeyfileNameWithNewlineRefused: a keyfile whose name holds a newline (or any control character) is refused,
// named with the newline escaped, instead of accepted and splitting the summary's lines.
func TestKeyfileNameWithNewlineRefused(t *testing.T) {
	testtools.Long(t, "renders")
	inputs := t.TempDir()
	good := testtools.Keyfile(t, inputs, "eno1.nmconnection", "192.168.126.10/24")
	bad := filepath.Join(inputs, "eno1\nsplit.nmconnection")
	if err := os.Rename(good, bad); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "aio")
	code, stdout, stderr := runCLI("--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir, "--network-keyfile", bad)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "--network-keyfile: ") || !strings.Contains(stderr, `eno1\nsplit.nmconnection`) || strings.Contains(stderr, "eno1\nsplit") {
		t.Errorf("stderr does not name the keyfile with its newline escaped:\n%s", stderr)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("%s was written", dir)
	}
}

// TestKeyfileSymlinkRefused: a keyfile that is a symbolic link (to /etc/shadow, say) or not a regular file is
// refused as such, for the control-plane node, a workers file's worker and the worker command, before anything
// reads it, and nothing of what it points to is said.
func TestKeyfileSymlinkRefused(t *testing.T) {
	testtools.Long(t, "renders")
	testtools.Tool(t, "nmcli")
	inputs := t.TempDir()
	const secret = "s3cr3tShadowHash"
	shadow := filepath.Join(inputs, "shadow")
	if err := os.WriteFile(shadow, []byte("root:$6$"+secret+":19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(inputs, "eno1.nmconnection")
	if err := os.Symlink(shadow, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(inputs, "fifo.nmconnection")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	oneWorker, workers := oneWorkerInputs(t, inputs, "- nodeName: worker-0\n  nodeIP: 192.168.126.11\n  networkKeyfiles: [eno1.nmconnection]\n")
	dir := filepath.Join(t.TempDir(), "aio")
	check := func(what string, args []string, want ...string) {
		t.Helper()
		code, stdout, stderr := runCLI(args...)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1\nstdout: %s\nstderr: %s", what, code, stdout, stderr)
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr has no %q:\n%s", what, w, stderr)
			}
		}
		if strings.Contains(stderr, secret) {
			t.Errorf("%s: stderr says what the link points to:\n%s", what, stderr)
		}
	}
	render := []string{"--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir}
	check("render, a symlink", append(render, "--network-keyfile", link), "--network-keyfile: "+link+" is a symbolic link, not a regular file")
	check("render, a FIFO", append(render, "--network-keyfile", fifo), "--network-keyfile: "+fifo+" is a named pipe (FIFO), not a regular file")
	check("workers file", []string{"--install-config", oneWorker, "--node-ip", exampleIP, "--dir", dir, "--workers", workers},
		"workers[0].networkKeyfiles: "+link+" is a symbolic link, not a regular file")
	if _, err := os.Lstat(dir); err == nil {
		t.Fatalf("%s was written", dir)
	}
	renderExample(t, dir)
	before := tree(t, dir)
	check("worker", []string{"worker", "--dir", dir, "--node-name", "worker-0", "--node-ip", "192.168.126.11", "--network-keyfile", link},
		"--network-keyfile: "+link+" is a symbolic link, not a regular file")
	assertSameTree(t, before, tree(t, dir))
}

// TestSymlinkedDirOneWording: for a DIR that is a symbolic link to a render, the render, renew and the worker
// command all say what it is (one wording, from one function), not that it holds no render state.
func TestSymlinkedDirOneWording(t *testing.T) {
	testtools.Long(t, "renders")
	real := filepath.Join(t.TempDir(), "aio")
	renderExample(t, real)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	want := "--dir: " + link + " exists and is not a directory (a symbolic link); refusing to replace it"
	for _, args := range [][]string{
		{"--dir", link, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP},
		{"renew", "--dir", link},
		{"worker", "--dir", link, "--node-name", "worker-0", "--node-ip", "192.168.126.11"},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, "holds no render state") {
			t.Errorf("%v: exit %d, want 1 and %q\nstdout: %s\nstderr: %s", args, code, want, stdout, stderr)
		}
	}
}

// TestShippedBinaryIgnoresFaultHook: the command as `make build` builds it ignores RENDER_STATIC_FAULT (the fault
// tests' hook, internal/faultpoint, is only in test binaries): with kill:locked and no-exchange set it renders
// and exits 0, as without them.
func TestShippedBinaryIgnoresFaultHook(t *testing.T) {
	testtools.Long(t, "builds the command and renders")
	mk := testtools.Tool(t, "make")
	bin := filepath.Join(t.TempDir(), "render-static")
	root, err := filepath.Abs(repo(""))
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command(mk, "-s", "-C", root, "build", "BIN="+bin)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "aio")
	cmd := exec.Command(bin, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir)
	cmd.Env = append(os.Environ(), faultpoint.Env+"=kill:locked,no-exchange")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the shipped command with %s set: %v\n%s", faultpoint.Env, err, stderr.String())
	}
	if strings.Contains(stderr.String(), "exchange") {
		t.Errorf("the shipped command took the no-exchange fallback:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "aio.ign")); err != nil {
		t.Error(err)
	}
}

// oneWorkerInputs writes into dir the bundled example's install-config asking for one worker and a workers file of
// these contents; it returns their paths.
func oneWorkerInputs(t *testing.T, dir, workersYAML string) (installConfig, workers string) {
	t.Helper()
	ic, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	installConfig, workers = filepath.Join(dir, "install-config.yaml"), filepath.Join(dir, "workers.yaml")
	if err := os.WriteFile(installConfig, []byte(strings.Replace(string(ic), "replicas: 0", "replicas: 1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(workers, []byte(workersYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	return installConfig, workers
}
