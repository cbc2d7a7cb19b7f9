package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/internal/testkit/treetest"
)

// TestWorkerCLI: `render-static worker` says its problems with its own flags (a name or IP another node has, an
// IP outside the machine network, no state in --dir, a bad --install-device, a --network-keyfile without its
// --node-ip) and leaves the directory untouched; on a render it adds the worker, says where its worker.ign and
// live.ign (0600) are, what live.ign takes in the live ISO's embed area and which update the control-plane node
// needs; `certs --dir` lists the
// worker's client certificate. A render whose install-config asks for workers it is not given names --workers; one
// whose workers file gives a worker a bad device or a keyfile without its IP names the worker's field, and writes
// nothing.
func TestWorkerCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "aio")
	renderExample(t, dir)
	empty := t.TempDir()
	inputs := t.TempDir()
	// A gateway outside the worker's subnet: NetworkManager takes it, the worker command warns of it.
	w0 := testtools.KeyfileWith(t, inputs, "w0.nmconnection", []string{"ipv4.gateway", "192.168.127.1"}, "192.168.126.11/24")
	other := testtools.Keyfile(t, inputs, "other.nmconnection", "192.168.126.99/24")
	badWorkers := filepath.Join(inputs, "workers.yaml")
	if err := os.WriteFile(badWorkers, []byte("- nodeName: worker-0\n  nodeIP: 192.168.126.11\n  installDevice: sda\n"+
		"- nodeName: worker-1\n  nodeIP: 192.168.126.12\n  networkKeyfiles: [other.nmconnection]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treetest.Contents(t, dir)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"worker", "--dir", dir, "--node-name", "master-0", "--node-ip", "192.168.126.10"}, []string{
			"--node-name: master-0 is already the name of the control-plane node", "--node-ip: 192.168.126.10 is already the IP of the control-plane node master-0"}},
		{[]string{"worker", "--dir", dir, "--node-name", "worker-0", "--node-ip", "10.0.0.1"}, []string{"--node-ip: 10.0.0.1 is not in any networking.machineNetwork"}},
		{[]string{"worker", "--dir", dir}, []string{"--node-name: required", "--node-ip: required"}},
		{[]string{"worker", "--dir", dir, "--node-name", "worker-0", "--node-ip", "192.168.126.11", "--install-device", "sda"},
			[]string{`--install-device: "sda" is not an absolute device path (/dev/..., e.g. /dev/sda or /dev/disk/by-id/...)`}},
		{[]string{"worker", "--dir", dir, "--node-name", "worker-0", "--node-ip", "192.168.126.0", "--install-device", "/dev/vda2"}, []string{
			"--node-ip: 192.168.126.0 is the network address of networking.machineNetwork[0] 192.168.126.0/24, not a host's",
			`--install-device: "/dev/vda2" is a partition (the kernel names vda's partitions vda1, vda2, ...), but coreos-installer writes a whole disk, its own partition table included: give the disk, /dev/vda`}},
		{[]string{"worker", "--dir", dir, "--node-name", "worker-0", "--node-ip", "192.168.126.11", "--network-keyfile", other},
			[]string{"--network-keyfile: 192.168.126.11 (--node-ip) is not a static address of any keyfile", "other.nmconnection: ipv4.method=manual, ipv4.addresses 192.168.126.99/24"}},
		{[]string{"--install-config", repo("examples/sno-workers/install-config.yaml"), "--node-ip", "192.168.126.10", "--dir", filepath.Join(empty, "new"), "--workers", badWorkers},
			[]string{"invalid input (2 problems)", `workers[0].installDevice: "sda" is not an absolute device path`,
				"workers[1].networkKeyfiles: 192.168.126.12 (workers[1].nodeIP) is not a static address of any keyfile"}},
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
	if !maps.EqualFunc(before, treetest.Contents(t, dir), bytes.Equal) {
		t.Errorf("a refused worker command changed %s", dir)
	}
	code, stdout, stderr := runCLI("worker", "--dir", dir, "--node-name", "worker-0", "--node-ip", "192.168.126.11", "--install-device", "/dev/sda",
		"--network-keyfile", w0)
	if code != 0 {
		t.Fatalf("worker: exit %d: %s", code, stderr)
	}
	if want := "warning: --network-keyfile: " + w0 + ": ipv4.gateway 192.168.127.1 is outside the subnet of every ipv4.addresses (192.168.126.11/24)"; !strings.Contains(stderr, want) {
		t.Errorf("worker's stderr lacks %q:\n%s", want, stderr)
	}
	live, err := os.Stat(filepath.Join(dir, "workers", "worker-0", "live.ign"))
	if err != nil || live.Mode().Perm() != 0o600 {
		t.Fatalf("the worker's live.ign: %v %v, want a 0600 file", live, err)
	}
	for _, want := range []string{"worker worker-0 added to " + dir, filepath.Join(dir, "workers", "worker-0", "worker.ign"),
		"apply " + dir + "/update on the control-plane node", "2 other files", // the approver's list, the pod network's routes
		"  its live ISO config: " + filepath.Join(dir, "workers", "worker-0", "live.ign"),
		fmt.Sprintf("\n  worker-0 live.ign: %d bytes; embeds in ", live.Size()),
		"\n  worker-0 install:  to /dev/sda, then reboot; network: w0.nmconnection (live system and installed node)\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("worker's output lacks %q:\n%s", want, stdout)
		}
	}
	checkOutputListed(t, dir) // with workers/ and update/
	if code, stdout, _ := runCLI("certs", "--dir", dir); code != 0 || !strings.Contains(stdout, "file worker-0:/var/lib/kubelet/kubeconfig (user kubelet client)") {
		t.Errorf("certs --dir does not list the worker's certificate (exit %d):\n%s", code, stdout)
	}
}
