package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The restore after a boot (kernel.go), without a node: kubepods-like cgroups (under a name of their own, never a
// node's) with processes this test started in them.

// testHierarchies are the cgroup hierarchies the restore tests use: on cgroup v1 a few controllers that do not
// limit anything by default (never memory: this process's memory cgroup is the machine's business); on v2 the
// unified one.
func testHierarchies(t *testing.T) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}
	}
	var out []string
	for _, c := range []string{"pids", "blkio", "freezer"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "cgroup.procs")); err == nil {
			out = append(out, filepath.Join("/sys/fs/cgroup", c))
		}
	}
	if len(out) == 0 {
		t.Skip("no cgroup hierarchy under /sys/fs/cgroup")
	}
	return out
}

// testScope is a host scope of its own: no kernel setting, cgroups named rs-e2e-<test>-<pid>*, its record in a
// temporary directory.
func testScope(t *testing.T, bound, grace time.Duration) (hostScope, string) {
	name := fmt.Sprintf("rs-e2e-%s-%d", strings.ToLower(strings.TrimPrefix(t.Name(), "TestRestore")), os.Getpid())
	t.Cleanup(func() {
		// Whatever the test left (a failing test, a cgroup made to be there before a boot): this test's own
		// cgroups only, name and name-*.
		for _, h := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/*"} {
			m, _ := filepath.Glob(filepath.Join(h, name))
			more, _ := filepath.Glob(filepath.Join(h, name+"-*"))
			for _, top := range append(m, more...) {
				for _, d := range cgroupTree(top) {
					syscall.Rmdir(d)
				}
			}
		}
	})
	return hostScope{file: filepath.Join(t.TempDir(), "host-state.json"), cgroups: name + "*", bound: bound, grace: grace}, name
}

// enter moves a process (or, with tasks, one thread) into dir of every hierarchy, creating it.
func enter(t *testing.T, hierarchies []string, dir string, id int, file string) {
	t.Helper()
	for _, h := range hierarchies {
		d := filepath.Join(h, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("creating cgroup %s: %v", d, err)
		}
		if err := os.WriteFile(filepath.Join(d, file), []byte(strconv.Itoa(id)), 0o644); err != nil {
			t.Fatalf("moving %d into %s: %v", id, d, err)
		}
	}
}

// started is a process this test started and reaps as soon as it exits (as the node's init would).
type started struct {
	cmd   *exec.Cmd
	done  chan struct{}
	state *os.ProcessState
}

func startReaped(t *testing.T, argv ...string) *started {
	t.Helper()
	s := &started{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.cmd.Wait()
		s.state = s.cmd.ProcessState
		close(s.done)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
	})
	return s
}

func (s *started) exited(t *testing.T, within time.Duration) *os.ProcessState {
	t.Helper()
	select {
	case <-s.done:
		return s.state
	case <-time.After(within):
		t.Fatalf("process %d (%s) still running after %s", s.cmd.Process.Pid, s.cmd.Path, within)
		return nil
	}
}

// TestRestoreWaitsKillsAndRemoves: a kubepods-like tree created after the save, with a process that leaves on its
// own within the grace period and one that does not. Restore must wait for the first, kill the second by PID
// (and nothing else), then remove every cgroup of the tree in every hierarchy and the host-state file.
func TestRestoreWaitsKillsAndRemoves(t *testing.T) {
	hier := testHierarchies(t)
	const grace = 2 * time.Second
	sc, name := testScope(t, 30*time.Second, grace)
	before := sc.topCgroups()
	hs, err := sc.save(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sc.file); err != nil {
		t.Fatalf("no host-state record while the node runs: %v", err)
	}
	short := startReaped(t, "sleep", "1")
	long := startReaped(t, "sleep", "1000")
	enter(t, hier, filepath.Join(name, "burstable", "pod-short", "ctr"), short.cmd.Process.Pid, "cgroup.procs")
	enter(t, hier, filepath.Join(name, "besteffort", "pod-long"), long.cmd.Process.Pid, "cgroup.procs")
	if len(sc.topCgroups()) != len(before)+len(hier) {
		t.Fatalf("the test cgroups are not seen: %v", sc.topCgroups())
	}

	var logged strings.Builder
	st := time.Now()
	changed, left, err := hs.Restore(func(f string, a ...any) { fmt.Fprintf(&logged, f+"\n", a...) })
	took := time.Since(st)
	t.Logf("Restore took %s: changed %q, left %v, log %q", took.Round(time.Millisecond), changed, left, logged.String())
	if err != nil || len(left) > 0 {
		t.Fatalf("Restore: err %v, left %v", err, left)
	}
	if took < grace {
		t.Errorf("Restore returned after %s, before the grace period (%s) in which the node's processes may leave on their own", took, grace)
	}
	if ws := short.exited(t, time.Second).Sys().(syscall.WaitStatus); ws.Signaled() || ws.ExitStatus() != 0 {
		t.Errorf("the process that left on its own ended with %v: Restore must wait for it, not kill it", ws)
	}
	if ws := long.exited(t, 5*time.Second).Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the process still in the node's cgroup ended with %v, want killed by SIGKILL", ws)
	}
	joined := strings.Join(changed, "; ")
	if want := fmt.Sprintf("%d (sleep)", long.cmd.Process.Pid); !strings.Contains(joined, "killed by PID") || !strings.Contains(joined, want) {
		t.Errorf("Restore does not report killing %s: %q", want, joined)
	}
	if strings.Contains(joined, strconv.Itoa(short.cmd.Process.Pid)+" ") {
		t.Errorf("Restore reports the process that left on its own: %q", joined)
	}
	for _, h := range hier {
		if _, err := os.Stat(filepath.Join(h, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s still there after Restore (%v)", filepath.Join(h, name), err)
		}
		if !strings.Contains(joined, "removed cgroup "+filepath.Join(h, name)) {
			t.Errorf("Restore does not report removing %s: %q", filepath.Join(h, name), joined)
		}
	}
	if _, err := os.Stat(sc.file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the host-state record is still there after a complete restore (%v)", err)
	}
}

// TestRestoreRecordsWhatItCannotRemove: a cgroup held by a thread of this very process (which Restore never
// kills) cannot be removed. Restore must not fail for it: it logs it loudly, records it in the host-state file and
// returns; the next save, once the thread has left, removes it and forgets it. cgroup v1 only: there a single
// thread can be moved.
func TestRestoreRecordsWhatItCannotRemove(t *testing.T) {
	hier := testHierarchies(t)
	if hier[0] == "/sys/fs/cgroup" {
		t.Skip("cgroup v2: a thread cannot be moved alone into a domain cgroup")
	}
	h := hier[0]
	sc, name := testScope(t, 2*time.Second, 500*time.Millisecond)
	hs, err := sc.save(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(h, name)

	var wg sync.WaitGroup
	hold, release := make(chan error), make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, wherever it is
		tid := syscall.Gettid()
		// Where this thread is now, read before it moves: it may be the process's main thread, and then
		// /proc/self/cgroup (the main thread's) would name the held cgroup once it has moved.
		back := ""
		own, _ := os.ReadFile("/proc/thread-self/cgroup")
		for _, line := range strings.Split(string(own), "\n") {
			f := strings.SplitN(line, ":", 3)
			if len(f) == 3 && strings.Contains(","+f[1]+",", ","+filepath.Base(h)+",") {
				back = filepath.Join(h, f[2], "tasks")
			}
		}
		d := filepath.Join(top, "burstable", "pod-held")
		if err := os.MkdirAll(d, 0o755); err != nil {
			hold <- err
			return
		}
		hold <- os.WriteFile(filepath.Join(d, "tasks"), []byte(strconv.Itoa(tid)), 0o644)
		<-release
		// Back to where it was, with the rest of the process.
		if back != "" {
			os.WriteFile(back, []byte(strconv.Itoa(tid)), 0o644)
		}
	}()
	if err := <-hold; err != nil {
		close(release)
		wg.Wait()
		t.Fatalf("moving a thread into the test cgroup: %v", err)
	}
	var logged strings.Builder
	changed, left, err := hs.Restore(func(f string, a ...any) { fmt.Fprintf(&logged, f+"\n", a...) })
	close(release)
	wg.Wait()
	t.Logf("Restore: changed %q, left %v, log %q", changed, left, logged.String())
	if err != nil {
		t.Fatalf("a cgroup that cannot be removed failed Restore: %v", err)
	}
	if len(left) != 1 || left[0] != top {
		t.Fatalf("left %v, want [%s]", left, top)
	}
	if !strings.Contains(logged.String(), "WARNING") || !strings.Contains(logged.String(), top) || !strings.Contains(logged.String(), sc.file) {
		t.Errorf("the cgroup left is not logged loudly with where it is recorded: %q", logged.String())
	}
	if _, err := os.Stat(top); err != nil {
		t.Fatalf("the held cgroup is gone: %v", err)
	}
	rec, err := readHostRecord(sc.file)
	if err != nil || len(rec.Cgroups) != 1 || rec.Cgroups[0] != top {
		t.Fatalf("the host-state record does not name the cgroup left: %+v, %v", rec, err)
	}

	// The next run: the thread has left; its save removes the recorded cgroup before anything else.
	var logged2 strings.Builder
	hs2, err := sc.save(func(f string, a ...any) { fmt.Fprintf(&logged2, f+"\n", a...) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(top); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the next save did not remove the recorded cgroup %s (%v); log %q", top, err, logged2.String())
	}
	if !strings.Contains(logged2.String(), "repaired") || !strings.Contains(logged2.String(), "removed cgroup "+top) {
		t.Errorf("the repair is not logged: %q", logged2.String())
	}
	rec, err = readHostRecord(sc.file)
	if err != nil || len(rec.Cgroups) != 0 {
		t.Errorf("after the repair the record still names cgroups: %+v, %v", rec, err)
	}
	if _, _, err := hs2.Restore(t.Logf); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sc.file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the host-state record is still there after a complete restore (%v)", err)
	}
}

// TestReadHostRecord reads both formats of the host-state file: the first (a map of kernel settings, left by a
// run of an earlier version) and the current one.
func TestReadHostRecord(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	os.WriteFile(old, []byte(`{"kernel/panic":"0","vm/overcommit_memory":"0"}`), 0o644)
	rec, err := readHostRecord(old)
	if err != nil || rec.Sysctls["kernel/panic"] != "0" || rec.Sysctls["vm/overcommit_memory"] != "0" || len(rec.Cgroups) != 0 {
		t.Fatalf("old format: %+v, %v", rec, err)
	}
	cur := filepath.Join(dir, "cur.json")
	want := &hostRecord{Sysctls: map[string]string{"kernel/panic": "10"}, Existing: []string{"/sys/fs/cgroup/pids/kubepods"}, Cgroups: []string{"/sys/fs/cgroup/blkio/kubepods"}}
	if err := writeHostRecord(cur, want); err != nil {
		t.Fatal(err)
	}
	rec, err = readHostRecord(cur)
	if err != nil || rec.Sysctls["kernel/panic"] != "10" || len(rec.Existing) != 1 || len(rec.Cgroups) != 1 || rec.Cgroups[0] != want.Cgroups[0] {
		t.Fatalf("current format: %+v, %v", rec, err)
	}
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o644)
	if _, err := readHostRecord(filepath.Join(dir, "bad.json")); err == nil {
		t.Error("a broken record was read without an error")
	}
}

// TestWorkerCgroupRoot: a worker kubelet's cgroupRoot is a top cgroup the control-plane node's scope (kubepods*)
// covers and the worker's own scope names; it is made in every cgroup v1 hierarchy (cpuset with its parent's cpus
// and mems, so that processes can join it) and removed by a scope naming it after the boot. (The cgroups made here
// are named after this test, never a node's.)
func TestWorkerCgroupRoot(t *testing.T) {
	if sc := workerScope("worker-0", "f"); workerCgroupRoot("worker-0") != "/kubepods-worker-0" || sc.cgroups != "kubepods-worker-0" || len(sc.sysctls) != 0 {
		t.Errorf("worker-0: cgroupRoot %s, scope %+v: want /kubepods-worker-0, under the control-plane node's kubepods*, and no kernel setting",
			workerCgroupRoot("worker-0"), sc)
	}
	testHierarchies(t)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		t.Skip("cgroup v2: the worker's cgroupRoot is made on cgroup v1 only")
	}
	scope, name := testScope(t, 10*time.Second, time.Second)
	hs, err := scope.save(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	root := "/" + name
	if err := MakeCgroupRoot(root); err != nil {
		t.Fatal(err)
	}
	hierarchies, err := v1Hierarchies()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h, root)); err != nil {
			t.Errorf("no cgroup %s in %s: %v", root, h, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if b, _ := os.ReadFile(filepath.Join(h, root, f)); strings.TrimSpace(string(b)) == "" {
					t.Errorf("%s of %s is empty: no process could join it", f, root)
				}
			}
		}
	}
	changed, left, err := hs.Restore(t.Logf)
	if err != nil || len(left) > 0 {
		t.Fatalf("restore: %v (left %v)", err, left)
	}
	if len(changed) != len(hierarchies) {
		t.Errorf("restore removed %v, want the cgroup in each of %d hierarchies", changed, len(hierarchies))
	}
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h, root)); err == nil {
			t.Errorf("%s left in %s", root, h)
		}
	}
}

// TestRestoreRepairsAKilledRun: a boot whose run was killed after the save (no Restore) leaves its record; the
// repair a lab's baseline makes removes the cgroups that boot created and the record, and keeps those that were
// there before it.
func TestRestoreRepairsAKilledRun(t *testing.T) {
	hierarchies := testHierarchies(t)
	sc, name := testScope(t, 20*time.Second, time.Second)
	for _, h := range hierarchies {
		if err := os.MkdirAll(filepath.Join(h, name+"-before"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sc.save(t.Logf); err != nil {
		t.Fatal(err)
	}
	for _, h := range hierarchies {
		if err := os.MkdirAll(filepath.Join(h, name+"-boot", "child"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The run dies here: nothing restores. The next one repairs.
	left, err := sc.repair(t.Logf)
	if err != nil || len(left) != 0 {
		t.Fatalf("repair: left %v, %v", left, err)
	}
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h, name+"-boot")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed boot's cgroup in %s is still there (%v)", h, err)
		}
		if _, err := os.Stat(filepath.Join(h, name+"-before")); err != nil {
			t.Errorf("the cgroup that was there before the boot is gone from %s: %v", h, err)
		}
	}
	if _, err := os.Stat(sc.file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the record is still there after the repair (%v)", err)
	}
	if left, err := sc.repair(t.Logf); err != nil || left != nil {
		t.Errorf("a repair with no record: %v, %v", left, err)
	}
}
