package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

func repo(p string) string { return filepath.Join("..", "..", p) }

// runCLI runs the command in-process.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// renderExample renders the bundled example (node IP 192.168.126.10) through the CLI into dir, with more flags,
// fails the test unless it exits 0 and returns the summary it printed. Under -short it skips the test.
func renderExample(t *testing.T, dir string, flags ...string) string {
	t.Helper()
	testtools.Long(t, "renders the example")
	code, stdout, stderr := runCLI(append([]string{"--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", "192.168.126.10", "--dir", dir}, flags...)...)
	if code != 0 {
		t.Fatalf("render %v: exit %d: %s", flags, code, stderr)
	}
	return stdout
}

// TestBadInstallConfigs runs every bad install-config of the catalogue through the CLI: exit 1, every expected
// problem printed as "field.path: what is wrong", and the output directory neither created nor touched.
func TestBadInstallConfigs(t *testing.T) {
	files, _ := filepath.Glob(repo("testdata/installconfig/bad/*.yaml"))
	if len(files) < 15 {
		t.Fatalf("only %d bad install-configs in the catalogue", len(files))
	}
	nodeIPRE := regexp.MustCompile(`(?m)^# node-ip: (\S+)`)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			raw, _ := os.ReadFile(f)
			nodeIP := "192.168.126.10"
			if m := nodeIPRE.FindSubmatch(raw); m != nil {
				nodeIP = string(m[1])
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := runCLI("--install-config", f, "--node-ip", nodeIP, "--dir", dir)
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
				if !strings.Contains(stderr, line+"\n") {
					t.Errorf("stderr lacks %q:\n%s", line, stderr)
				}
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("output directory was created (%v)", err)
			}
		})
	}
}

// TestAllProblemsAtOnce: flag problems and install-config problems are reported together.
func TestAllProblemsAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCLI("--install-config", repo("testdata/installconfig/bad/control-plane-replicas-3.yaml"), "--node-ip", "not-an-ip",
		"--node-name", "Bad_Name", "--cert-validity", "1m", "--dir", dir)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--node-ip: ", "--node-name: ", "--cert-validity: ", "controlPlane.replicas: "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestExistingOutputUntouchedOnError: a failed render leaves a previous output exactly as it was.
func TestExistingOutputUntouchedOnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(dir, 0755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(marker, []byte("previous"), 0644); err != nil {
		t.Fatal(err)
	}
	code, _, _ := runCLI("--install-config", repo("testdata/installconfig/bad/control-plane-replicas-3.yaml"), "--node-ip", "192.168.126.10", "--dir", dir)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "previous" {
		t.Errorf("previous output changed: %q %v", b, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("temporary files left next to the output: %v", entries)
	}
}

func TestMissingFlags(t *testing.T) {
	// Nothing at all: the usage.
	code, stdout, _ := runCLI()
	if code != 0 || !strings.Contains(stdout, "Usage:") || !strings.Contains(stdout, "--install-config") {
		t.Errorf("no arguments: exit %d, stdout %s", code, stdout)
	}
	code, _, stderr := runCLI("--dir", filepath.Join(t.TempDir(), "new"))
	if code != 1 || !strings.Contains(stderr, "--install-config: required") || !strings.Contains(stderr, "--node-ip: required") {
		t.Errorf("exit %d stderr %s", code, stderr)
	}
	code, _, stderr = runCLI("--install-config", repo("testdata/installconfig/does-not-exist.yaml"), "--node-ip", "192.168.126.10", "--dir", t.TempDir()+"/o")
	if code != 1 || !strings.Contains(stderr, "does-not-exist.yaml") {
		t.Errorf("missing file: exit %d stderr %s", code, stderr)
	}
}

// TestRenderExample renders the bundled example through the CLI and checks the summary and the output layout.
func TestRenderExample(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "aio")
	stdout := renderExample(t, dir, "--node-name", "sno-0")
	for _, want := range []string{"loops:", "fixpoint after", "objects:", "files:", "aio.ign:", "earliest expiry:", "elapsed:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	for _, p := range []string{"aio.ign", "auth/kubeconfig", "trace.txt", "rootfs/etc/hostname"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml")); len(m) < 20 {
		t.Errorf("only %d manifests", len(m))
	}
	// Another node name in the same directory is another cluster: refused, unless --fresh, which replaces it.
	if code, _, stderr := runCLI("--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", "192.168.126.10", "--node-name", "master-0", "--dir", dir); code != 1 || !strings.Contains(stderr, "--node-name") {
		t.Fatalf("re-render as another node without --fresh: exit %d: %s", code, stderr)
	}
	renderExample(t, dir, "--fresh", "--replace-cluster")
	if b, _ := os.ReadFile(filepath.Join(dir, "rootfs/etc/hostname")); string(b) != "master-0\n" {
		t.Errorf("re-render did not replace the output: hostname %q", b)
	}
}

// gcCyclesAtMain is how many collections the runtime made before TestMain, that is while the packages this test
// binary links (the command's) initialized.
var gcCyclesAtMain uint64

func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestNoCollectionBeforeMain: internal/startgc initializes before the packages that allocate (the API schemes,
// library-go's manifests) and keeps collection off through their initialization.
func TestNoCollectionBeforeMain(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the environment decides the collection")
	}
	if gcCyclesAtMain != 0 {
		t.Errorf("the runtime collected %d times while the packages initialized", gcCyclesAtMain)
	}
}
