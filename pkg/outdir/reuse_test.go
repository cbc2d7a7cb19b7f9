package outdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/render-static/render-static/internal/testkit/treetest"
	"github.com/render-static/render-static/pkg/export"
)

// The reuse of a previous output's files (export.ReuseDuring), as Lock.Replace turns it on.

// TestWriteDirAtomicLinksUnchanged: replacing an output, a file with the previous output's path, mode and contents
// is the previous output's inode (no new file); a changed file (contents or mode) is a new inode; and a fill that
// writes a linked path again and then fails leaves the previous output's file as it was.
func TestWriteDirAtomicLinksUnchanged(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "out")
	first := map[string]string{"same": "a\n", "changed": "b\n", "mode": "c\n", "sub/deep": "d\n"}
	err := WriteDirAtomic(dest, func(tmp string) error {
		for name, data := range first {
			if err := export.WriteFile(filepath.Join(tmp, name), 0o644, []byte(data)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stat := func(p string) os.FileInfo {
		t.Helper()
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	prev := map[string]os.FileInfo{}
	for name := range first {
		prev[name] = stat(filepath.Join(dest, name))
	}

	err = WriteDirAtomic(dest, func(tmp string) error {
		writes := []struct {
			name string
			mode os.FileMode
			data string
		}{{"same", 0o644, "a\n"}, {"sub/deep", 0o644, "d\n"}, {"changed", 0o644, "B\n"}, {"mode", 0o600, "c\n"},
			{"same", 0o644, "a\n"}} // a path written twice, alike: linked again
		for _, w := range writes {
			if err := export.WriteFile(filepath.Join(tmp, w.name), w.mode, []byte(w.data)); err != nil {
				return err
			}
		}
		for name, linked := range map[string]bool{"same": true, "sub/deep": true, "changed": false, "mode": false} {
			if got := os.SameFile(stat(filepath.Join(tmp, name)), prev[name]); got != linked {
				t.Errorf("%s: shares the previous output's inode = %v, want %v", name, got, linked)
			}
		}
		treetest.CheckMode(t, filepath.Join(tmp, "mode"), 0o600)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "changed")); string(b) != "B\n" {
		t.Errorf("changed = %q", b)
	}

	// A fill that links "same", writes it again with other contents, then fails: the previous output keeps "a\n".
	boom := errors.New("boom")
	err = WriteDirAtomic(dest, func(tmp string) error {
		p := filepath.Join(tmp, "same")
		if err := export.WriteFile(p, 0o644, []byte("a\n")); err != nil {
			return err
		}
		if err := export.WriteFile(p, 0o644, []byte("overwritten\n")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "same")); string(b) != "a\n" {
		t.Errorf("previous output's file written through a shared inode: %q", b)
	}
}

// TestWriteDirAtomicLinksUnchangedRelative: a destination without a directory part (render-static's default --dir
// "aio", relative to the working directory) links unchanged files too.
func TestWriteDirAtomicLinksUnchangedRelative(t *testing.T) {
	t.Chdir(t.TempDir())
	write := func() error {
		return WriteDirAtomic("out", func(tmp string) error {
			return export.WriteFile(filepath.Join(tmp, "sub", "same"), 0o644, []byte("a\n"))
		})
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	before, err := os.Lstat(filepath.Join("out", "sub", "same"))
	if err != nil {
		t.Fatal(err)
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	after, err := os.Lstat(filepath.Join("out", "sub", "same"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("an unchanged file of a relative destination was written again, not linked")
	}
}
