package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// The lab driven the way a user drives it: a user's shell in a real pseudo-terminal types `make lab` (and
// `make lab | tee lab.log`) in the repository, reads the node's answers from the screen, interrupts a command
// with Ctrl-C, exits, and gets the terminal back; and the same without a terminal (LAB_CMD, the refusal). After
// each lab, nothing of the node is left on the machine. Every read of the screen has a deadline.

// screen reads a pseudo-terminal's master side and lets the test wait (bounded) for text to appear on it.
type screen struct {
	master *os.File
	mu     sync.Mutex
	raw    []byte
	used   int // how much of the cleaned text earlier expectations consumed
	more   chan struct{}
	closed chan struct{}
}

func newScreen(master *os.File) *screen {
	s := &screen{master: master, more: make(chan struct{}, 1), closed: make(chan struct{})}
	go func() {
		defer close(s.closed)
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				s.mu.Lock()
				s.raw = append(s.raw, buf[:n]...)
				s.mu.Unlock()
				select {
				case s.more <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// terminalEscapes are what a terminal interprets rather than shows: CSI and OSC sequences, charset and keypad
// selections, carriage returns and bells.
var terminalEscapes = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]|[\r\x07]`)

// text is what the screen showed so far, without terminal escapes.
func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return terminalEscapes.ReplaceAllString(string(s.raw), "")
}

// expect waits up to timeout for re to match what appeared since the last expectation; it returns that text up
// to the end of the match and the submatches, and consumes it. what names the wait in the failure.
func (s *screen) expect(t *testing.T, what string, re *regexp.Regexp, timeout time.Duration) (string, []string) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		txt := s.text()
		s.mu.Lock()
		from := s.used
		s.mu.Unlock()
		if from > len(txt) {
			from = len(txt)
		}
		if loc := re.FindStringSubmatchIndex(txt[from:]); loc != nil {
			s.mu.Lock()
			s.used = from + loc[1]
			s.mu.Unlock()
			var subs []string
			for i := 0; i+1 < len(loc); i += 2 {
				if loc[i] >= 0 {
					subs = append(subs, txt[from+loc[i]:from+loc[i+1]])
				} else {
					subs = append(subs, "")
				}
			}
			return txt[from : from+loc[1]], subs
		}
		select {
		case <-s.more:
		case <-s.closed:
			t.Fatalf("%s: the terminal closed before %q appeared; it showed:\n%s", what, re, lastLines(txt[from:], 60))
		case <-deadline.C:
			t.Fatalf("%s: %q did not appear within %s; the terminal showed:\n%s", what, re, timeout, lastLines(txt[from:], 60))
		}
	}
}

// typeLine types a line and Enter.
func (s *screen) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := s.master.Write([]byte(line + "\r")); err != nil {
		t.Fatalf("typing %q: %v", line, err)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// userEnv is the environment a user's shell has: this test's, without what `make test` and the harness add.
func userEnv() []string {
	return filteredEnv("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "LAB_CMD", "RENDER_STATIC_LAB", "RENDER_STATIC_LAB_RESULT",
		"RENDER_STATIC_LAB_INSTALL_CONFIG", "RENDER_STATIC_LAB_NODE_IP", EnvInner, EnvHostNetns, EnvHostMntns, EnvHostPidns, "PS1", "TERM")
}

// descendants are the processes below root (not root itself).
func descendants(root int) []proc {
	all := readProcs()
	children := map[int][]int{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var out []proc
	queue := children[root]
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, all[pid])
		queue = append(queue, children[pid]...)
	}
	return out
}

// nodeTrace identifies the node a lab started: its kubelet's PID and the kubelet's PID and mount namespaces.
type nodeTrace struct {
	kubelet      int
	pidNS, mntNS string
}

// findNode looks for the kubelet below root.
func findNode(root int) (nodeTrace, bool) {
	for _, p := range descendants(root) {
		if p.comm != "kubelet" {
			continue
		}
		pidNS, err1 := nsLink(strconv.Itoa(p.pid), "pid")
		mntNS, err2 := nsLink(strconv.Itoa(p.pid), "mnt")
		if err1 == nil && err2 == nil {
			return nodeTrace{kubelet: p.pid, pidNS: pidNS, mntNS: mntNS}, true
		}
	}
	return nodeTrace{}, false
}

// hostSnapshot is what a lab may change on the machine.
type hostSnapshot struct {
	sysctls   map[string]string
	cgroups   []string
	stateFile bool
	mounts    map[string]bool
}

// hostBaseline is the machine before a lab. What an earlier run left (a boot killed before it could restore the
// machine, recorded in the host-state file) is not this lab's doing: it is put back first, so that the lab is
// compared with the machine as it was before any node ran.
func hostBaseline(t *testing.T) hostSnapshot {
	t.Helper()
	if err := RepairHostState(t.Logf); err != nil {
		t.Fatal(err)
	}
	return takeHostSnapshot(t)
}

func takeHostSnapshot(t *testing.T) hostSnapshot {
	t.Helper()
	s := hostSnapshot{sysctls: map[string]string{}, cgroups: kubeletScope().topCgroups(), mounts: map[string]bool{}}
	sort.Strings(s.cgroups)
	for _, k := range kubeletSysctls {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			t.Fatal(err)
		}
		s.sysctls[k] = strings.TrimSpace(string(v))
	}
	_, err := os.Stat(hostStateFile())
	s.stateFile = err == nil
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			s.mounts[f[4]] = true
		}
	}
	return s
}

// checkNodeGone: none of the node's processes, no process in its PID or mount namespace (so its mounts are
// gone with it), no new mount here, the kubelet's cgroups and kernel settings as before the lab, no repair pending.
func checkNodeGone(t *testing.T, before hostSnapshot, node nodeTrace) {
	t.Helper()
	for pid, p := range readProcs() {
		pidNS, _ := nsLink(strconv.Itoa(pid), "pid")
		mntNS, _ := nsLink(strconv.Itoa(pid), "mnt")
		if pidNS == node.pidNS || mntNS == node.mntNS {
			t.Errorf("process %d (%s) of the node's namespaces (%s, %s) is still running", pid, p.comm, pidNS, mntNS)
		}
	}
	after := takeHostSnapshot(t)
	for k, v := range before.sysctls {
		if after.sysctls[k] != v {
			t.Errorf("kernel setting %s is %s after the lab, %s before", k, after.sysctls[k], v)
		}
	}
	if strings.Join(after.cgroups, ",") != strings.Join(before.cgroups, ",") {
		t.Errorf("the kubelet's cgroups after the lab %v, before %v", after.cgroups, before.cgroups)
	}
	if after.stateFile && !before.stateFile {
		t.Errorf("%s is left: the restore did not finish", hostStateFile())
	}
	for m := range after.mounts {
		if !before.mounts[m] {
			t.Errorf("mount %s appeared on the machine during the lab", m)
		}
	}
	t.Logf("after the lab: no process in the node's namespaces; kernel settings %v, kubelet cgroups %v and %d mounts as before",
		after.sysctls, after.cgroups, len(after.mounts))
}

// checkNodeWasThere: while the lab ran, the node had cgroups of its own (so that checkNodeGone can tell).
func checkNodeWasThere(t *testing.T, before hostSnapshot, node nodeTrace) {
	t.Helper()
	now := kubeletScope().topCgroups()
	if len(now) <= len(before.cgroups) {
		t.Errorf("while the node runs (kubelet pid %d) it has no cgroups of its own: %v (before: %v)", node.kubelet, now, before.cgroups)
	}
}

// waitFor polls cond (bounded).
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (%s)", what, timeout, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var (
	userPrompt = regexp.MustCompile(`user\$ $`)
	labPrompt  = regexp.MustCompile(`\[kaio ` + upstreamNodeName + `\] [^\n]*# $`)
	// A mirror pod of kubectl get pods -A: namespace, name (the scheduler's pod is openshift-kube-scheduler, as
	// the operator names it), component, ready containers, containers.
	mirrorPod = regexp.MustCompile(`(?m)^(\S+)\s+((?:openshift-)?(etcd|kube-apiserver|kube-controller-manager|kube-scheduler)-` + upstreamNodeName + `)\s+(\d+)/(\d+)\s+Running\b`)
)

// TestLabTerminal: `make lab`, typed into a user's interactive shell in a real pseudo-terminal, from the
// repository; then the same piped into tee (standard output a pipe, standard input the terminal); then `make lab`
// interrupted with Ctrl-C while the node boots.
func TestLabTerminal(t *testing.T) {
	preconditions(t)
	testtools.Tool(t, "make")
	for _, c := range []struct{ name, line string }{
		{"make-lab", "make lab"},
		{"piped", "make lab | tee %s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := ""
			line := c.line
			if strings.Contains(line, "%s") {
				log = filepath.Join(t.TempDir(), "lab.log")
				line = fmt.Sprintf(line, log)
			}
			driveLab(t, line, log)
		})
	}
	t.Run("ctrl-c-during-boot", interruptLab)
}

