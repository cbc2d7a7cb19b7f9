package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/render-static/render-static/internal/inputfile"
)

// noFollow makes WriteFile refuse to write through a symlink.
const noFollow = syscall.O_NOFOLLOW

// MarkerFile is the file WriteDirAtomic puts at the top of every output directory it writes. A directory
// holding it may be replaced by a later WriteDirAtomic; any other non-empty directory is never touched.
const MarkerFile = ".render-static"

const markerContents = "This directory was written by render-static and is replaced as a whole on every run.\n"

// WriteDirAtomic writes an output directory atomically, as one run that holds it (outdir.go): it takes the
// directory's lock (refusing when another run holds it), repairs what killed runs left, fills a fresh temporary
// directory beside dest with fill, adds the marker file MarkerFile, makes everything durable and exchanges the new
// tree with the old one (Lock.Replace).
//
// If dest already exists it must be a directory written earlier by this function (it holds MarkerFile) or an
// empty directory; otherwise WriteDirAtomic returns an error before doing anything. On any failure the temporary
// directory is removed and dest is left exactly as it was. The parent of dest must exist: it is never created.
func WriteDirAtomic(dest string, fill func(tmpDir string) error) error {
	l, err := LockDir(dest, "output")
	if err != nil {
		return fmt.Errorf("writing output %s: %w", dest, err)
	}
	defer l.Release()
	return l.Replace(context.Background(), fill)
}

// removeAll is os.RemoveAll with the top-level entries removed in parallel (an output is ~2,000 files).
func removeAll(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return os.RemoveAll(dir)
	}
	if err := Parallel(len(entries), func(i int) error {
		return os.RemoveAll(filepath.Join(dir, entries[i].Name()))
	}); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// renameDir is rename(2). Unlike os.Rename, which refuses any existing directory as the new name, it
// replaces an empty directory at newpath (and fails if that directory is not empty).
func renameDir(oldpath, newpath string) error {
	if err := syscall.Rename(oldpath, newpath); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// checkOutputDest reports whether dest exists (and its permission bits); it returns an error if dest
// exists and must not be replaced.
func checkOutputDest(dest string) (bool, fs.FileMode, error) {
	st, err := os.Lstat(dest)
	if errors.Is(err, fs.ErrNotExist) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	if !st.IsDir() {
		return false, 0, fmt.Errorf("%s exists and is not a directory (%s); refusing to replace it", dest, fileKind(st.Mode()))
	}
	if mst, err := os.Lstat(filepath.Join(dest, MarkerFile)); err == nil && mst.Mode().IsRegular() {
		return true, st.Mode().Perm(), nil
	}
	if !isEmptyDir(dest) {
		return false, 0, fmt.Errorf("%s is a non-empty directory without the %s marker, so render-static did not write it; refusing to replace it", dest, MarkerFile)
	}
	return true, st.Mode().Perm(), nil
}

func isEmptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}

// syncEach fsyncs every regular file and directory under root (root included).
func syncEach(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() && !d.IsDir() {
			return nil
		}
		return syncPath(p)
	})
}

// syncPath fsyncs one file or directory.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	serr := f.Sync()
	cerr := f.Close()
	if serr != nil {
		return fmt.Errorf("fsync %s: %w", p, serr)
	}
	return cerr
}

// WriteFile writes one file inside an output dir with exactly the given mode (set with chmod after
// writing, so the umask does not apply); missing parent directories are created with mode 0755 (also
// exact). An existing regular file is replaced by a new one (never written through: it may share its inode with
// another path, see Plan); a symlink at path is not followed (error).
// It does not fsync: WriteDirAtomic syncs the whole output. Inside a WriteDirAtomic that replaces a previous
// output, an unchanged file is a hard link to the previous output's (reuse.go).
func WriteFile(p string, mode fs.FileMode, data []byte) error {
	if mode&^fs.ModePerm != 0 {
		return fmt.Errorf("writing %s: mode %v has bits other than permission bits", p, mode)
	}
	err := writeFile(p, mode, data, false)
	if errors.Is(err, fs.ErrNotExist) { // a missing parent: create the parents, then try again
		if err := mkdirAllExact(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
		err = writeFile(p, mode, data, false)
	}
	return err
}

// mkdirAllExact creates dir and its missing parents, each with exactly mode. Existing directories are
// left as they are.
func mkdirAllExact(dir string, mode fs.FileMode) error {
	st, err := os.Stat(dir)
	if err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAllExact(parent, mode); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
				return nil
			}
		}
		return err
	}
	return os.Chmod(dir, mode)
}

// WriteRootfs writes the tree into dir as if dir were "/", mirroring what Ignition lays down on the node:
// files with their exact modes, explicit directories with their modes, implied directories 0755 (all
// exact, not subject to the umask), unit files at etc/systemd/system/<name> and drop-ins at
// etc/systemd/system/<name>.d/<dropin> (0644), and the enabled units as "enable <name>" lines, sorted, in
// etc/systemd/system-preset/20-render-static.preset (0644; only written when some unit is enabled).
// dir is created (0755) if missing; its own mode is not changed. Directories inside dir that already exist
// get the tree's modes; symlinks inside dir are never followed.
func WriteRootfs(dir string, t *Tree) error {
	if t == nil {
		return fmt.Errorf("writing rootfs: nil tree")
	}
	if err := mkdirAllExact(dir, 0o755); err != nil {
		return fmt.Errorf("writing rootfs to %s: %w", dir, err)
	}
	var p Plan
	if err := p.Rootfs("", t); err != nil {
		return fmt.Errorf("writing rootfs: %w", err)
	}
	if err := p.Write(dir); err != nil {
		return fmt.Errorf("writing rootfs: %w", err)
	}
	return nil
}

// fileKind names what a mode says a file is (inputfile.Kind).
func fileKind(m fs.FileMode) string { return inputfile.Kind(m) }

// CopyTree copies the tree at src to dst (files with their modes, directories 0700: what is copied this way, a
// node update, carries keys). Only regular files and directories are copied; anything else is an error. Inside a
// Lock.Replace, an unchanged file is a hard link to the previous output's (reuse.go).
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
			return os.Chmod(target, 0o700)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return WriteFile(target, info.Mode().Perm(), b)
	})
}

// CopyTreeIfExists is CopyTree, doing nothing when src does not exist.
func CopyTreeIfExists(src, dst string) error {
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return CopyTree(src, dst)
}
