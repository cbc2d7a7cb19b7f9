package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// KubeadmTool is kubeadm, built for the speed comparison (docs/speed.md, BenchmarkKubeadm) from the same wrapper
// module (tools/k8s, which pins it: tools.go), Kubernetes version, flags and Go build cache as the e2e's other
// Kubernetes binaries. It is not one of Tools(): the e2e needs no kubeadm, and its cache entry stays its own.
func KubeadmTool() ToolModule {
	return ToolModule{Dir: "k8s", LDFlags: kubeLDFlags(), Packages: map[string]string{"kubeadm": "k8s.io/kubernetes/cmd/kubeadm"}}
}

// kubeadmCacheKey hashes what decides the kubeadm binary: the wrapper module's go.mod, go.sum and .go files, the Go
// version, the build recipe and the flags.
func kubeadmCacheKey(toolsDir, goVersion string) (string, error) {
	m := KubeadmTool()
	h := sha256.New()
	fmt.Fprintf(h, "kubeadm recipe %s\ngo %s\nldflags %s\n", recipeVersion, goVersion, m.LDFlags)
	dir := filepath.Join(toolsDir, m.Dir)
	files := []string{"go.mod", "go.sum"}
	gos, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	for _, g := range gos {
		files = append(files, filepath.Base(g))
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// EnsureKubeadm returns the path of kubeadm (KubeadmTool), building it on a cache miss into
// <CacheDir>/kubeadm-<key>/bin as EnsureBinaries builds the others: niced, with the e2e's Go build cache (warm from
// the other Kubernetes binaries, it compiles only kubeadm's own packages: a few minutes on 2 cores), atomically,
// under a lock.
func EnsureKubeadm(ctx context.Context, o BuildOptions) (string, error) {
	o.fill(45 * time.Minute)
	goBin, goVersion, err := goToolVersion(ctx)
	if err != nil {
		return "", err
	}
	key, err := kubeadmCacheKey(o.ToolsDir, goVersion)
	if err != nil {
		return "", fmt.Errorf("cache key: %w", err)
	}
	entry := filepath.Join(o.CacheDir, "kubeadm-"+key)
	bin := filepath.Join(entry, "bin", "kubeadm")
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(entry, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, entry+".lock", o.LockWait, o.Logf)
	if err != nil {
		return "", err
	}
	defer unlock()
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() { // another process built it while we waited
		return bin, nil
	}
	bctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	tmp, err := os.MkdirTemp(entry, "tmp-bin-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	logPath := filepath.Join(entry, "build.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	gocache := os.Getenv("RENDER_STATIC_E2E_GOCACHE")
	if gocache == "" {
		gocache = filepath.Join(o.CacheDir, "go-build")
	}
	m := KubeadmTool()
	modDir := filepath.Join(o.ToolsDir, m.Dir)
	o.Logf("building kubeadm %s into %s (Go build cache %s, log %s)", KubeVersion, filepath.Dir(bin), gocache, logPath)
	if err := downloadModules(bctx, goBin, modDir, logFile, o.Logf); err != nil {
		return "", fmt.Errorf("downloading %s's modules (log %s): %w", m.Dir, logPath, err)
	}
	if err := buildModule(bctx, goBin, modDir, m, tmp, gocache, logFile); err != nil {
		return "", fmt.Errorf("building kubeadm (log %s): %w\n%s", logPath, err, tail(logPath, 40))
	}
	v, err := exec.CommandContext(ctx, filepath.Join(tmp, "kubeadm"), "version", "-o", "short").Output()
	if err != nil || strings.TrimSpace(string(v)) != KubeVersion {
		return "", fmt.Errorf("kubeadm version -o short: %q, %v (want %s)", v, err, KubeVersion)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, filepath.Dir(bin)); err != nil {
		return "", err
	}
	return bin, nil
}
