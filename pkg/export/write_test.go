package export

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// These tests change the process umask: none of the tests in this package may run in parallel.

func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

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

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteDirAtomicCreates(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	err := WriteDirAtomic(dest, func(tmp string) error {
		if filepath.Dir(tmp) != parent || !strings.HasPrefix(filepath.Base(tmp), ".out.tmp-") {
			t.Errorf("temporary dir %s is not .out.tmp-* next to dest", tmp)
		}
		if err := WriteFile(filepath.Join(tmp, "aio.ign"), 0o600, []byte("{}")); err != nil {
			return err
		}
		return WriteFile(filepath.Join(tmp, "manifests", "sub", "x.yaml"), 0o644, []byte("x: 1\n"))
	})
	if err != nil {
		t.Fatalf("WriteDirAtomic: %v", err)
	}
	if got := entries(t, parent); !slices.Equal(got, []string{"out"}) {
		t.Errorf("parent holds %v, want just out", got)
	}
	if got := readFile(t, filepath.Join(dest, "aio.ign")); got != "{}" {
		t.Errorf("aio.ign = %q", got)
	}
	if got := readFile(t, filepath.Join(dest, "manifests", "sub", "x.yaml")); got != "x: 1\n" {
		t.Errorf("x.yaml = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dest, MarkerFile)); err != nil {
		t.Errorf("marker: %v", err)
	}
	checkMode(t, dest, 0o755)
}

func TestWriteDirAtomicFillErrorLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	boom := errors.New("boom")
	err := WriteDirAtomic(dest, func(tmp string) error {
		if err := WriteFile(filepath.Join(tmp, "half", "written"), 0o644, []byte("x")); err != nil {
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
		return WriteFile(filepath.Join(tmp, "v"), 0o644, []byte("1"))
	}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, parent)
	err := WriteDirAtomic(dest, func(tmp string) error {
		_ = WriteFile(filepath.Join(tmp, "v"), 0o644, []byte("2"))
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
	mkdir(t, dest, 0o750)
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
	mkdir(t, empty, 0o755)
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
	mkdir(t, dest, 0o750)
	if err := WriteDirAtomic(dest, func(tmp string) error {
		return WriteFile(filepath.Join(tmp, "a"), 0o644, []byte("a"))
	}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dest, "a")); got != "a" {
		t.Errorf("a = %q", got)
	}
	checkMode(t, dest, 0o750) // the existing mode is kept
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
				if err := WriteFile(filepath.Join(tmp, name), 0o644, []byte(data)); err != nil {
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
	if got := readFile(t, filepath.Join(dest, "common")); got != "2" {
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

func TestWriteFileExactMode(t *testing.T) {
	for _, mask := range []int{0o022, 0o077, 0o777} {
		withUmask(t, mask)
		dir := t.TempDir()
		p := filepath.Join(dir, "a", "b", "f")
		if err := WriteFile(p, 0o644, []byte("x")); err != nil {
			t.Fatal(err)
		}
		// Rewriting an existing file changes contents and mode.
		if err := WriteFile(p, 0o600, []byte("yy")); err != nil {
			t.Fatal(err)
		}
		checkMode(t, p, 0o600)
		checkMode(t, filepath.Join(dir, "a"), 0o755)
		checkMode(t, filepath.Join(dir, "a", "b"), 0o755)
		if got := readFile(t, p); got != "yy" {
			t.Errorf("contents %q", got)
		}
		link := filepath.Join(dir, "link")
		if err := os.Symlink(p, link); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(link, 0o644, []byte("through link")); err == nil {
			t.Error("WriteFile followed a symlink")
		}
	}
}

// mkdir makes the directory p with exactly mode (whatever the umask).
func mkdir(t *testing.T, p string, mode fs.FileMode) {
	t.Helper()
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func checkMode(t *testing.T, p string, want fs.FileMode) {
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

func TestWriteRootfsModes(t *testing.T) {
	for _, mask := range []int{0o022, 0o077} {
		t.Run(fs.FileMode(mask).String(), func(t *testing.T) {
			withUmask(t, mask)
			tr := NewTree()
			mustAddFile(t, tr, "/etc/kubernetes/secrets/tls.key", 0o600, "key")
			mustAddFile(t, tr, "/usr/local/bin/run.sh", 0o755, "#!/bin/sh\n")
			mustAddFile(t, tr, "/etc/kubernetes/manifests/pod.yaml", 0o644, "kind: Pod\n")
			mustAddFile(t, tr, "/etc/readonly/file", 0o444, "ro")
			mustAddFile(t, tr, "/etc/kubernetes/secrets/sub/token", 0o400, "t")
			mustAddDir(t, tr, "/etc/kubernetes/secrets", 0o700)
			mustAddDir(t, tr, "/var/lib/etcd", 0o700)
			mustAddDir(t, tr, "/etc/readonly", 0o555)
			mustAddUnit(t, tr, Unit{Name: "kubelet.service", Contents: kubeletUnit, Enabled: true,
				Dropins: []Dropin{{"10-env.conf", "[Service]\nEnvironment=A=1\n"}}})
			mustAddUnit(t, tr, Unit{Name: "crio.service", Enabled: true})
			mustAddUnit(t, tr, Unit{Name: "helper.service", Contents: "[Service]\nExecStart=/bin/true\n"})

			root := filepath.Join(t.TempDir(), "rootfs")
			if err := WriteRootfs(root, tr); err != nil {
				t.Fatalf("WriteRootfs: %v", err)
			}
			// Let t.TempDir's clean-up into the read-only directory.
			t.Cleanup(func() { _ = os.Chmod(filepath.Join(root, "etc", "readonly"), 0o755) })

			want := map[string]fs.FileMode{
				"etc/kubernetes/secrets/tls.key":       0o600,
				"etc/kubernetes/secrets/sub/token":     0o400,
				"usr/local/bin/run.sh":                 0o755,
				"etc/kubernetes/manifests/pod.yaml":    0o644,
				"etc/readonly/file":                    0o444,
				"etc/kubernetes/secrets":               0o700,
				"etc/kubernetes/secrets/sub":           0o755,
				"var/lib/etcd":                         0o700,
				"etc/readonly":                         0o555,
				"etc":                                  0o755,
				"etc/kubernetes":                       0o755,
				"usr/local/bin":                        0o755,
				"var/lib":                              0o755,
				"etc/systemd/system/kubelet.service":   0o644,
				"etc/systemd/system/kubelet.service.d": 0o755,
				"etc/systemd/system/kubelet.service.d/10-env.conf":  0o644,
				"etc/systemd/system/helper.service":                 0o644,
				"etc/systemd/system-preset/20-render-static.preset": 0o644,
			}
			for rel, mode := range want {
				checkMode(t, filepath.Join(root, rel), mode)
			}
			if got := readFile(t, filepath.Join(root, "etc/kubernetes/secrets/tls.key")); got != "key" {
				t.Errorf("tls.key = %q", got)
			}
			if got := readFile(t, filepath.Join(root, "etc/systemd/system/kubelet.service")); got != kubeletUnit {
				t.Errorf("kubelet.service = %q", got)
			}
			if got := readFile(t, filepath.Join(root, "etc/systemd/system/kubelet.service.d/10-env.conf")); got != "[Service]\nEnvironment=A=1\n" {
				t.Errorf("drop-in = %q", got)
			}
			if got, want := readFile(t, filepath.Join(root, "etc/systemd/system-preset/20-render-static.preset")), "enable crio.service\nenable kubelet.service\n"; got != want {
				t.Errorf("preset = %q, want %q", got, want)
			}
			if _, err := os.Lstat(filepath.Join(root, "etc/systemd/system/crio.service")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("crio.service (no contents) was written: %v", err)
			}
			// Nothing else was written.
			var all []string
			_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(root, p)
					all = append(all, rel)
				}
				return nil
			})
			if len(all) != 9 {
				t.Errorf("wrote %d files, want 9: %v", len(all), all)
			}
		})
	}
}

func TestWriteRootfsNoPresetWithoutEnabledUnits(t *testing.T) {
	tr := NewTree()
	mustAddUnit(t, tr, Unit{Name: "helper.service", Contents: "[Service]\nExecStart=/bin/true\n"})
	root := t.TempDir()
	if err := WriteRootfs(root, tr); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "etc/systemd/system-preset")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("preset directory written without enabled units: %v", err)
	}
}

func TestWriteRootfsInsideWriteDirAtomic(t *testing.T) {
	tr := buildTestTree(t)
	dest := filepath.Join(t.TempDir(), "out")
	if err := WriteDirAtomic(dest, func(tmp string) error {
		return WriteRootfs(filepath.Join(tmp, "rootfs"), tr)
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range tr.Files() {
		p := filepath.Join(dest, "rootfs", filepath.FromSlash(f.Path))
		checkMode(t, p, f.Mode)
		if got := readFile(t, p); got != string(f.Contents) {
			t.Errorf("%s: contents differ", f.Path)
		}
	}
}
