package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkerCLI: `render-static worker` says its problems with its own flags (a name or IP another node has, an
// IP outside the machine network, no state in --dir) and leaves the directory untouched; on a render it adds the
// worker, says where its worker.ign is and which update the control-plane node needs; `certs --dir` lists the
// worker's client certificate. A render whose install-config asks for workers it is not given names --workers.
func TestWorkerCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "aio")
	renderExample(t, dir)
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"worker", "--dir", dir, "--node-name", "master-0", "--node-ip", "192.168.126.10"}, []string{
			"--node-name: master-0 is already the name of the control-plane node", "--node-ip: 192.168.126.10 is already the IP of the control-plane node master-0"}},
		{[]string{"worker", "--dir", dir, "--node-name", "worker-0", "--node-ip", "10.0.0.1"}, []string{"--node-ip: 10.0.0.1 is not in any networking.machineNetwork"}},
		{[]string{"worker", "--dir", dir}, []string{"--node-name: required", "--node-ip: required"}},
		{[]string{"worker", "--dir", empty, "--node-name", "worker-0", "--node-ip", "192.168.126.11"}, []string{"--dir: " + empty + " holds no render state"}},
		{[]string{"--install-config", repo("examples/sno-workers/install-config.yaml"), "--node-ip", "192.168.126.10", "--dir", filepath.Join(empty, "new")},
			[]string{"--workers: the install-config asks for 2 workers", "but --workers names none"}},
	} {
		code, _, stderr := runCLI(tc.args...)
		for _, w := range tc.want {
			if code != 1 || !strings.Contains(stderr, w) {
				t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, w)
			}
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("a refused command wrote into %s", empty)
	}
	code, stdout, stderr := runCLI("worker", "--dir", dir, "--node-name", "worker-0", "--node-ip", "192.168.126.11")
	if code != 0 {
		t.Fatalf("worker: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"worker worker-0 added to " + dir, filepath.Join(dir, "workers", "worker-0", "worker.ign"),
		"apply " + dir + "/update on the control-plane node", "1 other files"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("worker's output lacks %q:\n%s", want, stdout)
		}
	}
	if code, stdout, _ := runCLI("certs", "--dir", dir); code != 0 || !strings.Contains(stdout, "file worker-0:/var/lib/kubelet/kubeconfig (user kubelet client)") {
		t.Errorf("certs --dir does not list the worker's certificate (exit %d):\n%s", code, stdout)
	}
}
