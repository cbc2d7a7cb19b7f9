package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/faultpoint"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/outdir"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/state"
)

// The render directory is the only copy of a cluster's keys: these tests kill, race, interrupt and starve the
// command the way a user's machine can, and check that the directory is always the old one or the new one, that
// nothing it needs is lost, and that the next run carries on (docs/output.md, "What is guaranteed about DIR").

const exampleIP = "192.168.126.10"

// proc is the command started as a child (this test binary as the command, runMainEnv), not waited for.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	err            error
}

func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") && !strings.HasPrefix(kv, faultpoint.Env+"=") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(append(p.cmd.Env, runMainEnv+"=1"), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { // a test that failed early must not leave its child behind
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits (bounded) for the child and returns its exit code (-1 when a signal ended it) and the signal.
func (p *proc) wait(t *testing.T, bound time.Duration) (int, syscall.Signal) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(bound):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%v did not end within %s\nstdout: %s\nstderr: %s", p.cmd.Args[1:], bound, p.stdout.String(), p.stderr.String())
	}
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return -1, ws.Signal()
	}
	return p.cmd.ProcessState.ExitCode(), 0
}

// runOK runs the command and fails the test unless it exits 0.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := command(t, nil, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
	}
	return stdout
}

// tree is every path under dir with its mode and the sha256 of its contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		v := info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			v += " " + hex.EncodeToString(h[:8])
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails the test where got and want differ.
func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var diff []string
	for p, v := range want {
		if got[p] != v {
			diff = append(diff, p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diff = append(diff, p+" (added)")
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		t.Errorf("%s: %d paths differ: %v", what, len(diff), diff[:min(len(diff), 10)])
	}
}

// copyDir copies a render directory (cp -a keeps modes and hard links).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	_ = os.RemoveAll(dst)
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v: %s", src, dst, err, out)
	}
}

// leftovers are the entries beside dir other than dir and its lock file.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if n := e.Name(); n != filepath.Base(dir) && n != filepath.Base(outdir.LockPath(dir)) && strings.HasPrefix(n, "."+filepath.Base(dir)+".") {
			out = append(out, n)
		}
	}
	return out
}

func savedFlavor(t *testing.T, dir string) string {
	t.Helper()
	st, err := state.Load(dir)
	if err != nil {
		t.Fatalf("the state of %s: %v", dir, err)
	}
	var flavor string
	if _, err := st.Inputs.Get(pipeline.InFlavor, &flavor); err != nil {
		t.Fatal(err)
	}
	return flavor
}

// renderedWithBackup renders the example into a directory and returns it, a copy of it and its tree.
func renderedWithBackup(t *testing.T) (dir, backup string, old map[string]string) {
	t.Helper()
	dir, backup = filepath.Join(t.TempDir(), "aio"), filepath.Join(t.TempDir(), "backup")
	runOK(t, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir)
	copyDir(t, dir, backup)
	return dir, backup, tree(t, dir)
}

