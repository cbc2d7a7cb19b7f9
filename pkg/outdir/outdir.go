// Package outdir owns an output directory (a render's --dir, a fleet site's folder) as a whole: its lock (one
// writer at a time, readers under a shared lock), the fresh tree beside it that a run fills (with pkg/export,
// which writes the files) and its exchange with the old one in one renameat2, the marker that says render-static
// wrote it, and the repair of what killed runs left.
package outdir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/render-static/render-static/internal/faultpoint"
	"github.com/render-static/render-static/pkg/export"
)

// An output directory (a render's --dir, a fleet site's folder) is the only copy of a cluster's keys, so it is
// written like a database:
//
//   - One writer at a time. A run that writes it (render, renew, a fleet's site) holds an exclusive lock for the
//     whole run (Lock), taken before it reads the state the directory holds; a second writer is refused (after a
//     second or two), naming the process that holds it. The lock is an open file description lock (fcntl
//     F_OFD_SETLK: released by the kernel when the process ends, however it ends) on byte 0 of ".<base>.lock"
//     beside the directory: a file inside the directory would not do, as the directory is replaced by another one.
//     The last process out removes the lock file (when it can take both bytes at once, nobody else holds it); a
//     process that locked a file which was removed meanwhile finds it is no longer the one at the path, and locks
//     the new one instead.
//   - Never a moment without the directory. The new output is filled in ".<base>.tmp-*" beside it, made durable,
//     then exchanged with the old one in one renameat2(RENAME_EXCHANGE); the old tree, now under the temporary
//     name, is removed afterwards. Only where the kernel or file system cannot exchange (said in a log line) is
//     the old output first renamed aside (".<base>.old-*") and the new one renamed in, and a crash between the two
//     renames is repaired by the next writer, which puts the old output back.
//   - Readers (certs, conformance) hold a shared lock on byte 1 while they read; the writer takes byte 1
//     exclusively only around the exchange, so a reader never reads half of one tree and half of another.
//   - Leftovers of runs that were killed (".<base>.tmp-*", ".<base>.old-*", which hold keys) are removed by the
//     next writer, under the lock, before it writes anything; a run removes its own before it returns.

// Logf receives the notices of the output writer (a fallback, a repair, leftovers removed): the command prints
// them on stderr.
var Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// lockWait bounds how long the writer waits for readers before the exchange, and a reader for the exchange.
var lockWait = 2 * time.Minute

// Lock is an output directory held for writing by this process.
type Lock struct {
	dest, parent, base string
	f                  *os.File
}

// LockedError says that another run holds the output directory.
type LockedError struct {
	Dir    string
	Holder string // what the holder wrote into the lock file: its PID, command and start time
}

func (e *LockedError) Error() string {
	h := e.Holder
	if h == "" {
		h = "a process that has not said which yet"
	}
	return fmt.Sprintf("%s is being written by another run (%s); try again when it has finished", e.Dir, h)
}

// LockPath is the lock file of the output directory dest.
func LockPath(dest string) string {
	dest = filepath.Clean(dest)
	return filepath.Join(filepath.Dir(dest), "."+filepath.Base(dest)+".lock")
}

// CheckDest checks that dest can be an output directory: a path whose parent is a directory, which is missing,
// empty, a directory this package wrote (it holds MarkerFile), and nothing else. It writes nothing.
func CheckDest(dest string) error {
	_, _, err := checkDest(dest)
	return err
}

func checkDest(dest string) (parent, base string, err error) {
	if dest == "" {
		return "", "", errors.New("empty path")
	}
	dest = filepath.Clean(dest)
	parent, base = filepath.Dir(dest), filepath.Base(dest)
	if base == "." || base == ".." || base == string(filepath.Separator) {
		return "", "", fmt.Errorf("%q cannot be an output directory: name a directory to create or replace, such as ./aio", dest)
	}
	if st, err := os.Stat(parent); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("parent directory %s does not exist", parent)
		}
		return "", "", err
	} else if !st.IsDir() {
		return "", "", fmt.Errorf("parent %s is not a directory", parent)
	}
	if _, _, err := checkOutputDest(dest); err != nil {
		return "", "", err
	}
	return parent, base, nil
}

