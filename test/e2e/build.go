// Package e2e boots a rendered aio.ign on a real node and checks it: upstream binaries built from the Go module
// proxy (build.go), images built from them (images.go), Debian's real Ignition laying aio.ign into a directory
// (ignition.go), private network, mount and PID namespaces (netns.go), and there containerd and the kubelet
// (node.go, overrides.go, cri.go; kernel.go puts the machine back). The tests live in *_test.go; see README.md.
package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Versions the wrapper modules pin (tools/k8s/go.mod, tools/etcd/go.mod). Keep them in step with the
// product's library set (k8s.io/* v0.34.3 ↔ k8s.io/kubernetes v1.34.3).
const (
	KubeVersion = "v1.34.3"
	EtcdVersion = "3.6.5"
	// CoreDNSVersion is what tools/coredns/go.mod pins (the module proxy serves it; the image is named by the render).
	CoreDNSVersion = "1.15.0"

	// recipeVersion is part of the cache key: bump it when the build flags below change.
	recipeVersion = "2"
)

// ToolModule is one wrapper module and the binaries built from it.
type ToolModule struct {
	Dir      string            // the wrapper module, relative to the tools directory
	Packages map[string]string // binary name -> main package
	LDFlags  string            // -X flags (on top of -s -w)
	// Tests are test binaries (`go test -c`): binary name -> package. Built after Packages, with the same flags.
	Tests map[string]string
}

// kubeLDFlags stamps the version the way kubernetes' hack/lib/version.sh does; without it the binaries
// report v0.0.0-master+$Format:%H$. A fixed buildDate keeps the build reproducible.
func kubeLDFlags() string {
	var b strings.Builder
	for _, kv := range []string{"gitVersion=" + KubeVersion, "gitMajor=1", "gitMinor=34", "gitTreeState=clean",
		"gitCommit=0000000000000000000000000000000000000000", "buildDate=2025-12-09T00:00:00Z"} {
		fmt.Fprintf(&b, " -X k8s.io/component-base/version.%s -X k8s.io/client-go/pkg/version.%s", kv, kv)
	}
	return strings.TrimSpace(b.String())
}

// Tools are the wrapper modules under test/e2e/tools. They are separate modules (own go.mod + go.sum) so the
// product's go.mod never sees k8s.io/kubernetes, and `go test ./...` of the product does not descend into them.
func Tools() []ToolModule {
	return []ToolModule{
		{Dir: "k8s", LDFlags: kubeLDFlags(), Packages: map[string]string{
			"kube-apiserver":          "k8s.io/kubernetes/cmd/kube-apiserver",
			"kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
			"kube-proxy":              "k8s.io/kubernetes/cmd/kube-proxy",
			"kube-scheduler":          "k8s.io/kubernetes/cmd/kube-scheduler",
			"kubectl":                 "k8s.io/kubernetes/cmd/kubectl",
			"kubelet":                 "k8s.io/kubernetes/cmd/kubelet",
			// The test workload (issue 37): the HTTP server (netexec) and the client of the network checks, as
			// the conformance suite runs it (test/utils/image/manifest.go: registry.k8s.io/e2e-test-images/agnhost:2.56).
			"agnhost": "k8s.io/kubernetes/test/images/agnhost",
		}, Tests: map[string]string{
			// Kubernetes' own conformance suite (issue 37: "a check that nobody here wrote"), conformance.go.
			"e2e.test": "k8s.io/kubernetes/test/e2e",
		}},
		// The cluster DNS image (issue 37): CoreDNS with its default plugin set.
		{Dir: "coredns", Packages: map[string]string{
			"coredns": "github.com/coredns/coredns",
		}},
		{Dir: "etcd", Packages: map[string]string{
			"etcd":    "go.etcd.io/etcd/server/v3",
			"etcdctl": "go.etcd.io/etcd/etcdctl/v3",
		}},
		// Our own small commands: the image writer (go-containerregistry), the sandbox image's process, and the
		// mirror case's registry (go-containerregistry's pkg/registry; mirror.go).
		{Dir: "oci", Packages: map[string]string{
			"oci-image":    "github.com/render-static/render-static/test/e2e/tools/oci/cmd/oci-image",
			"oci-registry": "github.com/render-static/render-static/test/e2e/tools/oci/cmd/oci-registry",
			"pause":        "github.com/render-static/render-static/test/e2e/tools/oci/cmd/pause",
		}},
	}
}

