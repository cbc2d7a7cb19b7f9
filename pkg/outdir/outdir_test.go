package outdir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/render-static/render-static/internal/testkit/treetest"
	"github.com/render-static/render-static/pkg/export"
)

// writeOut replaces dest with one file, name, holding contents, through a held lock.
func writeOut(t *testing.T, l *Lock, name, contents string) error {
	t.Helper()
	return l.Replace(context.Background(), func(tmp string) error {
		return export.WriteFile(filepath.Join(tmp, name), 0o600, []byte(contents))
	})
}

// captureNotices collects Logf's notices for the test.
func captureNotices(t *testing.T) *[]string {
	var notices []string
	old := Logf
	t.Cleanup(func() { Logf = old })
	Logf = func(f string, a ...any) { notices = append(notices, fmt.Sprintf(f, a...)) }
	return &notices
}

func TestLockDirRefusesASecondWriter(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "out")
	l, err := LockDir(dest, "render")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = LockDir(dest, "renew")
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second LockDir: %v, want a LockedError", err)
	}
	if want := fmt.Sprintf("PID %d, render-static render", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal %q does not name the holder (%s)", err, want)
	}
	if LockPID(dest) != os.Getpid() {
		t.Errorf("LockPID = %d, want %d", LockPID(dest), os.Getpid())
	}
	// The same path spelled another way is the same directory, and the same lock.
	rel, err := filepath.Rel(mustGetwd(t), dest)
	if err == nil {
		if _, err := LockDir(rel, "renew"); !errors.As(err, &le) {
			t.Errorf("LockDir(%s): %v, want a LockedError", rel, err)
		}
	}
	// WriteDirAtomic is a writer too.
	if err := WriteDirAtomic(dest, func(string) error { return nil }); !errors.As(err, &le) {
		t.Errorf("WriteDirAtomic while locked: %v, want a LockedError", err)
	}
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused writer created %s", dest)
	}
	l.Release()
	l2, err := LockDir(dest, "renew")
	if err != nil {
		t.Fatalf("LockDir after Release: %v", err)
	}
	l2.Release()
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func TestLockDirRefusesBadDestinations(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign")
	if err := os.MkdirAll(filepath.Join(foreign, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for dest, want := range map[string]string{
		".":                                "cannot be an output directory",
		"/":                                "cannot be an output directory",
		file:                               "is not a directory (a regular file)",
		fifo:                               "is not a directory (a named pipe (FIFO))",
		foreign:                            "without the .render-static marker",
		filepath.Join(dir, "no", "parent"): "does not exist",
	} {
		if _, err := LockDir(dest, "render"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LockDir(%s): %v, want an error saying %q", dest, err, want)
		}
	}
}

func TestReplaceLeavesNoLeftovers(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	l, err := LockDir(dest, "render")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	for i := range 3 {
		if err := writeOut(t, l, "v", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		if got := treetest.ReadFile(t, filepath.Join(dest, "v")); got != fmt.Sprint(i) {
			t.Errorf("v = %q after write %d", got, i)
		}
		if got := entries(t, parent); !slices.Equal(got, []string{".out.lock", "out"}) {
			t.Errorf("after write %d the parent holds %v, want out and its lock file (held)", i, got)
		}
	}
	// A cancelled run leaves the directory as it was.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = l.Replace(ctx, func(tmp string) error { return export.WriteFile(filepath.Join(tmp, "v"), 0o600, []byte("cancelled")) })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "was left as it was") {
		t.Errorf("cancelled Replace: %v", err)
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "v")); got != "2" {
		t.Errorf("v = %q after a cancelled replace, want 2", got)
	}
	if got := entries(t, parent); !slices.Equal(got, []string{".out.lock", "out"}) {
		t.Errorf("after a cancelled replace the parent holds %v", got)
	}
	l.Release()
	if got := entries(t, parent); !slices.Equal(got, []string{"out"}) {
		t.Errorf("after the release the parent holds %v: the last one out removes the lock file", got)
	}
}

// The last one out removes the lock file; a process that opened it before then finds its lock is on a file no
// longer at the path, and locks the new one (lockFile), so two runs never hold two files.
func TestLockFileRemovedByTheLastOneOut(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "out")
	l, err := LockDir(dest, "render")
	if err != nil {
		t.Fatal(err)
	}
	release, err := ReadLock(dest) // missing directory: no lock needed
	if err != nil {
		t.Fatal(err)
	}
	release()
	early, err := os.OpenFile(LockPath(dest), os.O_RDWR, 0) // a second run that opened the file, not yet locked
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	l.Release()
	if _, err := os.Lstat(LockPath(dest)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock file outlived its last holder: %v", err)
	}
	if err := ofdLock(early, unix.F_WRLCK, 0, false, 0); err != nil {
		t.Fatal(err)
	}
	if atPath(early, LockPath(dest)) {
		t.Fatal("a lock on the removed file counts as the directory's")
	}
	l2, err := LockDir(dest, "renew") // takes the new file, whatever the early one holds
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release()
	if _, err := LockDir(dest, "render"); err == nil {
		t.Fatal("a second writer locked the new file")
	}
	// A reader keeps the file while it reads; the writer leaving does not remove it, the reader does.
	if err := WriteDirAtomic(filepath.Join(filepath.Dir(dest), "other"), func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(filepath.Dir(dest), "other")
	release, err = ReadLock(other)
	if err != nil {
		t.Fatal(err)
	}
	w, err := LockDir(other, "render")
	if err != nil {
		t.Fatal(err)
	}
	w.Release()
	if _, err := os.Lstat(LockPath(other)); err != nil {
		t.Fatalf("the writer removed the lock file a reader holds: %v", err)
	}
	release()
	if _, err := os.Lstat(LockPath(other)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the last reader left the lock file: %v", err)
	}
}

func TestLockDirRepairsWhatKilledRunsLeft(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	if err := WriteDirAtomic(dest, func(tmp string) error { return export.WriteFile(filepath.Join(tmp, "v"), 0o600, []byte("old")) }); err != nil {
		t.Fatal(err)
	}
	// A run killed while filling, and one killed after the exchange (the old tree under the temporary name).
	for _, n := range []string{".out.tmp-1", ".out.tmp-2"} {
		if err := os.MkdirAll(filepath.Join(parent, n, "state"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Another directory's leftovers are not this one's.
	if err := os.Mkdir(filepath.Join(parent, ".other.tmp-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	notices := captureNotices(t)
	l, err := LockDir(dest, "render")
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if got := entries(t, parent); !slices.Equal(got, []string{".other.tmp-1", "out"}) {
		t.Errorf("after the repair the parent holds %v", got)
	}
	if len(*notices) != 1 || !strings.Contains((*notices)[0], "removed 2 temporary trees") {
		t.Errorf("notices %q", *notices)
	}

	// The fallback killed between its renames: no out, the previous output aside (and the new one complete).
	if err := os.Rename(dest, filepath.Join(parent, ".out.old-1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(parent, ".out.tmp-3"), 0o755); err != nil {
		t.Fatal(err)
	}
	*notices = nil
	l, err = LockDir(dest, "render")
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if got := treetest.ReadFile(t, filepath.Join(dest, "v")); got != "old" {
		t.Errorf("v = %q after the repair, want the previous output's", got)
	}
	if got := entries(t, parent); !slices.Equal(got, []string{".other.tmp-1", "out"}) {
		t.Errorf("after the repair the parent holds %v", got)
	}
	if len(*notices) != 2 || !strings.Contains((*notices)[0], "put back the previous output") {
		t.Errorf("notices %q", *notices)
	}
}

func TestReplaceFallbackWithoutExchange(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	defer func(f func(a, b string) error) { exchangeDirs = f }(exchangeDirs)
	exchangeDirs = func(a, b string) error { return &os.LinkError{Op: "exchange", Old: a, New: b, Err: unix.EINVAL} }
	notices := captureNotices(t)
	for _, v := range []string{"1", "2"} {
		if err := WriteDirAtomic(dest, func(tmp string) error { return export.WriteFile(filepath.Join(tmp, "v"), 0o600, []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "v")); got != "2" {
		t.Errorf("v = %q", got)
	}
	if got := entries(t, parent); !slices.Equal(got, []string{"out"}) {
		t.Errorf("the parent holds %v", got)
	}
	if len(*notices) != 1 || !strings.Contains((*notices)[0], "cannot exchange") {
		t.Errorf("notices %q, want one saying the fallback is used", *notices)
	}
}

func TestReadLockHoldsOffTheExchange(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	if err := WriteDirAtomic(dest, func(tmp string) error { return export.WriteFile(filepath.Join(tmp, "v"), 0o600, []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	release, err := ReadLock(dest)
	if err != nil {
		t.Fatal(err)
	}
	l, err := LockDir(dest, "render") // a writer may start while it is read
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	done := make(chan error, 1)
	go func() { done <- writeOut(t, l, "v", "2") }()
	select {
	case err := <-done:
		t.Fatalf("the writer replaced the directory while it was read (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "v")); got != "1" {
		t.Errorf("v = %q while read", got)
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the writer did not finish after the reader left")
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "v")); got != "2" {
		t.Errorf("v = %q after the write", got)
	}

	// A writer waits for its readers only so long.
	release, err = ReadLock(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	defer func(d time.Duration) { lockWait = d }(lockWait)
	lockWait = 200 * time.Millisecond
	if err := writeOut(t, l, "v", "3"); err == nil || !strings.Contains(err.Error(), "waiting for its readers") {
		t.Errorf("a write held off past its bound: %v", err)
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "v")); got != "2" {
		t.Errorf("v = %q", got)
	}
}

// TestReplaceKeeping: the previous output is kept whole beside the directory (0700) while the new one takes its
// place; a keep path that is not beside the directory, or that exists, is refused and nothing changes; a second
// run of the same lock leaves no leftovers either way.
func TestReplaceKeeping(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	l, err := LockDir(dest, "render")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := writeOut(t, l, "v", "old"); err != nil {
		t.Fatal(err)
	}
	fill := func(tmp string) error { return export.WriteFile(filepath.Join(tmp, "v"), 0o600, []byte("new")) }
	for _, bad := range []string{filepath.Join(t.TempDir(), "elsewhere"), "", dest} {
		if err := l.ReplaceKeeping(context.Background(), bad, fill); err == nil {
			t.Errorf("keep %q: no error", bad)
		}
	}
	taken := filepath.Join(parent, "out.old-taken")
	if err := os.Mkdir(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.ReplaceKeeping(context.Background(), taken, fill); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("keep at an existing path: %v", err)
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "v")); got != "old" {
		t.Errorf("v = %q after refused keeps, want old", got)
	}
	keep := filepath.Join(parent, "out.old-x-1")
	if err := l.ReplaceKeeping(context.Background(), keep, fill); err != nil {
		t.Fatal(err)
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "v")); got != "new" {
		t.Errorf("v = %q, want new", got)
	}
	if got := treetest.ReadFile(t, filepath.Join(keep, "v")); got != "old" {
		t.Errorf("kept v = %q, want old", got)
	}
	if _, err := os.Stat(filepath.Join(keep, MarkerFile)); err != nil {
		t.Errorf("the kept tree lost its marker: %v", err)
	}
	if info, err := os.Stat(keep); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("kept tree: %v, mode %v, want 0700", err, info.Mode().Perm())
	}
	if got := entries(t, parent); !slices.Equal(got, []string{".out.lock", "out", "out.old-taken", "out.old-x-1"}) {
		t.Errorf("the parent holds %v", got)
	}
}