// LockDir takes the output directory dest for writing (command says by what, for a run that finds it held): it
// refuses a dest that CheckDest refuses, refuses at once when another run holds it (a *LockedError), and repairs
// what runs killed on it left behind. Release gives it back.
func LockDir(dest, command string) (*Lock, error) {
	parent, base, err := checkDest(dest)
	if err != nil {
		return nil, err
	}
	l := &Lock{dest: filepath.Clean(dest), parent: parent, base: base}
	f, err := lockFile(LockPath(dest), unix.F_WRLCK, 0, writerWait)
	if err != nil {
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			holder, _ := os.ReadFile(LockPath(dest))
			return nil, &LockedError{Dir: dest, Holder: strings.TrimSpace(string(holder))}
		}
		return nil, fmt.Errorf("locking %s: %w", dest, err)
	}
	l.f = f
	// Who holds it, for a run that finds it held (read without a lock: at worst it reads the previous holder's).
	info := fmt.Sprintf("PID %d, render-static %s, since %s", os.Getpid(), command, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(info+"\n"), 0)
	}
	faultpoint.Kill("locked")
	if err := l.repair(); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// writerWait is how long a writer waits for the directory before it is refused: long enough for a reader that is
// removing the lock file as it leaves, far shorter than a render.
var writerWait = 2 * time.Second

// lockFile opens (creating it) the lock file at path and locks one byte at offset, waiting at most wait; it returns
// the file once the lock is on the file that is at path (the last holder may have removed the one it opened).
func lockFile(path string, typ int16, offset int64, wait time.Duration) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, err
		}
		if err := ofdLock(f, typ, offset, wait > 0, wait); err != nil {
			f.Close()
			return nil, err
		}
		if atPath(f, path) {
			return f, nil
		}
		f.Close()
		if attempt == 100 {
			return nil, fmt.Errorf("%s keeps being replaced", path)
		}
	}
}

// atPath says whether f is the file at path.
func atPath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// unlock gives a lock file back, removing it when nobody else holds it: both bytes taken exclusively, at once.
func unlock(f *os.File, path string) {
	if ofdLock(f, unix.F_WRLCK, 1, false, 0) == nil && ofdLock(f, unix.F_WRLCK, 0, false, 0) == nil && atPath(f, path) {
		_ = os.Remove(path)
	}
	_ = f.Close() // closing the last descriptor of the description releases its locks
}

// Dir is the locked output directory.
func (l *Lock) Dir() string { return l.dest }

// Release gives the output directory back.
func (l *Lock) Release() {
	if l != nil && l.f != nil {
		unlock(l.f, LockPath(l.dest))
		l.f = nil
	}
}

// leftovers are the temporary and aside trees of earlier runs on this directory.
func (l *Lock) leftovers() (tmps, olds []string, err error) {
	entries, err := os.ReadDir(l.parent)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		switch n := e.Name(); {
		case strings.HasPrefix(n, "."+l.base+".tmp-"):
			tmps = append(tmps, filepath.Join(l.parent, n))
		case strings.HasPrefix(n, "."+l.base+".old-"):
			olds = append(olds, filepath.Join(l.parent, n))
		}
	}
	return tmps, olds, nil
}

// repair puts back an output that a run killed between the fallback's two renames left aside, and removes what
// earlier runs left: temporary trees (a half-filled new output, or an old one exchanged out) and aside copies.
func (l *Lock) repair() error {
	tmps, olds, err := l.leftovers()
	if err != nil {
		return fmt.Errorf("checking %s for leftovers of earlier runs: %w", l.dest, err)
	}
	if _, err := os.Lstat(l.dest); errors.Is(err, fs.ErrNotExist) && len(olds) > 0 {
		// The fallback moved the previous output aside and was killed before the new one was in: the previous
		// output is the directory's content. Several (runs killed there again and again, each renaming the one
		// put back aside): the newest.
		sort.Slice(olds, func(i, j int) bool { return modTime(olds[i]).After(modTime(olds[j])) })
		for i, o := range olds {
			if _, err := os.Lstat(filepath.Join(o, MarkerFile)); err != nil {
				continue
			}
			if err := renameDir(o, l.dest); err != nil {
				return fmt.Errorf("putting back the previous output of %s from %s: %w", l.dest, o, err)
			}
			if err := syncPath(l.parent); err != nil {
				return err
			}
			Logf("%s: put back the previous output from %s, where a run killed while replacing it had left it", l.dest, o)
			olds = append(olds[:i:i], olds[i+1:]...)
			break
		}
	}
	all := append(tmps, olds...)
	for _, d := range all {
		if err := removeAll(d); err != nil {
			return fmt.Errorf("removing %s, left by an earlier run on %s: %w", d, l.dest, err)
		}
	}
	if len(all) > 0 {
		Logf("%s: removed %d %s left by earlier runs that were killed", l.dest, len(all), plural(len(all), "temporary tree", "temporary trees"))
	}
	return nil
}