// userShell starts a user's interactive bash in a new pseudo-terminal, in the repository, and waits for its
// prompt.
func userShell(t *testing.T) (*exec.Cmd, *screen) {
	t.Helper()
	sh := exec.Command("/bin/bash", "--norc", "--noprofile", "-i")
	sh.Dir = moduleRoot(t)
	sh.Env = append(userEnv(), "PS1=user$ ", "TERM=xterm")
	master, err := pty.StartWithSize(sh, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatalf("starting a shell in a pseudo-terminal: %v", err)
	}
	scr := newScreen(master)
	t.Cleanup(func() { stopUserShell(t, sh, master, scr) })
	scr.expect(t, "the user's shell", userPrompt, 30*time.Second)
	return sh, scr
}

// interruptLab: Ctrl-C while the node boots (the kubelet runs, the shell is not up yet) goes to make's process
// group; the lab stops the node and restores the machine before make exits (130, by SIGINT) and the user's shell
// answers again.
func interruptLab(t *testing.T) {
	before := hostBaseline(t)
	sh, scr := userShell(t)
	scr.typeLine(t, "make lab")
	var node nodeTrace
	waitFor(t, "the node's kubelet below the user's shell", 15*time.Minute, func() (bool, string) {
		var ok bool
		node, ok = findNode(sh.Process.Pid)
		return ok, "no kubelet yet"
	})
	waitFor(t, "the kubelet's cgroups", time.Minute, func() (bool, string) {
		now := kubeletScope().topCgroups()
		return len(now) > len(before.cgroups), fmt.Sprintf("%v", now)
	})
	if strings.Contains(scr.text(), "is up") {
		t.Fatalf("the lab was up before it could be interrupted while booting")
	}
	st := time.Now()
	if _, err := scr.master.Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	out, _ := scr.expect(t, "the interrupted lab", userPrompt, 3*time.Minute)
	t.Logf("Ctrl-C during the boot: the user's shell answered %.1fs later", time.Since(st).Seconds())
	for _, want := range []string{"lab: interrupt: stopping the node and restoring the machine", "lab: interrupted (interrupt): the node was stopped", "restored after the lab boot"} {
		if !strings.Contains(out, want) {
			t.Errorf("the interrupted lab does not say %q:\n%s", want, lastLines(out, 40))
		}
	}
	checkLabEnded(t, sh, scr, 130, before, node)
}

