package export

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// noFollow makes WriteFile refuse to write through a symlink.
const noFollow = syscall.O_NOFOLLOW

// WriteFile writes one file inside an output dir with exactly the given mode (set with chmod after
// writing, so the umask does not apply); missing parent directories are created with mode 0755 (also
// exact). An existing regular file is replaced by a new one (never written through: it may share its inode with
// another path, see Plan); a symlink at path is not followed (error).
// It does not fsync: outdir.Lock.Replace syncs the whole output. Inside a Lock.Replace of a previous
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

// CopyTree copies the tree at src to dst (files with their modes, directories 0700: what is copied this way, a
// node update, carries keys). Only regular files and directories are copied; anything else is an error. Inside an
// outdir.Lock.Replace, an unchanged file is a hard link to the previous output's (reuse.go).
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