// TestKilledRenderLeavesOldOrNew kills a re-render (openshift to upstream: every pod rolls) at each point of its
// write, placed by faultpoint: before the exchange the directory must be exactly the old one, from it on the new
// one, whole; either way the next run removes what the killed one left, and a re-render of the same inputs gives
// a byte-identical aio.ign.
func TestKilledRenderLeavesOldOrNew(t *testing.T) {
	testtools.Long(t, "renders about twenty times")
	dir, backup, old := renderedWithBackup(t)
	for _, tc := range []struct {
		fault string
		new   bool // the new output is in place after the kill
	}{
		{"kill:locked", false},
		{"kill:file=1", false},
		{"kill:file=300", false},
		{"kill:filled", false},
		{"kill:synced", false},
		{"kill:exchanged", true},
		{"kill:removed", true},
		{"no-exchange,kill:aside", false}, // the fallback's window: no directory until the next run puts it back
		{"no-exchange,kill:removed", true},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			copyDir(t, backup, dir)
			p := start(t, []string{faultpoint.Env + "=" + tc.fault}, "--dir", dir, "--flavor", "upstream", "--reinstall")
			if code, sig := p.wait(t, 2*time.Minute); sig != syscall.SIGKILL {
				t.Fatalf("the run was not killed at %s: exit %d\n%s", tc.fault, code, p.stderr.String())
			}
			left := leftovers(t, dir)
			if strings.Contains(tc.fault, "aside") {
				if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) || len(left) == 0 {
					t.Fatalf("killed between the fallback's renames: %s exists (%v), leftovers %v", dir, err, left)
				}
			} else if tc.new {
				if f := savedFlavor(t, dir); f != "upstream" {
					t.Errorf("after a kill at %s the directory holds the %s render, want the new one", tc.fault, f)
				}
			} else {
				sameTree(t, "after a kill at "+tc.fault+" the directory", tree(t, dir), old)
			}
			want := map[bool]string{false: "openshift", true: "upstream"}[tc.new]
			code, stdout, stderr := command(t, nil, "--dir", dir)
			if code != 0 {
				t.Fatalf("the run after the kill: exit %d\n%s%s", code, stdout, stderr)
			}
			if len(left) > 0 && !strings.Contains(stderr, "left by earlier runs that were killed") && !strings.Contains(stderr, "put back the previous output") {
				t.Errorf("the next run did not say it repaired %v:\n%s", left, stderr)
			}
			if l := leftovers(t, dir); len(l) > 0 {
				t.Errorf("left after the next run: %v", l)
			}
			if f := savedFlavor(t, dir); f != want {
				t.Errorf("the next run continued the %s render, want %s", f, want)
			}
			before, err := os.ReadFile(filepath.Join(dir, "aio.ign"))
			if err != nil {
				t.Fatal(err)
			}
			runOK(t, "--dir", dir)
			if after, _ := os.ReadFile(filepath.Join(dir, "aio.ign")); !bytes.Equal(before, after) {
				t.Errorf("a re-render of the same inputs changed aio.ign")
			}
		})
	}
}

// TestKilledRenewLeavesOldOrNew is the same for renew --force: the old directory without an update, or the renewed
// one with it; the update is never lost by the runs that follow.
func TestKilledRenewLeavesOldOrNew(t *testing.T) {
	testtools.Long(t, "renders and renews about fifteen times")
	dir, backup, old := renderedWithBackup(t)
	for _, tc := range []struct {
		fault string
		new   bool
	}{
		{"kill:locked", false},
		{"kill:renewed", false},
		{"kill:file=200", false},
		{"kill:synced", false},
		{"kill:exchanged", true},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			copyDir(t, backup, dir)
			p := start(t, []string{faultpoint.Env + "=" + tc.fault}, "renew", "--dir", dir, "--force")
			if code, sig := p.wait(t, 2*time.Minute); sig != syscall.SIGKILL {
				t.Fatalf("renew was not killed at %s: exit %d\n%s", tc.fault, code, p.stderr.String())
			}
			_, err := os.Stat(filepath.Join(dir, "update", "update.json"))
			if tc.new {
				if err != nil {
					t.Errorf("killed at %s: the renewed directory has no update: %v", tc.fault, err)
				}
			} else {
				sameTree(t, "after a kill at "+tc.fault+" the directory", tree(t, dir), old)
			}
			stdout := runOK(t, "--dir", dir)
			if l := leftovers(t, dir); len(l) > 0 {
				t.Errorf("left after the next run: %v", l)
			}
			_, err = os.Stat(filepath.Join(dir, "update", "update.json"))
			if tc.new != (err == nil) || tc.new != strings.Contains(stdout, "node update:") {
				t.Errorf("after the re-render: update present %v, want %v; summary:\n%s", err == nil, tc.new, stdout)
			}
		})
	}
}