func modTime(p string) time.Time {
	st, err := os.Lstat(p)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ReadLock holds the output directory dest for reading until release is called: no writer exchanges it meanwhile
// (a writer waits at most two minutes for its readers). A directory whose lock file cannot be made (a read-only
// place, where no writer can work either) is read without a lock.
func ReadLock(dest string) (release func(), err error) {
	if _, err := os.Lstat(dest); errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil // nothing to read: the reader says so itself
	}
	path := LockPath(dest)
	f, err := lockFile(path, unix.F_RDLCK, 1, lockWait)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return func() {}, nil
		}
		return nil, fmt.Errorf("locking %s for reading: %w", dest, err)
	}
	return func() { unlock(f, path) }, nil
}

// ofdLock takes an open file description lock of type typ on one byte at offset: at once, or, with wait, retrying
// until it is free or the bound has passed.
func ofdLock(f *os.File, typ int16, offset int64, wait bool, bound time.Duration) error {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: offset, Len: 1}
	deadline := time.Now().Add(bound)
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if err == nil || !wait || !(errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES)) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still held after %s: %w", bound, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Replace writes a new output in place of the directory: fill fills a fresh temporary directory beside it, the
// marker file is added, everything is made durable, and the new tree is exchanged with the old one (or renamed
// in, when there is none). On any failure, or when ctx is done before the exchange, the temporary directory is
// removed and the directory is left exactly as it was. An existing directory keeps its permission bits; a new one
// is 0755. While fill runs, the unchanged files export.WriteFile writes are hard links to the previous output's
// (export.ReuseDuring).
func (l *Lock) Replace(ctx context.Context, fill func(tmpDir string) error) (err error) {
	return l.replace(ctx, fill, "")
}

// ReplaceKeeping is Replace keeping the previous output at keep (a path beside the directory that does not exist),
// 0700, instead of removing it: under the lock, the previous output is renamed to keep and the new one renamed in,
// two renames each atomic; a crash between them leaves the directory missing and the previous output whole at keep
// (nothing is removed). With no previous output, it is Replace.
func (l *Lock) ReplaceKeeping(ctx context.Context, keep string, fill func(tmpDir string) error) error {
	if keep == "" || filepath.Dir(filepath.Clean(keep)) != filepath.Clean(l.parent) {
		return fmt.Errorf("writing output %s: %q is not a path beside it to keep the previous output at", l.dest, keep)
	}
	return l.replace(ctx, fill, keep)
}

