package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// IgnitionBinary is where Debian's ignition package puts the real Ignition (it is not on PATH).
const IgnitionBinary = "/usr/lib/dracut/modules.d/30ignition/ignition"

// FindIgnition returns the Ignition binary: $RENDER_STATIC_IGNITION, Debian's path, or `ignition` on PATH.
func FindIgnition() (string, error) {
	for _, p := range []string{os.Getenv("RENDER_STATIC_IGNITION"), IgnitionBinary} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("ignition"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("ignition not found at %s nor on PATH: run hack/install-test-deps.sh (apt package ignition)", IgnitionBinary)
}

// SeedRoot prepares an empty directory so Debian's Ignition can lay a config into it: `useradd --root` needs
// passwd, group, shadow and gshadow to lock, and Debian's Ignition always relabels, which needs
// etc/selinux/config with a SELINUXTYPE.
func SeedRoot(root string) error {
	files := map[string]struct {
		mode os.FileMode
		data string
	}{
		"etc/passwd":         {0o644, "root:x:0:0:root:/root:/bin/bash\n"},
		"etc/group":          {0o644, "root:x:0:\nusers:x:100:\nwheel:x:10:\nsudo:x:27:\nadm:x:4:\nsystemd-journal:x:190:\n"},
		"etc/shadow":         {0o600, "root:*:19000:0:99999:7:::\n"},
		"etc/gshadow":        {0o600, "root:*::\nusers:*::\nwheel:*::\nsudo:*::\nadm:*::\nsystemd-journal:*::\n"},
		"etc/selinux/config": {0o644, "SELINUX=disabled\nSELINUXTYPE=targeted\n"},
	}
	for p, f := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(f.data), f.mode); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Join(root, "home"), 0o755)
}

// IgniteResult reports an Ignition run.
type IgniteResult struct {
	Log      string // both stages' output
	Duration time.Duration
}

// Ignite lays the config at ignPath into root with Debian's real Ignition: the file platform, the
// fetch-offline stage (which caches the config) and then the files stage. Every state path is kept in work,
// away from /run; a `setfiles` stand-in on PATH absorbs the relabel Debian's build always does. Needs root
// (chown, and `useradd --root` chroots).
func Ignite(ctx context.Context, ignPath, root, work string) (*IgniteResult, error) {
	start := time.Now()
	bin, err := FindIgnition()
	if err != nil {
		return nil, err
	}
	ignPath, err = filepath.Abs(ignPath)
	if err != nil {
		return nil, err
	}
	if err := SeedRoot(root); err != nil {
		return nil, fmt.Errorf("seeding %s: %w", root, err)
	}
	shim := filepath.Join(work, "shim")
	if err := os.MkdirAll(shim, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(shim, "setfiles"), []byte("#!/bin/sh\n# stand-in for SELinux setfiles: Ignition's relabel list is read and dropped\ncat >/dev/null\nexit 0\n"), 0o755); err != nil {
		return nil, err
	}
	common := []string{"--platform=file", "--root=" + root, "--config-cache=" + filepath.Join(work, "ignition.json"),
		"--state-file=" + filepath.Join(work, "ignition-state"), "--log-to-stdout"}
	var log strings.Builder
	for _, stage := range [][]string{{"--stage=fetch-offline", "--neednet=" + filepath.Join(work, "neednet")}, {"--stage=files"}} {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		cmd := exec.CommandContext(sctx, bin, append(append([]string{}, common...), stage...)...)
		cmd.Dir = work
		cmd.Env = append(filteredEnv("IGNITION_CONFIG_FILE", "PATH"), "IGNITION_CONFIG_FILE="+ignPath,
			"PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		cancel()
		fmt.Fprintf(&log, "== ignition %s\n%s", stage[0], out)
		if err != nil {
			return &IgniteResult{Log: log.String()}, fmt.Errorf("ignition %s: %w\n%s", stage[0], err, tailString(string(out), 40))
		}
	}
	if _, err := os.Stat(filepath.Join(root, "etc", ".ignition-result.json")); err != nil {
		return &IgniteResult{Log: log.String()}, fmt.Errorf("ignition wrote no etc/.ignition-result.json: %w", err)
	}
	return &IgniteResult{Log: log.String(), Duration: time.Since(start)}, nil
}

// ValidateIgnition runs ignition-validate (from the same Debian package) on the config.
func ValidateIgnition(ctx context.Context, ignPath string) error {
	bin, err := exec.LookPath("ignition-validate")
	if err != nil {
		return fmt.Errorf("ignition-validate not on PATH: run hack/install-test-deps.sh")
	}
	vctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(vctx, bin, ignPath).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		return fmt.Errorf("ignition-validate %s: %v\n%s", ignPath, err, out)
	}
	return nil
}

func tailString(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