// TestUpdatesSurviveLaterRuns: renew makes update 1, a re-render keeps it (and says it is there), a second renew
// moves it to updates/<id> and names it as the previous one.
func TestUpdatesSurviveLaterRuns(t *testing.T) {
	testtools.Long(t, "renders and renews")
	dir := filepath.Join(t.TempDir(), "aio")
	runOK(t, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir)
	runOK(t, "renew", "--dir", dir, "--force")
	first := readUpdateID(t, dir)
	stdout := runOK(t, "--dir", dir)
	if got := readUpdateID(t, dir); got != first {
		t.Fatalf("after a re-render the update is %q, want %q", got, first)
	}
	if !strings.Contains(stdout, "node update:") || !strings.Contains(stdout, first) {
		t.Errorf("the summary does not say the update %s is pending:\n%s", first, stdout)
	}
	runOK(t, "renew", "--dir", dir, "--force")
	b, err := os.ReadFile(filepath.Join(dir, "update", "update.json"))
	if err != nil {
		t.Fatal(err)
	}
	var u struct{ ID, Previous string }
	if err := json.Unmarshal(b, &u); err != nil {
		t.Fatal(err)
	}
	if u.Previous != first || u.ID == first {
		t.Errorf("the second update is %s after %q, want one after %s", u.ID, u.Previous, first)
	}
	if _, err := os.Stat(filepath.Join(dir, "updates", first, "update.json")); err != nil {
		t.Errorf("the first update is not kept in updates/: %v", err)
	}
}

func readUpdateID(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "update", "update.json"))
	if err != nil {
		t.Fatal(err)
	}
	var u struct{ ID string }
	if err := json.Unmarshal(b, &u); err != nil || u.ID == "" {
		t.Fatalf("update.json: %v %s", err, b)
	}
	return u.ID
}