func (l *Lock) replace(ctx context.Context, fill func(tmpDir string) error, keep string) (err error) {
	if l == nil || l.f == nil {
		return errors.New("writing output: the directory is not locked")
	}
	dest, parent := l.dest, l.parent
	exists, destMode, err := checkOutputDest(dest)
	if err != nil {
		return fmt.Errorf("writing output %s: %w", dest, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+l.base+".tmp-")
	if err != nil {
		return fmt.Errorf("writing output %s: creating a temporary directory: %w", dest, err)
	}
	defer func() {
		if err != nil {
			_ = removeAll(tmp)
			err = fmt.Errorf("%w; %s", err, leftAsItWas(dest, exists))
		}
	}()
	if exists {
		defer export.ReuseDuring(tmp, dest)()
	}
	syncer, err := beginSync(tmp)
	if err != nil {
		return fmt.Errorf("writing output %s: %w", dest, err)
	}
	defer syncer.close()
	if err := fill(tmp); err != nil {
		return fmt.Errorf("writing output %s: %w", dest, err)
	}
	if err := export.WriteFile(filepath.Join(tmp, MarkerFile), 0o644, []byte(markerContents)); err != nil {
		return fmt.Errorf("writing output %s: %w", dest, err)
	}
	if !exists {
		destMode = 0o755
	}
	if err := os.Chmod(tmp, destMode); err != nil {
		return fmt.Errorf("writing output %s: %w", dest, err)
	}
	faultpoint.Kill("filled")
	if err := syncer.sync(); err != nil {
		return fmt.Errorf("writing output %s: syncing: %w", dest, err)
	}
	faultpoint.Kill("synced")
	if err := ctx.Err(); err != nil {
		return err
	}
	// Readers out (bounded) while the trees change places.
	if err := ofdLock(l.f, unix.F_WRLCK, 1, true, lockWait); err != nil {
		return fmt.Errorf("writing output %s: waiting for its readers: %w", dest, err)
	}
	defer func() { _ = ofdLock(l.f, unix.F_UNLCK, 1, false, 0) }()

	exists, _, err = checkOutputDest(dest) // a writer that ignores the lock may have changed it
	if err != nil {
		return fmt.Errorf("writing output %s: %w", dest, err)
	}
	if exists && keep != "" {
		if _, err := os.Lstat(keep); err == nil {
			return fmt.Errorf("writing output %s: %s exists: the previous output is kept there only if nothing is", dest, keep)
		}
		if err := renameDir(dest, keep); err != nil {
			return fmt.Errorf("writing output %s: keeping the previous output as %s: %w", dest, keep, err)
		}
		faultpoint.Kill("kept")
		if err := os.Chmod(keep, 0o700); err != nil {
			if rerr := renameDir(keep, dest); rerr != nil {
				return fmt.Errorf("writing output %s: making %s 0700: %w; the previous output is kept whole there (putting it back failed: %v)", dest, keep, err, rerr)
			}
			return fmt.Errorf("writing output %s: making %s 0700: %w", dest, keep, err)
		}
		if err := renameDir(tmp, dest); err != nil {
			if rerr := renameDir(keep, dest); rerr != nil {
				return fmt.Errorf("writing output %s: %w; the previous output is kept whole as %s (putting it back failed: %v)", dest, err, keep, rerr)
			}
			return fmt.Errorf("writing output %s: %w", dest, err)
		}
		return syncPath(parent)
	}
	if !exists || isEmptyDir(dest) {
		// rename(2) atomically replaces an empty directory, and fails if it is not empty (any more).
		if err := renameDir(tmp, dest); err != nil {
			return fmt.Errorf("writing output %s: %w", dest, err)
		}
		return syncPath(parent)
	}
	if err := exchangeDirs(tmp, dest); err == nil {
		faultpoint.Kill("exchanged")
		if err := syncPath(parent); err != nil {
			return fmt.Errorf("output %s written, but making it durable failed: %w", dest, err)
		}
		l.removeOld(tmp)
		return nil
	} else if !exchangeUnsupported(err) {
		return fmt.Errorf("writing output %s: %w", dest, err)
	}
	Logf("%s: this kernel or file system cannot exchange two directories (renameat2 RENAME_EXCHANGE); replacing it with two renames, which a crash between them leaves repaired by the next run", dest)
	old, err := os.MkdirTemp(parent, "."+l.base+".old-")
	if err != nil {
		return fmt.Errorf("writing output %s: reserving a name for the previous output: %w", dest, err)
	}
	if err := renameDir(dest, old); err != nil {
		_ = os.Remove(old)
		return fmt.Errorf("writing output %s: moving the previous output aside: %w", dest, err)
	}
	faultpoint.Kill("aside")
	if err := renameDir(tmp, dest); err != nil {
		if rerr := renameDir(old, dest); rerr != nil {
			return fmt.Errorf("writing output %s: %w; putting the previous output back from %s also failed (the next run puts it back): %v", dest, err, old, rerr)
		}
		return fmt.Errorf("writing output %s: %w", dest, err)
	}
	if err := syncPath(parent); err != nil {
		return fmt.Errorf("output %s written, but making it durable failed: %w", dest, err)
	}
	l.removeOld(old)
	return nil
}

// removeOld removes the previous output once the new one is in place; what it cannot remove, the next run does.
func (l *Lock) removeOld(old string) {
	if err := removeAll(old); err != nil {
		Logf("%s: written; the previous output at %s could not be removed (%v): the next run removes it", l.dest, old, err)
	}
	faultpoint.Kill("removed")
}

func leftAsItWas(dest string, existed bool) string {
	if existed {
		return dest + " was left as it was"
	}
	return dest + " was not created"
}

// exchangeDirs is exchange; tests replace it to take the fallback.
var exchangeDirs = exchange

// exchange swaps the directories a and b in one step (renameat2 RENAME_EXCHANGE).
func exchange(a, b string) error {
	if faultpoint.Set("no-exchange") {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: unix.EINVAL}
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
	return nil
}

// exchangeUnsupported: renameat2 is missing (ENOSYS) or the file system does not exchange (EINVAL).
func exchangeUnsupported(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL)
}

// LockPID is the PID a lock file names (0 when it names none): tests check who holds a directory.
func LockPID(dest string) int {
	b, err := os.ReadFile(LockPath(dest))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 || f[0] != "PID" {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(f[1], ","))
	return n
}
