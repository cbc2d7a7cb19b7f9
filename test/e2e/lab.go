package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// The lab's terminal. `make lab` runs as a job of the user's shell: make, hack/lab.sh and the outer test binary
// are in the process group the terminal has in its foreground. The node runs in a test binary re-executed in new
// namespaces (InnerCommand: its own process group, PID 1 of a new PID namespace), and the lab's shell is that
// binary's child. For the shell to read the terminal, its process group must be the terminal's foreground group:
// the inner gives it the terminal as it starts (LabShellAttr: tcsetpgrp in the child, with signals blocked, as
// Go does for Foreground). It cannot give the terminal back afterwards, since from its PID namespace the user's
// process groups have no number; the outer, still in the host's PID namespace and in the group that had the
// terminal, does (LabTerminal.GiveBack).

// LabTerminal is the controlling terminal the lab hands to its shell, and the process group it gives it back to.
type LabTerminal struct {
	fd   int
	pgrp int
}

// ErrNoTerminal is returned by OpenLabTerminal when standard input is not a terminal at all.
var ErrNoTerminal = errors.New("standard input is not a terminal")

// OpenLabTerminal checks that f (the lab's standard input) is this process's controlling terminal and that this
// process is in the terminal's foreground process group (a foreground job, not `make lab &`), and remembers that
// group.
func OpenLabTerminal(f *os.File) (*LabTerminal, error) {
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return nil, ErrNoTerminal
	}
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil {
		return nil, fmt.Errorf("standard input is a terminal but not this session's controlling terminal: %w", err)
	}
	if own := syscall.Getpgrp(); own != pgrp {
		return nil, fmt.Errorf("the lab runs in the background (process group %d; the terminal's foreground group is %d): run it in the foreground", own, pgrp)
	}
	return &LabTerminal{fd: fd, pgrp: pgrp}, nil
}

// GiveBack makes the process group that had the terminal when the lab started (make's) its foreground group
// again, once the lab's shell has exited. This process is then in a background group, so SIGTTOU (which would
// stop it) is ignored around the call, as a shell does when it takes the terminal back from a job.
func (lt *LabTerminal) GiveBack() error {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	if err := unix.IoctlSetPointerInt(lt.fd, unix.TIOCSPGRP, lt.pgrp); err != nil {
		return fmt.Errorf("giving the terminal back to process group %d: %w", lt.pgrp, err)
	}
	return nil
}

// LabShellAttr starts a process (the lab's shell) in a process group of its own that is the foreground group of
// the terminal tty, which is the starting process's descriptor of it; the child sets it before it execs, with
// every signal blocked, so that it is not stopped by SIGTTOU for doing so from a background group.
func LabShellAttr(tty *os.File) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: int(tty.Fd())}
}

// ExitCode is a finished command's exit code: 128+N for a command killed by signal N, as a shell reports it;
// -1 when it could not run.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