// TestOneWriterAtATime: while a render holds the directory (held at its engine by faultpoint), a second render
// (two --fresh renders: one cluster would be silently lost), a renew and a fleet site are refused naming the
// holder's PID; a reader reads the old directory meanwhile; SIGTERM then ends the holder promptly, with exit 143
// and the directory as it was.
func TestOneWriterAtATime(t *testing.T) {
	testtools.Long(t, "renders")
	dir := filepath.Join(t.TempDir(), "aio")
	runOK(t, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir)
	old := tree(t, dir)
	holder := start(t, []string{faultpoint.Env + "=hang:engine"}, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir, "--fresh", "--replace-cluster")
	deadline := time.Now().Add(time.Minute)
	for outdir.LockPID(dir) != holder.cmd.Process.Pid {
		if time.Now().After(deadline) {
			t.Fatalf("the first render never held %s:\n%s", dir, holder.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	held := fmt.Sprintf("is being written by another run (PID %d, render-static render", holder.cmd.Process.Pid)
	for _, args := range [][]string{{"--dir", dir, "--fresh"}, {"--dir", dir}, {"renew", "--dir", dir, "--force"}} {
		code, _, stderr := command(t, nil, args...)
		if code != 1 || !strings.Contains(stderr, held) {
			t.Errorf("%v while the directory is held: exit %d, want 1 naming the holder:\n%s", args, code, stderr)
		}
	}
	if code, stdout, stderr := command(t, nil, "certs", "--dir", dir); code != 0 || !strings.Contains(stdout, "etcd-signer") {
		t.Errorf("certs while a render holds the directory: exit %d\n%s", code, stderr)
	}
	sent := time.Now()
	if err := holder.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, _ := holder.wait(t, 30*time.Second)
	if code != 143 || !strings.Contains(holder.stderr.String(), "interrupted") {
		t.Errorf("SIGTERM: exit %d, want 143 saying interrupted:\n%s", code, holder.stderr.String())
	}
	if d := time.Since(sent); d > 5*time.Second {
		t.Errorf("SIGTERM took %s to end the render", d)
	}
	sameTree(t, "after the interrupted render the directory", tree(t, dir), old)
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("the interrupted render left %v", l)
	}

	// SIGINT: exit 130.
	holder = start(t, []string{faultpoint.Env + "=hang:engine"}, "--dir", dir, "--flavor", "upstream")
	for outdir.LockPID(dir) != holder.cmd.Process.Pid {
		if time.Now().After(deadline.Add(time.Minute)) {
			t.Fatal("the second render never held the directory")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = holder.cmd.Process.Signal(syscall.SIGINT)
	if code, _ := holder.wait(t, 30*time.Second); code != 130 {
		t.Errorf("SIGINT: exit %d, want 130:\n%s", code, holder.stderr.String())
	}
	sameTree(t, "after the interrupted render the directory", tree(t, dir), old)
}

// TestStateFaults: a state with a file missing, changed or added, or no state at all beside a render, is refused
// naming what is wrong and how to start over, and nothing is written; --fresh starts a new cluster.
func TestStateFaults(t *testing.T) {
	testtools.Long(t, "renders")
	dir, backup := filepath.Join(t.TempDir(), "aio"), filepath.Join(t.TempDir(), "backup")
	runOK(t, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir)
	copyDir(t, dir, backup)
	signer := "objects/core_secret_openshift-etcd_etcd-signer.yaml"
	for _, tc := range []struct {
		name   string
		tamper func(st string) error
		want   string
	}{
		{"render.json removed", func(st string) error { return os.Remove(filepath.Join(st, "render.json")) }, "render.json: missing"},
		{"state removed", func(st string) error { return os.RemoveAll(st) }, "holds a render (.render-static) but no state/"},
		{"signer removed", func(st string) error { return os.Remove(filepath.Join(st, signer)) }, signer + ": missing"},
		{"signer changed", func(st string) error {
			return os.WriteFile(filepath.Join(st, signer), []byte("kind: Secret\n"), 0o600)
		}, signer + ": changed since it was written"},
		{"file added", func(st string) error {
			return os.WriteFile(filepath.Join(st, "objects", "extra.yaml"), nil, 0o600)
		}, "objects/extra.yaml: not written by render-static"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copyDir(t, backup, dir)
			if err := tc.tamper(filepath.Join(dir, state.Dir)); err != nil {
				t.Fatal(err)
			}
			before := tree(t, dir)
			for _, args := range [][]string{{"--dir", dir}, {"--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir},
				{"renew", "--dir", dir, "--force"}} {
				code, _, stderr := command(t, nil, args...)
				if code != 1 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "--fresh") {
					t.Errorf("%v: exit %d, want 1 saying %q and naming --fresh:\n%s", args, code, tc.want, stderr)
				}
			}
			sameTree(t, "the refused directory", tree(t, dir), before)
		})
	}
	runOK(t, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir, "--fresh", "--replace-cluster")
	if _, err := state.Load(dir); err != nil {
		t.Errorf("after --fresh: %v", err)
	}
}

// TestClusterIdentity: an install-config of another cluster is refused in a directory holding one (each identity
// row of pipeline.identity, and the node and infrastructure names), every problem at once; what continues a
// cluster renders and keeps its infrastructure name.
func TestClusterIdentity(t *testing.T) {
	testtools.Long(t, "renders")
	dir := filepath.Join(t.TempDir(), "aio")
	example := repo("examples/sno/install-config.yaml")
	runOK(t, "--install-config", example, "--node-ip", exampleIP, "--dir", dir)
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	variant := func(t *testing.T, old, new string) string {
		t.Helper()
		if !strings.Contains(string(raw), old) {
			t.Fatalf("the example has no %q", old)
		}
		p := filepath.Join(t.TempDir(), "install-config.yaml")
		if err := os.WriteFile(p, []byte(strings.Replace(string(raw), old, new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := tree(t, dir)
	for _, tc := range []struct{ field, old, new string }{
		{"metadata.name", "name: sno", "name: other"},
		{"baseDomain", "baseDomain: example.com", "baseDomain: example.org"},
		{"networking.serviceNetwork", "- 172.30.0.0/16", "- 172.31.0.0/16"},
		{"networking.clusterNetwork", "cidr: 10.128.0.0/14", "cidr: 10.132.0.0/14"},
		{"fips", "pullSecret:", "fips: true\npullSecret:"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			code, _, stderr := command(t, nil, "--install-config", variant(t, tc.old, tc.new), "--dir", dir)
			if code != 1 || !strings.Contains(stderr, "  "+tc.field+": ") || !strings.Contains(stderr, "another cluster") {
				t.Errorf("exit %d, want 1 naming %s as another cluster's:\n%s", code, tc.field, stderr)
			}
		})
	}
	// Several at once, with the node name and the infrastructure name, and a problem of the install-config itself.
	code, _, stderr := command(t, nil, "--install-config", variant(t, "name: sno", "name: other"), "--node-name", "other-0", "--infra-id", "other-abcde",
		"--node-ip", "10.9.9.9", "--dir", dir)
	for _, want := range []string{"metadata.name: ", "--node-name: ", "--infra-id: ", "--node-ip: ", "invalid input (4 problems)"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, want 1 with %q:\n%s", code, want, stderr)
		}
	}
	sameTree(t, "the refused directory", tree(t, dir), before)
	// What continues the cluster: another install-config field (the installation disk), node IP, leaf validity, flavor.
	for _, args := range [][]string{
		{"--install-config", variant(t, "installationDisk: /dev/vda", "installationDisk: /dev/sda")},
		{"--node-ip", "192.168.126.11", "--reinstall"}, {"--cert-validity", "2h"}, {"--flavor", "upstream", "--reinstall"},
	} {
		stdout := runOK(t, append([]string{"--dir", dir}, args...)...)
		if !strings.Contains(stdout, "continued from") || !strings.Contains(stdout, st.InfraID) || !strings.Contains(stdout, "changed inputs:") {
			t.Errorf("%v did not continue the cluster %s and say what changed:\n%s", args, st.InfraID, stdout)
		}
	}
}

// TestInputsThatAreNotFiles: a named pipe, a directory or a device as an input file is refused at once, naming
// what it is; fleet follows a symlink to a site folder and fails a dangling one as a site.
func TestInputsThatAreNotFiles(t *testing.T) {
	d := t.TempDir()
	fifo := filepath.Join(d, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for flag, p := range map[string]string{"--install-config": fifo, "--images": d, "--release-info": fifo} {
		args := []string{"--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", filepath.Join(d, "out")}
		args = append(args, flag, p)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		code, _, stderr := command(t, nil, args...)
		cancel()
		_ = ctx
		if code != 1 || !strings.Contains(stderr, flag+": "+p+" is a") || !strings.Contains(stderr, "not a regular file") {
			t.Errorf("%s %s: exit %d:\n%s", flag, p, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(d, "out")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused render made its directory")
	}
}

// TestFullDisk runs renders on a real full file system (a small tmpfs mounted in a private mount namespace, as
// root): out of space, a render says so in one error line naming the path and what was left as it was, leaves no
// temporary tree behind, and a previous render stays exactly as it was.
func TestFullDisk(t *testing.T) {
	testtools.Long(t, "renders on a tmpfs")
	if os.Geteuid() != 0 {
		testtools.Missing(t, "needs root to mount a tmpfs in a private mount namespace")
	}
	unshare := testtools.Tool(t, "unshare")
	mnt := t.TempDir()
	ic := repo("examples/sno/install-config.yaml")
	abs, err := filepath.Abs(ic)
	if err != nil {
		t.Fatal(err)
	}
	// One shell in a private mount namespace: a 64 MiB tmpfs, a first render that fits, a filler leaving too little
	// for a second one, the second render (its output and exit code), then what is left beside the directory.
	script := `set -u
mount -t tmpfs -o size=64m tmpfs "$MNT"
"$CLI" --install-config "$IC" --node-ip 192.168.126.10 --dir "$MNT/aio" >/dev/null 2>&1 || { echo "first render failed"; exit 3; }
sha256sum "$MNT/aio/aio.ign" "$MNT/aio/state/SHA256SUMS" >"$MNT/before"
free=$(df --output=avail -B1 "$MNT" | tail -1)
fallocate -l $((free - 1500000)) "$MNT/filler"
"$CLI" --dir "$MNT/aio" --flavor upstream --reinstall >"$MNT/out" 2>"$MNT/err"; echo "exit=$?"
echo "--- stderr"; cat "$MNT/err"
echo "--- beside"; ls -A "$MNT"
echo "--- check"; sha256sum -c --quiet "$MNT/before" && echo unchanged
rm -f "$MNT/filler"
"$CLI" --dir "$MNT/aio" >/dev/null 2>&1; echo "rerender=$?"
`
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--mount", "--propagation", "private", "sh", "-c", script)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "MNT="+mnt, "CLI="+os.Args[0], "IC="+abs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	o := string(out)
	stderr := o[strings.Index(o, "--- stderr\n")+len("--- stderr\n") : strings.Index(o, "--- beside")]
	beside := strings.Fields(o[strings.Index(o, "--- beside")+len("--- beside") : strings.Index(o, "--- check")])
	if !strings.Contains(o, "exit=1\n") {
		t.Errorf("the render on a full disk did not exit 1:\n%s", o)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "no space left on device") ||
		!strings.Contains(lines[0], mnt+"/aio was left as it was") {
		t.Errorf("want one error line saying the disk is full and the directory was left as it was, got:\n%s", stderr)
	}
	if strings.Join(beside, " ") != "aio before err filler out" {
		t.Errorf("beside the directory after the failed render: %v, want no temporary tree or lock", beside)
	}
	if !strings.Contains(o, "unchanged\n") {
		t.Errorf("the previous render changed:\n%s", o)
	}
	if !strings.Contains(o, "rerender=0\n") {
		t.Errorf("the render after space came back failed:\n%s", o)
	}
}

// TestDirProblemsWithTheOthers: a --dir that cannot be an output directory is one more input problem, reported with
// the others before any work; so is a saved cluster the inputs do not continue.
func TestDirProblemsWithTheOthers(t *testing.T) {
	d := t.TempDir()
	file := filepath.Join(d, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(d, "foreign")
	if err := os.MkdirAll(filepath.Join(foreign, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{".": "cannot be an output directory", file: "is not a directory (a regular file)",
		foreign: "without the .render-static marker"} {
		code, _, stderr := command(t, nil, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", "192.0.2.5", "--dir", dir)
		for _, w := range []string{"invalid input (3 problems)", "  --dir: ", want, "--node-ip: 192.0.2.5 is in a documentation range",
			"--node-ip: 192.0.2.5 is not in any networking.machineNetwork"} {
			if code != 1 || !strings.Contains(stderr, w) {
				t.Errorf("--dir %s: exit %d, want 1 with %q:\n%s", dir, code, w, stderr)
			}
		}
	}
	if es, _ := os.ReadDir(d); len(es) != 2 {
		t.Errorf("refused renders left %d entries in %s", len(es), d)
	}
	testtools.Long(t, "renders")
	dir := filepath.Join(d, "aio")
	runOK(t, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--node-name", "sno-0", "--dir", dir)
	code, _, stderr := command(t, nil, "--install-config", repo("testdata/installconfig/bad/control-plane-replicas-3.yaml"), "--node-ip", exampleIP,
		"--node-name", "master-0", "--dir", dir)
	for _, w := range []string{"controlPlane.replicas: ", "--node-name: \"master-0\", but the cluster saved in"} {
		if code != 1 || !strings.Contains(stderr, w) {
			t.Errorf("exit %d, want 1 with %q:\n%s", code, w, stderr)
		}
	}
}

// TestSavedInputsAreDefaults: an upstream render with its own images and leaves, rendered again with no flag but
// --dir, stays what it was (no pod rolls, aio.ign byte-identical), and the summary says the inputs came from the
// state; a changed node IP rolls etcd and kube-apiserver and says what changed.
func TestSavedInputsAreDefaults(t *testing.T) {
	testtools.Long(t, "renders")
	d := t.TempDir()
	dir, images := filepath.Join(d, "aio"), filepath.Join(d, "images.yaml")
	if err := os.WriteFile(images, []byte("kube-apiserver: registry.example.com/kube-apiserver:v1.34.3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first := runOK(t, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir,
		"--flavor", "upstream", "--images", images, "--cert-validity", "2h")
	if !strings.Contains(first, "(a new cluster)") || !strings.Contains(first, "flavor:           upstream") {
		t.Errorf("first summary:\n%s", first)
	}
	ign, _ := os.ReadFile(filepath.Join(dir, "aio.ign"))
	again := runOK(t, "--dir", dir)
	for _, want := range []string{"continued from " + filepath.Join(dir, "state"), "saved inputs:     install-config, node IP, cert validity, images, flavor",
		"flavor:           upstream", "revisions:        etcd 1; kube-apiserver 1; kube-controller-manager 1; kube-scheduler 1"} {
		if !strings.Contains(again, want) {
			t.Errorf("the re-render's summary lacks %q:\n%s", want, again)
		}
	}
	if strings.Contains(again, "changed inputs") {
		t.Errorf("nothing changed, but the summary says so:\n%s", again)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "aio.ign")); !bytes.Equal(ign, after) {
		t.Errorf("a re-render with the saved inputs changed aio.ign")
	}
	moved := runOK(t, "--dir", dir, "--node-ip", "192.168.126.11", "--reinstall")
	for _, want := range []string{"changed inputs:   node IP 192.168.126.10 -> 192.168.126.11", "etcd 1->2 (changed: ", "kube-apiserver 1->2 (changed: ",
		"node update:      none written (--reinstall): install the node again from " + filepath.Join(dir, "aio.ign") + ", for unit kubelet.service"} {
		if !strings.Contains(moved, want) {
			t.Errorf("the summary after a new node IP lacks %q:\n%s", want, moved)
		}
	}
}

// TestAnotherClusterCauseFirst: an install-config of another cluster in a directory whose cluster has an added
// worker is refused for that cause, said first, without the problems the saved inputs (the node IP, the added
// worker: an internal name, addedWorkers[0]) have only because of it.
func TestAnotherClusterCauseFirst(t *testing.T) {
	dir, _ := renderWithWorker(t)
	raw, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	other := strings.NewReplacer("name: sno", "name: other", "192.168.126.0/24", "10.0.0.0/24").Replace(string(raw))
	ic := filepath.Join(t.TempDir(), "install-config.yaml")
	if err := os.WriteFile(ic, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--install-config", ic, "--dir", dir}, {"--install-config", ic, "--node-ip", "10.0.0.10", "--dir", dir}} {
		code, _, stderr := runCLI(args...)
		lines := strings.Split(stderr, "\n")
		if code != 1 || len(lines) < 2 || !strings.HasPrefix(lines[1], "  metadata.name: ") || strings.Contains(stderr, "addedWorkers") ||
			strings.Contains(stderr, "--node-ip") || !strings.Contains(stderr, "(1 problem)") {
			t.Errorf("%v: exit %d; want 1 with metadata.name the one problem:\n%s", args, code, stderr)
		}
	}
}

// TestAdminKubeconfigIsItsOwnFile (issue 40): DIR/auth/kubeconfig is the user's to edit (kubectl config
// set-context writes it in place), so it is a file of its own, never a hard link to rootfs/'s copy that aio.ign was
// made from: an edit does not show through rootfs/, and a re-render (which replaces DIR, auth/kubeconfig included:
// docs/output.md) keeps it apart, whether it writes it anew or links it from the previous output.
func TestAdminKubeconfigIsItsOwnFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "aio")
	renderExample(t, dir)
	admin, node := filepath.Join(dir, "auth", "kubeconfig"), filepath.Join(dir, "rootfs", "opt", "openshift", "auth", "kubeconfig")
	apart := func(when string) {
		t.Helper()
		a, errA := os.Stat(admin)
		n, errN := os.Stat(node)
		if errA != nil || errN != nil {
			t.Fatalf("%s: %v %v", when, errA, errN)
		}
		if os.SameFile(a, n) || a.Sys().(*syscall.Stat_t).Nlink != 1 {
			t.Errorf("%s: %s shares its inode (%d links; the same file as %s: %v)", when, admin, a.Sys().(*syscall.Stat_t).Nlink, node, os.SameFile(a, n))
		}
	}
	apart("render")
	nodeBefore, _ := os.ReadFile(node)
	f, err := os.OpenFile(admin, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("# the user's edit\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, _ := os.ReadFile(node); !bytes.Equal(got, nodeBefore) {
		t.Errorf("an edit of %s changed %s", admin, node)
	}
	renderExample(t, dir)
	apart("re-render after an edit")
	renderExample(t, dir)
	apart("re-render of an unchanged directory")
}

// TestFreshKeepsTheCluster: --fresh on a directory that holds a cluster (a day-2 worker, two node updates) is
// refused, naming the cluster, its workers and updates and --replace-cluster, and nothing is written; with
// --replace-cluster the new cluster takes the directory, and the old tree is kept whole beside it (0700), which
// stderr says with the infra ID, the worker and the updates.
func TestFreshKeepsTheCluster(t *testing.T) {
	testtools.Long(t, "renders")
	dir, _ := renderWithWorker(t)
	runOK(t, "renew", "--dir", dir, "--force")
	old, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	args := []string{"--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", exampleIP, "--dir", dir, "--fresh"}
	code, _, stderr := command(t, nil, args...)
	for _, want := range []string{"--fresh: " + dir + " holds the cluster " + old.InfraID + " (1 worker, 2 node updates)", "give --replace-cluster too",
		dir + ".old-" + old.InfraID + "-<time>"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("--fresh on a cluster: exit %d, want 1 saying %q:\n%s", code, want, stderr)
		}
	}
	sameTree(t, "the directory after a refused --fresh", tree(t, dir), before)

	code, _, stderr = command(t, nil, append(args, "--replace-cluster")...)
	if code != 0 {
		t.Fatalf("--fresh --replace-cluster: exit %d\n%s", code, stderr)
	}
	kept, _ := filepath.Glob(dir + ".old-" + old.InfraID + "-*")
	if len(kept) != 1 {
		t.Fatalf("kept trees %v, want one %s.old-%s-<time>", kept, dir, old.InfraID)
	}
	for _, want := range []string{dir + " held the cluster " + old.InfraID + ": kept whole as " + kept[0] + " (0700", "its worker workers/worker-2",
		"update/ (id ", "updates/"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// Both trees: the old one as it was, the new one a new cluster without the old one's workers and updates.
	keptTree := tree(t, kept[0])
	delete(keptTree, ".") // its mode: 0700, below
	delete(before, ".")
	sameTree(t, "the kept tree", keptTree, before)
	if info, err := os.Stat(kept[0]); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the kept tree: %v, mode %v, want 0700", err, info.Mode().Perm())
	}
	if st, err := state.Load(kept[0]); err != nil || st.InfraID != old.InfraID {
		t.Errorf("the kept tree's state: %v (infra ID %v, want %s)", err, st, old.InfraID)
	}
	neu, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if neu.InfraID == old.InfraID {
		t.Errorf("the new cluster has the old infra ID %s", old.InfraID)
	}
	for _, gone := range []string{"update", "updates", "workers"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("the new cluster's directory has the old cluster's %s/", gone)
		}
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left %v", l)
	}
	// --replace-cluster alone is refused.
	if code, _, stderr := command(t, nil, "--dir", dir, "--replace-cluster"); code != 1 || !strings.Contains(stderr, "--replace-cluster: only with --fresh") {
		t.Errorf("--replace-cluster without --fresh: exit %d\n%s", code, stderr)
	}
}
