package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkerMessages: what the worker command and the runs after it say. Its report says what it did (no
// "no certificate renewed, but the render changed"), its update's README names it, the next render's summary
// names the pending update without an empty list of rolled pods.
func TestWorkerMessages(t *testing.T) {
	dir, stdout := renderWithWorker(t)
	if strings.Contains(stdout, "but the render changed") || !strings.Contains(stdout, "worker "+dir+": no certificate was due; the update tells the control-plane node of worker worker-2\n") {
		t.Errorf("worker's report does not say what it did:\n%s", stdout)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "update", "README"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(readme), "render-static renew") || !strings.Contains(string(readme), `made by "render-static worker"`) {
		t.Errorf("the worker's update/README:\n%s", readme)
	}
	stdout = renderExample(t, dir)
	if strings.Contains(stdout, ": )") || !strings.Contains(stdout, "no new revision") {
		t.Errorf("the summary after a worker-only update:\n%s", stdout)
	}
}

// renderWithWorker renders the example and adds worker-2 (192.168.126.13) with the worker command: the directory,
// and what the worker command printed.
func renderWithWorker(t *testing.T) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "aio")
	renderExample(t, dir)
	code, stdout, stderr := runCLI("worker", "--dir", dir, "--node-name", "worker-2", "--node-ip", "192.168.126.13")
	if code != 0 {
		t.Fatalf("worker: exit %d: %s", code, stderr)
	}
	return dir, stdout
}