// BuildOptions configures EnsureBinaries.
type BuildOptions struct {
	ToolsDir string        // test/e2e/tools
	CacheDir string        // default: $RENDER_STATIC_E2E_CACHE or ~/go/cache/render-static-e2e
	Timeout  time.Duration // the whole build, default 75 min (a cold build is 10-27 min on 2 cores)
	LockWait time.Duration // how long to wait for another process building the same binaries, default Timeout
	Logf     func(string, ...any)
}

// fill sets the options left zero: the cache directory, the timeout (timeout), the lock's wait (the timeout), a
// silent log.
func (o *BuildOptions) fill(timeout time.Duration) {
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.Timeout == 0 {
		o.Timeout = timeout
	}
	if o.LockWait == 0 {
		o.LockWait = o.Timeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// goToolVersion is the go command the tools are built with and its version (part of every cache key).
func goToolVersion(ctx context.Context) (goBin, version string, err error) {
	if goBin, err = GoTool(); err != nil {
		return "", "", err
	}
	out, err := exec.CommandContext(ctx, goBin, "env", "GOVERSION").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return goBin, strings.TrimSpace(string(out)), nil
}

// BuildResult says where the binaries are and what it cost.
type BuildResult struct {
	BinDir   string
	Key      string
	Cached   bool          // the binaries were already there
	Duration time.Duration // time spent in this call (waiting for the lock included)
}

// DefaultCacheDir is where binaries and their Go build cache live. Only ~/go is promised to survive between CI
// runs on the same machine, so both live there.
func DefaultCacheDir() string {
	if d := os.Getenv("RENDER_STATIC_E2E_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = os.TempDir()
	}
	return filepath.Join(home, "go", "cache", "render-static-e2e")
}

// GoTool returns the go command on PATH (the Makefile and hack scripts put /usr/local/go/bin there).
func GoTool() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go command on PATH: %w", err)
	}
	return p, nil
}

// CacheKey hashes what decides the binaries: every wrapper module's go.mod, go.sum and .go files, the Go
// version and the build recipe.
func CacheKey(toolsDir, goVersion string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "recipe %s\ngo %s\n", recipeVersion, goVersion)
	for _, m := range Tools() {
		files := []string{"go.mod", "go.sum"}
		err := filepath.WalkDir(filepath.Join(toolsDir, m.Dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
				rel, _ := filepath.Rel(filepath.Join(toolsDir, m.Dir), p)
				files = append(files, rel)
			}
			return err
		})
		if err != nil {
			return "", err
		}
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(toolsDir, m.Dir, f))
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s/%s %d\n", m.Dir, f, len(data))
			h.Write(data)
		}
		fmt.Fprintf(h, "ldflags %s\n", m.LDFlags)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// BinaryNames lists every binary EnsureBinaries provides.
func BinaryNames() []string {
	var names []string
	for _, m := range Tools() {
		for n := range m.Packages {
			names = append(names, n)
		}
		for n := range m.Tests {
			names = append(names, n)
		}
	}
	return names
}

