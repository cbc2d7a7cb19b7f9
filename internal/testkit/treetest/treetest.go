// Package treetest reads a directory tree back for tests: every file below a directory with its mode and
// contents, by its slash-separated path relative to the directory. It is for tests only: import it from _test.go
// files.
package treetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// File is one entry of a tree other than a directory.
type File struct {
	// Mode is the entry's whole mode (type bits and permissions; a symlink's own, not its target's).
	Mode fs.FileMode
	// Contents are a regular file's contents; nil for anything else.
	Contents []byte
}

// Read returns every entry below dir except directories, by slash-separated path relative to dir; symlinks are
// not followed. Any error fails the test.
func Read(t testing.TB, dir string) map[string]File {
	t.Helper()
	out := map[string]File{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := File{Mode: info.Mode()}
		if f.Mode.IsRegular() {
			if f.Contents, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		rel, err := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = f
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Contents returns the contents of every regular file below dir, as Read finds them.
func Contents(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for p, f := range Read(t, dir) {
		if f.Mode.IsRegular() {
			out[p] = f.Contents
		}
	}
	return out
}

// Mkdir makes the directory p with exactly mode (whatever the umask).
func Mkdir(t testing.TB, p string, mode fs.FileMode) {
	t.Helper()
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// CheckMode fails the test unless p (not followed if a link) has the permissions want.
func CheckMode(t testing.TB, p string, want fs.FileMode) {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Error(err)
		return
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("%s: mode %#o, want %#o", p, got, want)
	}
}

// ReadFile is the contents of the file p, as a string.
func ReadFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
