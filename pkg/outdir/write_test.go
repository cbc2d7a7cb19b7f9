package outdir

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/treetest"
	"github.com/render-static/render-static/pkg/export"
)

// WriteDirAtomic: an output directory written as one run that holds it, filled by export.WriteFile.

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// snapshot maps every path under root (relative) to its mode and contents.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		v := info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteDirAtomicCreates(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	err := WriteDirAtomic(dest, func(tmp string) error {
		if filepath.Dir(tmp) != parent || !strings.HasPrefix(filepath.Base(tmp), ".out.tmp-") {
			t.Errorf("temporary dir %s is not .out.tmp-* next to dest", tmp)
		}
		if err := export.WriteFile(filepath.Join(tmp, "aio.ign"), 0o600, []byte("{}")); err != nil {
			return err
		}
		return export.WriteFile(filepath.Join(tmp, "manifests", "sub", "x.yaml"), 0o644, []byte("x: 1\n"))
	})
	if err != nil {
		t.Fatalf("WriteDirAtomic: %v", err)
	}
	if got := entries(t, parent); !slices.Equal(got, []string{"out"}) {
		t.Errorf("parent holds %v, want just out", got)
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "aio.ign")); got != "{}" {
		t.Errorf("aio.ign = %q", got)
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "manifests", "sub", "x.yaml")); got != "x: 1\n" {
		t.Errorf("x.yaml = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dest, MarkerFile)); err != nil {
		t.Errorf("marker: %v", err)
	}
	treetest.CheckMode(t, dest, 0o755)
}

func TestWriteDirAtomicFillErrorLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	boom := errors.New("boom")
	err := WriteDirAtomic(dest, func(tmp string) error {
		if err := export.WriteFile(filepath.Join(tmp, "half", "written"), 0o644, []byte("x")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want one wrapping boom", err)
	}
	if got := entries(t, parent); len(got) != 0 {
		t.Errorf("parent holds %v after a failed fill, want nothing", got)
	}
}

func TestWriteDirAtomicFillErrorKeepsPrevious(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	if err := WriteDirAtomic(dest, func(tmp string) error {
		return export.WriteFile(filepath.Join(tmp, "v"), 0o644, []byte("1"))
	}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, parent)
	err := WriteDirAtomic(dest, func(tmp string) error {
		_ = export.WriteFile(filepath.Join(tmp, "v"), 0o644, []byte("2"))
		return errors.New("fail")
	})
	if err == nil {
		t.Fatal("no error")
	}
	if after := snapshot(t, parent); !maps.Equal(before, after) {
		t.Errorf("failed run changed things:\nbefore %v\nafter  %v", before, after)
	}
}

func TestWriteDirAtomicRefusesForeignDir(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "home")
	treetest.Mkdir(t, dest, 0o750)
	if err := os.WriteFile(filepath.Join(dest, "precious"), []byte("keep me"), 0o640); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, parent)
	called := false
	err := WriteDirAtomic(dest, func(string) error { called = true; return nil })
	if err == nil {
		t.Fatal("no error for a non-empty directory without the marker")
	}
	if !strings.Contains(err.Error(), MarkerFile) {
		t.Errorf("error does not explain the marker: %v", err)
	}
	if called {
		t.Error("fill was called")
	}
	if after := snapshot(t, parent); !maps.Equal(before, after) {
		t.Errorf("refused run changed things:\nbefore %v\nafter  %v", before, after)
	}

	// A regular file and a symlink at dest are refused too.
	file := filepath.Join(parent, "file")
	if err := os.WriteFile(file, []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteDirAtomic(file, func(string) error { return nil }); err == nil {
		t.Error("no error for a regular file at dest")
	}
	link := filepath.Join(parent, "link")
	empty := filepath.Join(parent, "empty")
	treetest.Mkdir(t, empty, 0o755)
	if err := os.Symlink(empty, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteDirAtomic(link, func(string) error { return nil }); err == nil {
		t.Error("no error for a symlink at dest")
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("symlink changed: %v %v", fi, err)
	}
}

func TestWriteDirAtomicEmptyDest(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	treetest.Mkdir(t, dest, 0o750)
	if err := WriteDirAtomic(dest, func(tmp string) error {
		return export.WriteFile(filepath.Join(tmp, "a"), 0o644, []byte("a"))
	}); err != nil {
		t.Fatal(err)
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "a")); got != "a" {
		t.Errorf("a = %q", got)
	}
	treetest.CheckMode(t, dest, 0o750) // the existing mode is kept
	if got := entries(t, parent); !slices.Equal(got, []string{"out"}) {
		t.Errorf("parent holds %v", got)
	}
}

func TestWriteDirAtomicReplaces(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	for i, files := range []map[string]string{
		{"old-only": "1", "common": "1"},
		{"new-only": "2", "common": "2"},
	} {
		if err := WriteDirAtomic(dest, func(tmp string) error {
			for name, data := range files {
				if err := export.WriteFile(filepath.Join(tmp, name), 0o644, []byte(data)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if got := entries(t, dest); !slices.Equal(got, []string{MarkerFile, "common", "new-only"}) {
		t.Errorf("dest holds %v after replacement", got)
	}
	if got := treetest.ReadFile(t, filepath.Join(dest, "common")); got != "2" {
		t.Errorf("common = %q, want 2", got)
	}
	if got := entries(t, parent); !slices.Equal(got, []string{"out"}) {
		t.Errorf("parent holds %v, want just out (no .old or .tmp leftovers)", got)
	}
}

func TestWriteDirAtomicMissingParent(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "no", "such")
	err := WriteDirAtomic(filepath.Join(missing, "out"), func(string) error { return nil })
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("err = %v, want one naming %s", err, missing)
	}
	if got := entries(t, root); len(got) != 0 {
		t.Errorf("created %v", got)
	}
}

func TestWriteRootfsInsideWriteDirAtomic(t *testing.T) {
	tr := export.NewTree()
	for p, mode := range map[string]fs.FileMode{"/etc/kubernetes/secret.key": 0o600, "/etc/hosts": 0o644, "/usr/local/bin/run.sh": 0o755} {
		if err := tr.AddFile(p, mode, []byte(p+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.AddDir("/var/lib/etcd", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := tr.AddUnit(export.Unit{Name: "kubelet.service", Contents: "[Service]\nExecStart=/bin/true\n", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "out")
	if err := WriteDirAtomic(dest, func(tmp string) error {
		return export.WriteRootfs(filepath.Join(tmp, "rootfs"), tr)
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range tr.Files() {
		p := filepath.Join(dest, "rootfs", filepath.FromSlash(f.Path))
		treetest.CheckMode(t, p, f.Mode)
		if got := treetest.ReadFile(t, p); got != string(f.Contents) {
			t.Errorf("%s: contents differ", f.Path)
		}
	}
	treetest.CheckMode(t, filepath.Join(dest, "rootfs", "var", "lib", "etcd"), 0o700)
}
