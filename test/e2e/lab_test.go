package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The "kaio" lab (`make lab`, hack/lab.sh): TestLab is what the user runs; lab_pty_test.go drives it the way a
// user does.

// labNoTerminal is what the lab says when nobody can type into its shell.
const labNoTerminal = `there is nobody to type into the lab's shell.
Give it a command to run instead: make lab LAB_CMD="kubectl get nodes" (it runs with no input inside the node's
namespaces; its output and exit code are printed, then the node stops)`

// labResultFile is where the inner writes LAB_CMD's exit code.
func labResultFile(spec *innerSpec) string { return filepath.Join(spec.Work, "lab-exit-code") }

// TestLab boots a render on the real node and leaves the user a shell inside the node's namespaces, with
// KUBECONFIG set to the admin kubeconfig, on the terminal the lab was started from; when the shell exits, the node
// is stopped and everything is removed. With LAB_CMD it runs that command (no input) instead of the shell. hack/lab.sh
// runs it (a test binary with the terminal attached); it never runs under `go test ./...`.
//
// A signal before the shell is up (Ctrl-C in the terminal, which goes to make's process group), SIGTERM, or the
// terminal closing (SIGHUP) kills the node's PID namespace by its init's PID and restores the machine (onHost)
// before the lab exits.
func TestLab(t *testing.T) {
	if os.Getenv("RENDER_STATIC_LAB") != "1" {
		t.Skip("the interactive lab: run make lab (hack/lab.sh)")
	}
	command := os.Getenv("LAB_CMD")
	var term *LabTerminal
	if command == "" {
		var err error
		if term, err = OpenLabTerminal(os.Stdin); err != nil {
			t.Fatalf("lab: %v: %s", err, labNoTerminal)
		}
	}
	preconditions(t)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// With `make lab | tee lab.log`, Ctrl-C also ends tee: writing to its pipe then must fail, not kill the lab in
	// the middle of its cleanup. (A handler, not SIG_IGN: that would be inherited by the node and the shell.)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var interrupted atomic.Value
	go func() {
		select {
		case s := <-sigs:
			interrupted.Store(s)
			fmt.Fprintf(os.Stderr, "\nlab: %v: stopping the node and restoring the machine (this takes a few seconds)\n", s)
			cancel()
		case <-ctx.Done():
		}
	}()

	c := upstreamCase{name: "lab", installConfig: os.Getenv("RENDER_STATIC_LAB_INSTALL_CONFIG"), nodeIPs: os.Getenv("RENDER_STATIC_LAB_NODE_IP")}
	if c.installConfig == "" {
		c = upstreamCases[0]
		c.worker = "" // the lab is the control-plane node alone
	}
	tm := newTimings("lab (outer)")
	var spec *innerSpec
	tm.step("prepare", func() { spec = prepareUpstreamCase(t, renderStaticCLI(t), binaries(t), c) })
	if s := interrupted.Load(); s != nil {
		t.Fatalf("lab: interrupted (%v) before the node started; nothing ran on the machine", s)
	}
	spec.Phase = "lab"
	spec.LabCommand = command
	spec.LabTerminal = term != nil
	var err error
	tm.step("node", func() {
		err = onHost(t, spec, func(specPath string) error {
			cmd, err := InnerCommand(ctx, "TestInner", specPath, 24*time.Hour)
			if err != nil {
				return err
			}
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if term != nil {
				cmd.Stdin = os.Stdin
			}
			err = cmd.Run()
			if term != nil {
				if gerr := term.GiveBack(); gerr != nil {
					t.Errorf("lab: %v", gerr)
				}
			}
			return err
		})
	})
	t.Log(tm.String())
	if s := interrupted.Load(); s != nil {
		t.Fatalf("lab: interrupted (%v): the node was stopped (its PID namespace killed by its init's PID) and the machine restored", s)
	}
	if err != nil {
		t.Fatalf("lab: %v (logs: %s)", err, filepath.Join(spec.Work, spec.Phase, "logs"))
	}
	if command != "" {
		code, err := os.ReadFile(labResultFile(spec))
		if err != nil {
			t.Fatalf("lab: LAB_CMD left no exit code: %v", err)
		}
		if p := os.Getenv("RENDER_STATIC_LAB_RESULT"); p != "" {
			if err := os.WriteFile(p, code, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// innerLab: the node booted and the first-boot apply done, then LAB_CMD or an interactive shell in the node's
// namespaces.
func innerLab(t *testing.T, spec *innerSpec) {
	pipe := make(chan os.Signal, 1) // as in TestLab: a broken pipe must not kill the node's init
	signal.Notify(pipe, syscall.SIGPIPE)
	tm := newTimings("lab")
	n := bootNode(t, spec, tm)
	cs, _ := clients(t, spec.Kubeconfig)
	ak := startAiokube(t, n) // with the kubelet, as its unit starts
	tm.add("kubelet->readyz", waitAPI(t, n, cs, 4*time.Minute))
	startCSRApprover(t, n)
	tm.add("kubelet->mirror-pods-ready", waitMirrorPods(t, n, cs, 4*time.Minute))
	tm.step("aiokube", func() {
		if log, err := ak.wait(t, 8*time.Minute); err != nil {
			t.Logf("aiokube: %v (log: %s):\n%s", err, filepath.Join(n.LogDir(), "aiokube.log"), log)
		}
	})
	env := append(filteredEnv(EnvInner, EnvHostNetns, EnvHostMntns, EnvHostPidns, "RENDER_STATIC_LAB", "RENDER_STATIC_LAB_RESULT", "LAB_CMD"),
		"KUBECONFIG="+spec.Kubeconfig)
	dir := moduleRoot(t) // where the user started the lab

	if spec.LabCommand != "" {
		fmt.Printf("\nThe node %s is up (logs: %s); KUBECONFIG=%s.\nlab: running LAB_CMD (no input): %s\n",
			n.NodeName, n.LogDir(), spec.Kubeconfig, spec.LabCommand)
		cmd := exec.Command("/bin/bash", "-c", spec.LabCommand)
		cmd.Stdout, cmd.Stderr, cmd.Env, cmd.Dir = os.Stdout, os.Stderr, env, dir
		st := time.Now()
		code := ExitCode(cmd.Run())
		tm.add("command", time.Since(st))
		fmt.Printf("lab: LAB_CMD exited with code %d; stopping the node\n", code)
		if err := os.WriteFile(labResultFile(spec), []byte(strconv.Itoa(code)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}

	// The shell reads and writes the controlling terminal itself (/dev/tty), whatever the lab's standard output
	// is: with `make lab | tee lab.log` the log gets the boot and the shutdown, the terminal the session.
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the lab's controlling terminal: %v", err)
	}
	defer tty.Close()
	rc := filepath.Join(spec.Work, "lab.bashrc")
	// --rcfile: the user's ~/.bashrc, then the lab's prompt (Debian's /etc/bash.bashrc sets PS1 before it).
	if err := os.WriteFile(rc, []byte("# the lab's shell (test/e2e/lab_test.go)\n[ -f ~/.bashrc ] && . ~/.bashrc\n"+
		"PS1='[kaio "+n.NodeName+"] \\w\\$ '\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("\nThe node %s is up (logs: %s). This shell runs inside its network, mount and PID namespaces;\n"+
		"KUBECONFIG=%s. Try: kubectl get nodes; kubectl get pods -A.\n"+
		"Exit the shell (exit or Ctrl-D) to stop the node and clean up.\n\n", n.NodeName, n.LogDir(), spec.Kubeconfig)
	sh := exec.Command("/bin/bash", "--rcfile", rc, "-i")
	sh.Stdin, sh.Stdout, sh.Stderr, sh.Env, sh.Dir = tty, tty, tty, env, dir
	// Its own process group, made the terminal's foreground group: job control works in it, and Ctrl-C goes to
	// the command it runs, not to the lab.
	sh.SysProcAttr = LabShellAttr(tty)
	st := time.Now()
	code := ExitCode(sh.Run())
	tm.add("shell", time.Since(st))
	fmt.Printf("lab: the shell exited (code %d); stopping the node and cleaning up\n", code)
}
