package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// EnvContainer names the JSON ContainerSpec a re-executed test binary turns into a container: it is the
// process the runner starts for each container, and it replaces itself (exec) with the container's binary.
const EnvContainer = "RENDER_STATIC_E2E_CONTAINER"

// ContainerSpec is the filesystem view and command of one container. The view is a fresh tmpfs root holding
// only what the pod declares: each volume's source (a hostPath re-rooted under the Ignition root, or an
// emptyDir) bind-mounted at its mountPath, the binary standing in for the image, /dev, /proc, and small /etc
// files. No path in an argument or a config file needs rewriting.
type ContainerSpec struct {
	Root       string            // an empty directory; a tmpfs is mounted on it
	Dirs       []string          // created inside the root (mode 0755; /tmp gets 1777)
	Files      map[string]string // created inside the root with these contents (mode 0644)
	Symlinks   map[string]string // link -> target, created inside the root
	ExecFiles  map[string]string // like Files, mode 0755 (stand-ins such as systemctl)
	Mounts     []BindMount       // bind mounts, parents before children
	Argv       []string          // argv[0] is looked up in PATH from Env inside the root
	Env        []string
	WorkingDir string
}

// BindMount is one bind mount into the container root.
type BindMount struct {
	Source   string // on the host (usually under the Ignition root)
	Target   string // inside the container
	ReadOnly bool
	File     bool // the source is a file
}

// MaybeRunContainer turns the process into a container when EnvContainer is set (call it first thing in
// TestMain). It does not return in that case: it execs the container's binary or exits 127.
func MaybeRunContainer() {
	p := os.Getenv(EnvContainer)
	if p == "" {
		return
	}
	err := runContainer(p)
	fmt.Fprintf(os.Stderr, "e2e container setup: %v\n", err)
	os.Exit(127)
}

func runContainer(specPath string) error {
	data, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var s ContainerSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	// The runner starts us with CLONE_NEWNS; never touch mounts in a namespace shared with our parent.
	self, err1 := nsLink("self", "mnt")
	parent, err2 := nsLink(fmt.Sprint(os.Getppid()), "mnt")
	if err1 != nil || err2 != nil || self == parent {
		return fmt.Errorf("refusing: not in a mount namespace of our own (self %q, parent %q)", self, parent)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := syscall.Mount("tmpfs", s.Root, "tmpfs", syscall.MS_NOSUID, "mode=0755"); err != nil {
		return fmt.Errorf("tmpfs on %s: %w", s.Root, err)
	}
	in := func(p string) string { return filepath.Join(s.Root, filepath.Clean("/"+p)) }
	for _, d := range append([]string{"/dev", "/proc", "/etc", "/tmp", "/var/tmp", "/usr/local/bin", "/root"}, s.Dirs...) {
		if err := os.MkdirAll(in(d), 0o755); err != nil {
			return err
		}
	}
	os.Chmod(in("/tmp"), 0o1777)
	os.Chmod(in("/var/tmp"), 0o1777)
	for files, mode := range map[*map[string]string]os.FileMode{&s.Files: 0o644, &s.ExecFiles: 0o755} {
		for _, n := range sortedStrings(*files) {
			if err := os.MkdirAll(filepath.Dir(in(n)), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(in(n), []byte((*files)[n]), mode); err != nil {
				return err
			}
		}
	}
	for _, l := range sortedStrings(s.Symlinks) {
		if err := os.MkdirAll(filepath.Dir(in(l)), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(s.Symlinks[l], in(l)); err != nil {
			return err
		}
	}
	if err := syscall.Mount("/dev", in("/dev"), "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind /dev: %w", err)
	}
	if err := syscall.Mount("proc", in("/proc"), "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	for _, m := range s.Mounts {
		t := in(m.Target)
		if m.File {
			if err := os.MkdirAll(filepath.Dir(t), 0o755); err != nil {
				return fmt.Errorf("mountpoint for %s: %w", m.Target, err)
			}
			if _, err := os.Lstat(t); os.IsNotExist(err) {
				f, err := os.OpenFile(t, os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return fmt.Errorf("mountpoint for %s: %w", m.Target, err)
				}
				f.Close()
			}
		} else if err := os.MkdirAll(t, 0o755); err != nil {
			return fmt.Errorf("mountpoint for %s: %w", m.Target, err)
		}
		if err := syscall.Mount(m.Source, t, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s at %s: %w", m.Source, m.Target, err)
		}
	}
	// Read-only after every mount point exists (a child mount point may have to be created in a parent).
	for i := len(s.Mounts) - 1; i >= 0; i-- {
		if m := s.Mounts[i]; m.ReadOnly {
			if err := syscall.Mount("", in(m.Target), "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID, ""); err != nil {
				return fmt.Errorf("read-only %s: %w", m.Target, err)
			}
		}
	}
	if err := syscall.Chroot(s.Root); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	wd := s.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return err
	}
	if err := syscall.Chdir(wd); err != nil {
		return fmt.Errorf("chdir %s: %w", wd, err)
	}
	if len(s.Argv) == 0 {
		return fmt.Errorf("empty command")
	}
	path, err := lookPathIn(s.Argv[0], envValue(s.Env, "PATH"))
	if err != nil {
		return err
	}
	return syscall.Exec(path, s.Argv, s.Env)
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			v = kv[len(key)+1:]
		}
	}
	return v
}

// lookPathIn resolves a command the way a container runtime does: as is when it has a slash, else through
// PATH (inside the container root, after chroot).
func lookPathIn(cmd, path string) (string, error) {
	if strings.Contains(cmd, "/") {
		return cmd, nil
	}
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, cmd)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: cmd, Err: exec.ErrNotFound}
}

func sortedStrings(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