func haveAll(binDir string) bool {
	for _, n := range BinaryNames() {
		st, err := os.Stat(filepath.Join(binDir, n))
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// EnsureBinaries returns a directory holding kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
// etcd and etcdctl, building them on a cache miss. The cache entry is
// <CacheDir>/<key>/bin, written atomically (built into a temporary directory, then renamed); a lock file
// keeps parallel test binaries from building the same entry twice.
func EnsureBinaries(ctx context.Context, o BuildOptions) (*BuildResult, error) {
	start := time.Now()
	o.fill(75 * time.Minute)
	goBin, goVersion, err := goToolVersion(ctx)
	if err != nil {
		return nil, err
	}
	key, err := CacheKey(o.ToolsDir, goVersion)
	if err != nil {
		return nil, fmt.Errorf("cache key: %w", err)
	}
	entry := filepath.Join(o.CacheDir, key)
	binDir := filepath.Join(entry, "bin")
	res := &BuildResult{BinDir: binDir, Key: key}
	if haveAll(binDir) {
		res.Cached, res.Duration = true, time.Since(start)
		return res, nil
	}
	if err := os.MkdirAll(entry, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockFile(ctx, filepath.Join(o.CacheDir, key+".lock"), o.LockWait, o.Logf)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if haveAll(binDir) { // another process built them while we waited
		res.Cached, res.Duration = true, time.Since(start)
		return res, nil
	}
	if _, err := os.Stat(binDir); err == nil { // incomplete: cannot happen with the rename, but be safe
		if err := os.RemoveAll(binDir); err != nil {
			return nil, err
		}
	}
	bctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	tmp, err := os.MkdirTemp(entry, "tmp-bin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	logPath := filepath.Join(entry, "build.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	gocache := os.Getenv("RENDER_STATIC_E2E_GOCACHE")
	if gocache == "" {
		gocache = filepath.Join(o.CacheDir, "go-build")
	}
	o.Logf("building %s into %s (Go build cache %s, log %s); a cold build takes 10-27 min on 2 cores",
		strings.Join(BinaryNames(), ", "), binDir, gocache, logPath)
	steps := map[string]string{}
	for _, m := range Tools() {
		t0 := time.Now()
		if err := downloadModules(bctx, goBin, filepath.Join(o.ToolsDir, m.Dir), logFile, o.Logf); err != nil {
			return nil, fmt.Errorf("downloading %s's modules (log %s): %w", m.Dir, logPath, err)
		}
		if err := buildModule(bctx, goBin, filepath.Join(o.ToolsDir, m.Dir), m, tmp, gocache, logFile); err != nil {
			return nil, fmt.Errorf("building %s (log %s): %w\n%s", m.Dir, logPath, err, tail(logPath, 40))
		}
		if err := buildTests(bctx, goBin, filepath.Join(o.ToolsDir, m.Dir), m, tmp, gocache, logFile); err != nil {
			return nil, fmt.Errorf("building %s's test binaries (log %s): %w\n%s", m.Dir, logPath, err, tail(logPath, 40))
		}
		steps[m.Dir] = time.Since(t0).Round(time.Second).String()
		o.Logf("built %s in %s", m.Dir, steps[m.Dir])
	}
	versions := map[string]string{}
	for _, n := range BinaryNames() {
		args := []string{"--version"}
		switch n {
		case "oci-image", "oci-registry", "pause", "agnhost":
			continue // ours, or no version flag (agnhost: its version is the kubernetes module's)
		case "coredns", "e2e.test":
			args = []string{"-version"}
		case "kubectl":
			args = []string{"version", "--client"}
		case "etcdctl":
			args = []string{"version"}
		}
		vctx, vcancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := exec.CommandContext(vctx, filepath.Join(tmp, n), args...).CombinedOutput()
		vcancel()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w\n%s", n, strings.Join(args, " "), err, out)
		}
		versions[n] = strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	if !strings.Contains(versions["kube-apiserver"], KubeVersion) || !strings.Contains(versions["kube-proxy"], KubeVersion) ||
		!strings.Contains(versions["e2e.test"], KubeVersion) ||
		!strings.Contains(versions["etcd"], EtcdVersion) || !strings.Contains(versions["coredns"], CoreDNSVersion) {
		return nil, fmt.Errorf("unexpected versions: %v", versions)
	}
	meta, _ := json.MarshalIndent(map[string]any{"go": goVersion, "key": key, "built": time.Now().UTC().Format(time.RFC3339),
		"steps": steps, "versions": versions, "gocache": gocache}, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "BUILD.json"), append(meta, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, binDir); err != nil {
		return nil, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

// downloadModules fetches a wrapper module's dependencies before the build, each attempt bounded: a download
// from the module proxy was seen to stall for minutes with no progress, and a new process finished the same
// download in a second. The build that follows then needs no network.
func downloadModules(ctx context.Context, goBin, modDir string, log io.Writer, logf func(string, ...any)) error {
	const attempts, perAttempt = 4, 4 * time.Minute
	var err error
	for i := 1; i <= attempts; i++ {
		actx, cancel := context.WithTimeout(ctx, perAttempt)
		cmd := exec.CommandContext(actx, goBin, "mod", "download")
		cmd.Dir = modDir
		cmd.Env = append(filteredEnv("GOFLAGS", "GOWORK"), "GOFLAGS=-mod=readonly", "GOWORK=off")
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 10 * time.Second
		err = cmd.Run()
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		logf("go mod download in %s failed (attempt %d of %d, each bounded by %s): %v", modDir, i, attempts, perAttempt, err)
	}
	return err
}

// goCommand is the go command of the tool builds, run in modDir with the builds' own cache and settings: niced (a
// shared 2-core machine: let interactive work go first), in its own process group (so a cancel kills the
// compilers too) and dying with this process (an orphaned build would run on without the lock, next to the build
// of the next test run). It logs the command line.
func goCommand(ctx context.Context, goBin, modDir, gocache string, args []string, log io.Writer) *exec.Cmd {
	cmdArgs := append([]string{goBin}, args...)
	if nice, err := exec.LookPath("nice"); err == nil {
		cmdArgs = append([]string{nice, "-n", "10"}, cmdArgs...)
	}
	cmd := exec.CommandContext(ctx, cmdArgs[0], cmdArgs[1:]...)
	cmd.Dir = modDir
	cmd.Env = append(filteredEnv("GOFLAGS", "GOWORK", "CGO_ENABLED", "GOCACHE", "GOTOOLCHAIN", "GOOS", "GOARCH"),
		"GOFLAGS=-buildvcs=false", "GOWORK=off", "CGO_ENABLED=0", "GOCACHE="+gocache, "GOTOOLCHAIN=local")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	fmt.Fprintf(log, "+ (cd %s && %s)\n", modDir, strings.Join(cmdArgs, " "))
	return cmd
}

// buildModule runs one `go build` for all of a module's binaries (one command shares the action graph and
// links in parallel), then renames the outputs to their binary names.
func buildModule(ctx context.Context, goBin, modDir string, m ToolModule, outDir, gocache string, log io.Writer) error {
	args := []string{"build", "-mod=readonly", "-trimpath", "-ldflags", strings.TrimSpace("-s -w " + m.LDFlags), "-o", outDir + string(os.PathSeparator)}
	renames := map[string]string{}
	for name, pkg := range m.Packages {
		args = append(args, pkg)
		renames[defaultExeName(pkg)] = name
	}
	if err := goCommand(ctx, goBin, modDir, gocache, args, log).Run(); err != nil {
		return err
	}
	for from, to := range renames {
		if from == to {
			continue
		}
		if err := os.Rename(filepath.Join(outDir, from), filepath.Join(outDir, to)); err != nil {
			return err
		}
	}
	return nil
}

// defaultExeName is the file name `go build -o dir/` gives a main package: its last path element, or the one
// before a /vN major-version suffix.
func defaultExeName(pkg string) string {
	parts := strings.Split(pkg, "/")
	last := parts[len(parts)-1]
	if len(parts) > 1 && len(last) > 1 && last[0] == 'v' && strings.Trim(last[1:], "0123456789") == "" {
		return parts[len(parts)-2]
	}
	return last
}

func filteredEnv(drop ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		keep := true
		for _, d := range drop {
			if strings.HasPrefix(kv, d+"=") {
				keep = false
			}
		}
		if keep {
			env = append(env, kv)
		}
	}
	return env
}

// lockFile takes an exclusive flock on path, polling until wait has passed.
func lockFile(ctx context.Context, path string, wait time.Duration, logf func(string, ...any)) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	logged := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			f.Truncate(0)
			fmt.Fprintf(f, "%d\n", os.Getpid())
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !logged {
			holder, _ := os.ReadFile(path)
			logf("another process (pid %s) is building the binaries; waiting up to %s", strings.TrimSpace(string(holder)), wait)
			logged = true
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("timed out after %s waiting for the build lock %s", wait, path)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