// checkLabEnded: back at the user's prompt, make exited with wantExit, nothing runs below the user's shell, and
// nothing of the node is left (checkNodeGone, checkWorkGone).
func checkLabEnded(t *testing.T, sh *exec.Cmd, scr *screen, wantExit int, before hostSnapshot, node nodeTrace) {
	t.Helper()
	scr.typeLine(t, `echo "make-exit=${PIPESTATUS[0]}"`)
	scr.expect(t, "make's exit status", regexp.MustCompile(`make-exit=`+strconv.Itoa(wantExit)+`\b`), 10*time.Second)
	scr.expect(t, "the user's shell", userPrompt, 10*time.Second)
	if left := descendants(sh.Process.Pid); len(left) > 0 {
		t.Errorf("processes left below the user's shell after the lab: %v", left)
	}
	checkNodeGone(t, before, node)
	checkWorkGone(t, scr.text())
}

// driveLab types line into a user's shell and uses the lab it starts as a user would.
func driveLab(t *testing.T, line, teeLog string) {
	before := hostBaseline(t)
	sh, scr := userShell(t)
	master := scr.master
	st := time.Now()
	scr.typeLine(t, line)
	scr.expect(t, "the lab booting", regexp.MustCompile(`The node `+upstreamNodeName+` is up`), 25*time.Minute)
	scr.expect(t, "the lab's shell", labPrompt, time.Minute)
	t.Logf("%q: the lab's shell answered %.0fs after the command was typed", line, time.Since(st).Seconds())

	// The bug of issue 32: the lab's shell must be the terminal's foreground process group, not stopped.
	var node nodeTrace
	waitFor(t, "the node's kubelet below the user's shell", 10*time.Second, func() (bool, string) {
		var ok bool
		node, ok = findNode(sh.Process.Pid)
		return ok, "no kubelet"
	})
	selfPidNS, _ := nsLink("self", "pid")
	if node.pidNS == selfPidNS {
		t.Fatalf("the lab's kubelet runs in this PID namespace (%s)", selfPidNS)
	}
	labShell := func() (proc, bool) {
		for _, p := range descendants(sh.Process.Pid) {
			if ns, _ := nsLink(strconv.Itoa(p.pid), "pid"); p.comm == "bash" && ns == node.pidNS {
				return p, true
			}
		}
		return proc{}, false
	}
	waitFor(t, "the lab's shell is the terminal's foreground job", 10*time.Second, func() (bool, string) {
		p, ok := labShell()
		return ok && p.state != 'T' && p.tpgid == p.pgrp, fmt.Sprintf("lab shell %+v", p)
	})
	checkNodeWasThere(t, before, node)

	scr.typeLine(t, "kubectl get nodes")
	out, m := scr.expect(t, "kubectl get nodes", regexp.MustCompile(`(?m)^(`+upstreamNodeName+`)\s+(Ready|NotReady)\s+(\S+)\s+\S+\s+(v1\.34\.\d+)`), time.Minute)
	t.Logf("kubectl get nodes: node %s, status %s, roles %s, version %s", m[1], m[2], m[3], m[4])
	scr.expect(t, "the lab's shell after kubectl get nodes", labPrompt, 30*time.Second)
	_ = out

	scr.typeLine(t, "kubectl get pods -A")
	out, _ = scr.expect(t, "kubectl get pods -A", labPrompt, time.Minute)
	pods := map[string]string{}
	for _, m := range mirrorPod.FindAllStringSubmatch(out, -1) {
		if m[4] == m[5] {
			pods[m[3]] = m[1] + "/" + m[2] + " " + m[4] + "/" + m[5]
		}
	}
	if len(pods) != 4 {
		t.Fatalf("kubectl get pods -A shows %d of the four mirror pods Running and Ready (%v):\n%s", len(pods), pods, out)
	}
	t.Logf("kubectl get pods -A: %v", pods)

	// Ctrl-C interrupts the command the lab's shell runs, and only it.
	scr.typeLine(t, "sleep 100")
	var sleeper proc
	waitFor(t, "sleep 100 as the terminal's foreground job", 10*time.Second, func() (bool, string) {
		for _, p := range descendants(sh.Process.Pid) {
			if ns, _ := nsLink(strconv.Itoa(p.pid), "pid"); p.comm == "sleep" && ns == node.pidNS && p.tpgid == p.pgrp {
				sleeper = p
				return true, ""
			}
		}
		return false, "no sleep in the foreground"
	})
	if _, err := master.Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	scr.expect(t, "the lab's shell after Ctrl-C", labPrompt, 10*time.Second)
	scr.typeLine(t, `echo "rc=$?"`)
	scr.expect(t, "sleep's exit status", regexp.MustCompile(`rc=130\b`), 10*time.Second)
	scr.expect(t, "the lab's shell", labPrompt, 10*time.Second)
	if p, ok := readProcs()[sleeper.pid]; ok && p.comm == "sleep" {
		t.Errorf("sleep (pid %d) still runs after Ctrl-C", sleeper.pid)
	}
	if p, ok := readProcs()[node.kubelet]; !ok || p.comm != "kubelet" {
		t.Fatalf("the kubelet (pid %d) is gone after Ctrl-C at a command of the lab's shell", node.kubelet)
	}
	t.Logf("Ctrl-C ended sleep (pid %d, exit 130); the kubelet (pid %d) still runs and the shell answers", sleeper.pid, node.kubelet)

	st = time.Now()
	scr.typeLine(t, "exit")
	out, _ = scr.expect(t, "the lab stopping", userPrompt, 5*time.Minute)
	t.Logf("%q: the user's shell answered %.1fs after exit was typed in the lab's shell", line, time.Since(st).Seconds())
	for _, want := range []string{"lab: the shell exited (code 0)", "--- PASS: TestLab"} {
		if !strings.Contains(out, want) {
			t.Errorf("the lab's shutdown does not say %q:\n%s", want, lastLines(out, 40))
		}
	}
	if m := regexp.MustCompile(`TIMING lab [^\n]*`).FindString(scr.text()); m != "" {
		t.Logf("%s", m)
	}
	if txt := scr.text(); strings.Contains(txt, "The node "+upstreamNodeName+" is up") {
		t.Logf("the session as the terminal showed it:\n%s", txt[strings.LastIndex(txt, "The node "+upstreamNodeName+" is up"):])
	}
	checkLabEnded(t, sh, scr, 0, before, node)

	if teeLog != "" {
		data, err := os.ReadFile(teeLog)
		if err != nil {
			t.Fatal(err)
		}
		log := string(data)
		if !strings.Contains(log, "The node "+upstreamNodeName+" is up") || !strings.Contains(log, "--- PASS: TestLab") {
			t.Errorf("%s lacks the boot or the shutdown:\n%s", teeLog, lastLines(log, 30))
		}
		if strings.Contains(log, "rc=130") {
			t.Errorf("%s holds the shell's session: the shell must use the terminal", teeLog)
		}
	}
}

