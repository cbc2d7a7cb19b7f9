package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// The render directory against faults (issue 39, item 6): each test reproduces one defect a reliability trial found.

// bigInstallConfig is the bundled example with comments full of '<' (which JSON escapes as \u003c, six bytes each)
// making it size bytes: under the 64 MiB input limit, while its copy in state/render.json is over it.
func bigInstallConfig(t *testing.T, size int) string {
	t.Helper()
	ic, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Grow(size + len(ic))
	b.Write(ic)
	line := "# " + strings.Repeat("<", 1021) + "\n"
	for b.Len() < size {
		b.WriteString(line)
	}
	p := filepath.Join(t.TempDir(), "install-config.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRefusesStateThatCannotBeRead: an install-config whose saved copy in state/render.json would be over the
// 64 MiB a later run reads is refused at render time (exit 1, --install-config named, nothing written): rendered,
// its cluster could never be re-rendered, renewed or given a worker.
func TestRefusesStateThatCannotBeRead(t *testing.T) {
	testtools.Long(t, "renders")
	ic := bigInstallConfig(t, 12<<20)
	dir := filepath.Join(t.TempDir(), "aio")
	code, stdout, stderr := runCLI("--install-config", ic, "--node-ip", exampleIP, "--dir", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "--install-config: ") || !strings.Contains(stderr, "state/render.json") || !strings.Contains(stderr, "64 MiB") {
		t.Errorf("stderr does not name --install-config and why (its saved copy over 64 MiB):\n%s", stderr)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("%s was written", dir)
	}
}
