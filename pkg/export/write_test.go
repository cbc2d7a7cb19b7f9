package export

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/render-static/render-static/internal/testkit/treetest"
)

// These tests change the process umask: none of the tests in this package may run in parallel.

func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
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
		treetest.CheckMode(t, p, 0o600)
		treetest.CheckMode(t, filepath.Join(dir, "a"), 0o755)
		treetest.CheckMode(t, filepath.Join(dir, "a", "b"), 0o755)
		if got := treetest.ReadFile(t, p); got != "yy" {
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
				treetest.CheckMode(t, filepath.Join(root, rel), mode)
			}
			if got := treetest.ReadFile(t, filepath.Join(root, "etc/kubernetes/secrets/tls.key")); got != "key" {
				t.Errorf("tls.key = %q", got)
			}
			if got := treetest.ReadFile(t, filepath.Join(root, "etc/systemd/system/kubelet.service")); got != kubeletUnit {
				t.Errorf("kubelet.service = %q", got)
			}
			if got := treetest.ReadFile(t, filepath.Join(root, "etc/systemd/system/kubelet.service.d/10-env.conf")); got != "[Service]\nEnvironment=A=1\n" {
				t.Errorf("drop-in = %q", got)
			}
			if got, want := treetest.ReadFile(t, filepath.Join(root, "etc/systemd/system-preset/20-render-static.preset")), "enable crio.service\nenable kubelet.service\n"; got != want {
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