// checkWorkGone: the lab's work directory (the node's disk) is removed, unless kept on purpose.
func checkWorkGone(t *testing.T, transcript string) {
	t.Helper()
	m := regexp.MustCompile(`ignition laid \S+ into (\S+)/root in`).FindStringSubmatch(transcript)
	if m == nil {
		t.Errorf("the lab's log does not say where the node's disk was")
		return
	}
	if os.Getenv("RENDER_STATIC_E2E_WORK") != "" {
		return
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lab's work directory %s is left (%v)", m[1], err)
	}
}

// stopUserShell ends what a failed test left: the lab by SIGTERM to its test binary (which stops the node and
// restores the machine), then whatever is left below the user's shell, and the shell, by PID.
func stopUserShell(t *testing.T, sh *exec.Cmd, master *os.File, scr *screen) {
	done := make(chan struct{})
	go func() { sh.Wait(); close(done) }()
	selfPidNS, _ := nsLink("self", "pid")
	for _, p := range descendants(sh.Process.Pid) {
		if ns, _ := nsLink(strconv.Itoa(p.pid), "pid"); p.comm == "e2e.test" && ns == selfPidNS {
			t.Logf("stopping the lab left running (pid %d) with SIGTERM", p.pid)
			syscall.Kill(p.pid, syscall.SIGTERM)
			deadline := time.Now().Add(3 * time.Minute)
			for time.Now().Before(deadline) {
				if q, ok := readProcs()[p.pid]; !ok || q.state == 'Z' {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	for _, p := range descendants(sh.Process.Pid) {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
	master.Write([]byte("exit\r"))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		sh.Process.Kill()
		<-done
	}
	master.Close()
	if t.Failed() {
		t.Logf("the terminal showed (last lines):\n%s", lastLines(scr.text(), 80))
	}
}

// TestLabRefusesWithoutTerminal: `make lab` with no terminal and no LAB_CMD says why and what to do, at once:
// before building or booting anything.
func TestLabRefusesWithoutTerminal(t *testing.T) {
	testtools.Tool(t, "make")
	root := moduleRoot(t)
	bin := filepath.Join(root, "bin", "e2e.test")
	stBefore, errBefore := os.Stat(bin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "lab")
	cmd.Dir, cmd.Env = root, userEnv()
	st := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(st)
	if err == nil {
		t.Fatalf("make lab without a terminal succeeded:\n%s", out)
	}
	for _, want := range []string{"standard input is not a terminal", `make lab LAB_CMD="kubectl get nodes"`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("make lab without a terminal does not say %q:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("install-test-deps")) || took > 30*time.Second {
		t.Errorf("make lab without a terminal did something before refusing (%s):\n%s", took, out)
	}
	stAfter, errAfter := os.Stat(bin)
	if (errBefore == nil) != (errAfter == nil) || (errBefore == nil && !stAfter.ModTime().Equal(stBefore.ModTime())) {
		t.Errorf("make lab without a terminal built %s", bin)
	}
	t.Logf("refused in %s (%v):\n%s", took.Round(time.Millisecond), err, out)
}

// readmeWorkload is the README's "Run a workload" commands, as a user pastes them into the lab: the first sh block
// of that section.
func readmeWorkload(t *testing.T, root string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Run a workload\n")
	if !ok {
		t.Fatal("README.md has no \"## Run a workload\" section")
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("README.md's \"Run a workload\" has no sh block")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok || !strings.Contains(block, "kubectl expose") {
		t.Fatalf("README.md's \"Run a workload\" block is not what the test runs:\n%s", block)
	}
	return block
}

// readmeWorkloadAnswer is what the README's workload block prints when the client reached the Service by name.
const readmeWorkloadAnswer = "web.default.svc.cluster.local answers"

// TestLabCommandWithoutTerminal: `make lab LAB_CMD=...` with no terminal boots the node, runs the command, prints
// its output and exit code, stops the node, and make's exit status says the command failed. The command is the
// README's: a Deployment exposed and reached by name from a pod, as a user does first in the lab.
func TestLabCommandWithoutTerminal(t *testing.T) {
	preconditions(t)
	testtools.Tool(t, "make")
	root := moduleRoot(t)
	before := hostBaseline(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	workload := readmeWorkload(t, root)
	if !strings.Contains(workload, readmeWorkloadAnswer) {
		t.Fatalf("README.md's workload block does not print %q", readmeWorkloadAnswer)
	}
	cmd := exec.CommandContext(ctx, "make", "lab", "LAB_CMD=kubectl get nodes; kubectl get pods -A; "+workload+"\nkubectl get pods -A -o wide; exit 3")
	cmd.Dir, cmd.Env = root, userEnv()
	var out bytes.Buffer
	var mu sync.Mutex
	cmd.Stdout = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	cmd.Stderr = cmd.Stdout
	// At the bound, make passes SIGTERM on to the lab, which stops the node and restores the machine.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 3 * time.Minute
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var node nodeTrace
	found, stop := make(chan struct{}), make(chan struct{})
	go func() {
		for {
			if n, ok := findNode(cmd.Process.Pid); ok {
				node = n
				close(found)
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	err := cmd.Wait()
	close(stop)
	mu.Lock()
	text := out.String()
	mu.Unlock()
	select {
	case <-found:
	default:
		t.Fatalf("no kubelet ran below make lab (%v):\n%s", err, lastLines(text, 60))
	}
	if ExitCode(err) != 2 || !strings.Contains(text, "Error 3") {
		t.Errorf("make lab with a LAB_CMD that exits 3: %v, want make's exit status 2 and its \"Error 3\":\n%s", err, lastLines(text, 30))
	}
	if !strings.Contains(text, "lab: LAB_CMD exited with code 3") {
		t.Errorf("the lab does not print LAB_CMD's exit code:\n%s", lastLines(text, 30))
	}
	if !regexp.MustCompile(`(?m)^` + upstreamNodeName + `\s+(Ready|NotReady)\s`).MatchString(text) {
		t.Errorf("LAB_CMD's kubectl get nodes output is not printed:\n%s", lastLines(text, 40))
	}
	if n := len(mirrorPod.FindAllString(text, -1)); n < 4 {
		t.Errorf("LAB_CMD's kubectl get pods -A shows %d mirror pods Running:\n%s", n, lastLines(text, 40))
	}
	if !regexp.MustCompile(`(?m)^` + upstreamNodeName + `\s+Ready\s`).MatchString(text) {
		t.Errorf("the lab's node is not Ready:\n%s", lastLines(text, 60))
	}
	if !strings.Contains(text, "\n"+readmeWorkloadAnswer) {
		t.Errorf("the README's workload did not reach its Service by name:\n%s", lastLines(text, 60))
	}
	checkNodeGone(t, before, node)
	checkWorkGone(t, text)
	if m := regexp.MustCompile(`TIMING lab [^\n]*`).FindString(text); m != "" {
		t.Logf("%s", m)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
