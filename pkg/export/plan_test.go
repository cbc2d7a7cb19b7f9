package export

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/render-static/render-static/internal/testkit/treetest"
)

// inode is the device and inode number of p.
func inode(t *testing.T, p string) [2]uint64 {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Sys().(*syscall.Stat_t)
	return [2]uint64{uint64(s.Dev), s.Ino}
}

// A plan writes every file and directory with exactly its mode, whatever the umask, and writes each distinct
// (mode, contents) once: the other files with the same are hard links to it, and nothing else is.
func TestPlanWriteLinksIdenticalFiles(t *testing.T) {
	for _, mask := range []int{0o022, 0o077, 0o777, 0} {
		t.Run(fs.FileMode(mask).String(), func(t *testing.T) {
			withUmask(t, mask)
			root := t.TempDir()
			var p Plan
			p.Dir("state", 0o700)
			p.Dir("ro", 0o500)
			p.File("manifests/a.yaml", 0o644, []byte("kind: A\n"))
			p.File("rootfs/opt/manifests/a.yaml", 0o644, []byte("kind: A\n"))
			p.File("rootfs/opt/manifests/b.yaml", 0o644, []byte("kind: B\n"))
			p.File("state/a.yaml", 0o600, []byte("kind: A\n")) // same contents, other mode: its own file
			p.File("state/a2.yaml", 0o600, []byte("kind: A\n"))
			p.File("ro/key", 0o400, []byte("k"))
			p.File("ro/key2", 0o400, []byte("k"))
			p.File("empty1", 0o644, nil)
			p.File("empty2", 0o644, []byte{})
			if err := p.Write(root); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(filepath.Join(root, "ro"), 0o700) })
			modes := map[string]fs.FileMode{"state": 0o700, "ro": 0o500, "manifests": 0o755, "rootfs": 0o755,
				"rootfs/opt": 0o755, "rootfs/opt/manifests": 0o755, "manifests/a.yaml": 0o644,
				"rootfs/opt/manifests/a.yaml": 0o644, "rootfs/opt/manifests/b.yaml": 0o644, "state/a.yaml": 0o600,
				"state/a2.yaml": 0o600, "ro/key": 0o400, "ro/key2": 0o400, "empty1": 0o644, "empty2": 0o644}
			for rel, m := range modes {
				treetest.CheckMode(t, filepath.Join(root, rel), m)
			}
			for rel, want := range map[string]string{"manifests/a.yaml": "kind: A\n", "rootfs/opt/manifests/a.yaml": "kind: A\n",
				"rootfs/opt/manifests/b.yaml": "kind: B\n", "state/a.yaml": "kind: A\n", "ro/key2": "k", "empty2": ""} {
				if got := treetest.ReadFile(t, filepath.Join(root, rel)); got != want {
					t.Errorf("%s = %q, want %q", rel, got, want)
				}
			}
			same := [][2]string{{"manifests/a.yaml", "rootfs/opt/manifests/a.yaml"}, {"state/a.yaml", "state/a2.yaml"},
				{"ro/key", "ro/key2"}, {"empty1", "empty2"}}
			for _, s := range same {
				if inode(t, filepath.Join(root, s[0])) != inode(t, filepath.Join(root, s[1])) {
					t.Errorf("%s and %s are not one file", s[0], s[1])
				}
			}
			differ := [][2]string{{"manifests/a.yaml", "state/a.yaml"}, {"manifests/a.yaml", "rootfs/opt/manifests/b.yaml"}}
			for _, d := range differ {
				if inode(t, filepath.Join(root, d[0])) == inode(t, filepath.Join(root, d[1])) {
					t.Errorf("%s and %s share an inode", d[0], d[1])
				}
			}
			// Writing one of two linked paths again gives it its own file: the other keeps its contents.
			if err := WriteFile(filepath.Join(root, "manifests/a.yaml"), 0o644, []byte("changed")); err != nil {
				t.Fatal(err)
			}
			if got := treetest.ReadFile(t, filepath.Join(root, "rootfs/opt/manifests/a.yaml")); got != "kind: A\n" {
				t.Errorf("rewriting manifests/a.yaml wrote through to its link: %q", got)
			}
			if got := treetest.ReadFile(t, filepath.Join(root, "manifests/a.yaml")); got != "changed" {
				t.Errorf("manifests/a.yaml = %q", got)
			}
		})
	}
}

// A plan written over what is there replaces regular files, gives existing directories its modes, and never
// follows a symlink.
func TestPlanWriteOverExisting(t *testing.T) {
	withUmask(t, 0o022)
	root := t.TempDir()
	treetest.Mkdir(t, filepath.Join(root, "d"), 0o777)
	if err := os.WriteFile(filepath.Join(root, "d", "f"), []byte("old contents"), 0o666); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "d", "link")); err != nil {
		t.Fatal(err)
	}
	var p Plan
	p.Dir("d", 0o750)
	p.File("d/f", 0o600, []byte("new"))
	if err := p.Write(root); err != nil {
		t.Fatal(err)
	}
	treetest.CheckMode(t, filepath.Join(root, "d"), 0o750)
	treetest.CheckMode(t, filepath.Join(root, "d", "f"), 0o600)
	if got := treetest.ReadFile(t, filepath.Join(root, "d", "f")); got != "new" {
		t.Errorf("d/f = %q", got)
	}

	var q Plan
	q.File("d/link", 0o644, []byte("through the link"))
	if err := q.Write(root); err == nil {
		t.Error("a plan wrote over a symlink")
	}
	if got := treetest.ReadFile(t, outside); got != "outside" {
		t.Errorf("a plan wrote through a symlink: %q", got)
	}

	var bad Plan
	bad.File("x", 0o644|fs.ModeSetuid, nil)
	if err := bad.Write(root); err == nil {
		t.Error("a mode with bits other than permission bits was accepted")
	}
	var both Plan
	both.Dir("y", 0o755)
	both.File("y", 0o644, nil)
	if err := both.Write(root); err == nil {
		t.Error("a path both a file and a directory was accepted")
	}
}

// currentUmask reads the umask the process has now.
func TestCurrentUmask(t *testing.T) {
	for _, mask := range []int{0o022, 0o077, 0o002} {
		withUmask(t, mask)
		got, ok := currentUmask()
		if !ok {
			t.Skip("no Umask line in /proc/self/status (Linux before 4.7)")
		}
		if got != fs.FileMode(mask) {
			t.Errorf("umask %#o read as %#o", mask, got)
		}
	}
}
