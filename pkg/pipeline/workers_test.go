package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	v32 "github.com/coreos/ignition/v2/config/v3_2"
	"github.com/vincent-petithory/dataurl"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/internal/testkit/treetest"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/state"
)

// withReplicas is the bundled example's install-config asking for n workers (compute[0].replicas).
func withReplicas(t *testing.T, n string) []byte {
	t.Helper()
	b, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Replace(b, []byte("compute:\n- name: worker\n  replicas: 0\n"), []byte("compute:\n- name: worker\n  replicas: "+n+"\n"), 1)
	if n == "" {
		out = bytes.Replace(b, []byte("compute:\n- name: worker\n  replicas: 0\n"), nil, 1)
	}
	if bytes.Equal(out, b) && n != "0" {
		t.Fatal("the bundled example's compute section changed: update withReplicas")
	}
	return out
}

// TestValidateWorkers: the workers of a render are the workers file's, as many as the install-config's compute
// replicas ask for (the installer's 3 when compute does not say), and the added ones; each a DNS-1123 name and IPs
// as the node's own are checked, of the control-plane node's families, every name and IP a node's own. Every
// problem is reported at once, named by the file's path (workers[i].nodeName) or the added worker's.
func TestValidateWorkers(t *testing.T) {
	opts := func(replicas, workers string, added ...state.Worker) Options {
		o := Options{InstallConfig: "install-config.yaml", InstallConfigData: withReplicas(t, replicas), NodeIP: "192.168.126.10",
			NodeName: "master-0", Dir: "aio", InfraID: "sno-x7k2p", AddedWorkers: added}
		if workers != "" {
			o.Workers, o.WorkersData = "workers.yaml", []byte(workers)
		}
		return o
	}
	two := "- nodeName: worker-0\n  nodeIP: 192.168.126.11\n- nodeName: worker-1\n  nodeIP: 192.168.126.12\n"
	for _, c := range []struct {
		name string
		o    Options
		want []string // problems; none: valid, with workers wantWorkers
		// wantWorkers are the valid render's workers, "name ips".
		wantWorkers []string
	}{
		{name: "none", o: opts("0", "")},
		{name: "two", o: opts("2", two), wantWorkers: []string{"worker-0 192.168.126.11", "worker-1 192.168.126.12"}},
		{name: "added", o: opts("2", two, state.Worker{NodeName: "worker-2", NodeIP: "192.168.126.13"}),
			wantWorkers: []string{"worker-0 192.168.126.11", "worker-1 192.168.126.12", "worker-2 192.168.126.13"}},
		{name: "unnamed", o: opts("2", ""), want: []string{"workers: the install-config asks for 2 workers (compute replicas; the installer's default pool of 3 when compute does not say), but workers names none: name each (nodeName, nodeIP), or set compute[0].replicas: 0 for a single node"}},
		{name: "installer default", o: opts("", two), want: []string{"workers: the install-config asks for 3 workers (compute replicas; the installer's default pool of 3 when compute does not say), but workers names 2: name each, and add workers to a running cluster with render-static worker"}},
		{name: "too many", o: opts("1", two), want: []string{"workers: the install-config asks for 1 worker (compute replicas; the installer's default pool of 3 when compute does not say), but workers names 2: name each, and add workers to a running cluster with render-static worker"}},
		{name: "not a list", o: opts("1", "nodeName: worker-0\n"), want: []string{"workers: workers.yaml: line 1: cannot unmarshal !!map into []pipeline.workerEntry"}},
		{name: "unknown field", o: opts("1", "- nodeName: worker-0\n  nodeIp: 192.168.126.11\n"), want: []string{"workers: workers.yaml: line 2: field nodeIp not found"}},
		{name: "every problem", o: opts("4", "- nodeName: master-0\n  nodeIP: 192.168.126.10\n- nodeName: Worker_1\n  nodeIP: 10.0.0.1\n"+
			"- nodeName: worker-2\n  nodeIP: 192.168.126.12,fd00::12\n- nodeIP: 192.168.126.13\n",
			state.Worker{NodeName: "worker-2", NodeIP: "192.168.126.13"}), want: []string{
			"workers[0].nodeName: master-0 is already the name of the control-plane node: every node needs a name of its own",
			"workers[0].nodeIP: 192.168.126.10 is already the IP of the control-plane node master-0: every node needs addresses of its own",
			`workers[1].nodeName: "Worker_1" is not a valid node name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			"workers[1].nodeIP: 10.0.0.1 is not in any networking.machineNetwork (192.168.126.0/24)",
			"workers[2].nodeIP: two addresses were given but the cluster is not dual stack (networking.serviceNetwork is IPv4 only)",
			"workers[2].nodeIP: fd00::12 is not in any networking.machineNetwork (192.168.126.0/24)",
			"workers[3].nodeName: required",
			"addedWorkers[0].nodeName: worker-2 is already the name of worker worker-2 (workers[2]): every node needs a name of its own",
			"addedWorkers[0].nodeIP: 192.168.126.13 is already the IP of workers[3]: every node needs addresses of its own",
		}},
		{name: "families", o: opts("1", "- nodeName: worker-0\n  nodeIP: fd00::12\n"), want: []string{
			"workers[0].nodeIP: fd00::12 is IPv6 but the cluster's primary IP family is IPv4 (networking.serviceNetwork[0] 172.30.0.0/16)",
			"workers[0].nodeIP: fd00::12 is not in any networking.machineNetwork (192.168.126.0/24)",
		}},
		{name: "no address", o: opts("1", "- nodeName: worker-0\n"), want: []string{"workers[0].nodeIP: required"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, err := Validate(c.o)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, w := range in.Workers {
					got = append(got, w.Name+" "+joinIPs(w.IPs))
				}
				if !slices.Equal(got, c.wantWorkers) {
					t.Errorf("workers %q, want %q", got, c.wantWorkers)
				}
				return
			}
			list, ok := err.(installconfig.ErrorList)
			if !ok {
				t.Fatalf("error %v, want the problems", err)
			}
			var got []string
			for _, e := range list.Named(nil) { // references to other inputs by their input names
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestRenderWorkers: a render with day-1 workers (the bundled example with compute replicas 2 and its workers
// file, upstream flavor) writes DIR/workers/<name>/: worker.ign (0600) and rootfs/, exactly what worker.ign lays
// down, and live.ign (checkWorkerLive) with the worker's own install device and keyfile; the state keeps the
// workers, their live ISO inputs and embed sizes; the cluster objects say what the installer says for one
// control-plane node and two workers (infrastructure HighlyAvailable, masters not schedulable, ingress on the
// control plane) and declare the workers' Nodes; the control-plane node registers with the master taint; its
// approver lists the workers. A re-render of the directory is byte-identical, workers included, and a run from
// the state takes a worker's saved embed size.
func TestRenderWorkers(t *testing.T) {
	testtools.Long(t, "renders the whole cluster twice")
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "aio")
	o := Options{InstallConfig: repo("examples/sno-workers/install-config.yaml"), NodeIP: "192.168.126.10", Dir: dir,
		Workers: repo("examples/sno-workers/workers.yaml"), Flavor: "upstream"}
	s, err := Render(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Workers, []string{"worker-0 192.168.126.11", "worker-1 192.168.126.12"}) {
		t.Errorf("summary workers %q", s.Workers)
	}
	tree := treetest.Read(t, dir)
	for _, w := range []string{"worker-0", "worker-1"} {
		ign := filepath.Join(WorkersDir, w, WorkerIgnition)
		f, ok := tree[ign]
		if !ok || f.Mode.Perm() != 0600 {
			t.Fatalf("%s: %+v, want a 0600 file", ign, f)
		}
		cfg, rpt, err := v32.Parse(f.Contents)
		if err != nil || len(rpt.Entries) > 0 {
			t.Fatalf("%s does not parse as spec 3.2: %v %v", ign, err, rpt)
		}
		laid := map[string]bool{}
		for _, fl := range cfg.Storage.Files {
			du, err := dataurl.DecodeString(*fl.Contents.Source)
			if err != nil {
				t.Fatal(err)
			}
			data := du.Data
			if fl.Contents.Compression != nil && *fl.Contents.Compression == "gzip" {
				data = gunzip(t, data)
			}
			rf, ok := tree[filepath.Join(WorkersDir, w, "rootfs", fl.Path)]
			if !ok || !bytes.Equal(rf.Contents, data) || int(rf.Mode.Perm()) != *fl.Mode {
				t.Errorf("%s: %s is not in rootfs/ as worker.ign lays it down", w, fl.Path)
			}
			laid[fl.Path] = true
		}
		for p := range tree {
			if rel, ok := strings.CutPrefix(p, filepath.Join(WorkersDir, w, "rootfs")); ok && tree[p].Mode.IsRegular() && !laid[rel] &&
				!strings.HasPrefix(rel, "/etc/systemd/") {
				t.Errorf("%s: rootfs/%s is not in worker.ign", w, rel)
			}
		}
		if len(cfg.Passwd.Users) != 1 || len(cfg.Passwd.Users[0].SSHAuthorizedKeys) == 0 {
			t.Errorf("%s: no ssh key for core", ign)
		}
	}
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	keyfile, err := os.ReadFile(repo("examples/sno-workers/worker-1.nmconnection"))
	if err != nil {
		t.Fatal(err)
	}
	var savedWs []state.Worker
	if _, err := st.Inputs.Get(InWorkers, &savedWs); err != nil {
		t.Fatal(err)
	}
	if len(savedWs) != 2 || !reflect.DeepEqual(savedWs[1], state.Worker{NodeName: "worker-1", NodeIP: "192.168.126.12",
		InstallDevice: "/dev/sda", NetworkKeyfiles: []state.Keyfile{{Name: "worker-1.nmconnection", Contents: string(keyfile)}}}) {
		t.Errorf("saved workers %+v", savedWs)
	}
	checkWorkerLive(t, tree, s, "worker-0", "/dev/disk/by-path/pci-0000:00:1f.2-ata-1", nil)
	checkWorkerLive(t, tree, s, "worker-1", "/dev/sda", keyfile)
	var printed bytes.Buffer
	s.Print(&printed, dir)
	for _, want := range []string{
		fmt.Sprintf("\n  worker-1 live.ign: %d bytes; embeds in %d of the live ISO's 262144 bytes (xz as coreos-installer)\n", len(tree[filepath.Join(WorkersDir, "worker-1", WorkerLiveIgnition)].Contents), s.WorkerLive[1].LiveEmbed.Bytes),
		"\n  worker-1 install:  to /dev/sda, then reboot; network: worker-1.nmconnection (live system and installed node)\n",
		"\n  worker-0 install:  to /dev/disk/by-path/pci-0000:00:1f.2-ata-1, then reboot\n",
	} {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, printed.String())
		}
	}
	for i, w := range s.WorkerLive {
		if saved := st.WorkerLiveEmbeds[w.Name]; saved == nil || *saved != *w.LiveEmbed.Saved {
			t.Errorf("workers[%d]: the state keeps the embed size %+v, the summary says %+v", i, saved, w.LiveEmbed.Saved)
		}
	}
	for file, want := range map[string]string{
		"manifests/05_cluster_infrastructure.config.openshift.io_cluster.yaml": "  infrastructureTopology: HighlyAvailable\n",
		"manifests/05_cluster_scheduler.config.openshift.io_cluster.yaml":      "  mastersSchedulable: false\n",
		"manifests/05_cluster_ingress.config.openshift.io_cluster.yaml":        "  defaultPlacement: ControlPlane\n",
		"manifests/05_cluster_node_worker-1.yaml":                              "    node-role.kubernetes.io/worker: \"\"\n",
		"rootfs/etc/systemd/system/kubelet.service":                            "--register-with-taints=node-role.kubernetes.io/master=:NoSchedule",
		"rootfs/etc/kubernetes/aio-csr-approver.nodes":                         "\nworker-0 192.168.126.11\nworker-1 192.168.126.12\n",
	} {
		if !strings.Contains(string(tree[file].Contents), want) {
			t.Errorf("%s has no %q:\n%s", file, want, tree[file].Contents)
		}
	}

	// A re-render: every input the state's, nothing issued, every file the same (live.ign included, its embed size
	// the saved one).
	s2, err := Render(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s2.FromState, "workers") || !reflect.DeepEqual(s2.WorkerLive, s.WorkerLive) {
		t.Errorf("the re-render's workers: from the state %q; live.ign %+v, was %+v", s2.FromState, s2.WorkerLive, s.WorkerLive)
	}
	again := treetest.Read(t, dir)
	for p, f := range tree {
		if (strings.HasSuffix(p, ".ign") || strings.HasPrefix(p, WorkersDir+"/")) && f.Mode.IsRegular() && !bytes.Equal(again[p].Contents, f.Contents) {
			t.Errorf("the re-render changed %s", p)
		}
	}

	// A run from the state takes a worker's saved embed size for the same live.ign without measuring it again (a
	// made-up size shows it), as it does the control-plane node's.
	st, err = state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.WorkerLiveEmbeds["worker-1"].Bytes = 12345
	saved, _, errs := Options{Dir: dir}.FromState(st, dir)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	in, err := Validate(saved)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := SettleFrom(ctx, in, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Export(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Summary.WorkerLive; got[1].LiveEmbed.Bytes != 12345 || got[0].LiveEmbed.Bytes != s.WorkerLive[0].LiveEmbed.Bytes {
		t.Errorf("from the state: %+v, want worker-1's saved 12345 bytes and worker-0's %d", got, s.WorkerLive[0].LiveEmbed.Bytes)
	}
}

// checkWorkerLive: a worker's live.ign (0600) installs worker.ign (byte for byte, as /etc/coreos/dest.ign) to
// device, with its keyfile (nil: none) for the live system and copied to the installed one; worker.ign lays the
// keyfile down too (0600 in rootfs/), and the summary says its size and its measured embed size.
func checkWorkerLive(t *testing.T, tree map[string]treetest.File, s *Summary, name, device string, keyfile []byte) {
	t.Helper()
	folder := filepath.Join(WorkersDir, name)
	live, ok := tree[filepath.Join(folder, WorkerLiveIgnition)]
	if !ok || live.Mode.Perm() != 0o600 {
		t.Fatalf("%s/live.ign: %+v, want a 0600 file", folder, live)
	}
	files, err := inventory.FromIgnition(live.Contents)
	if err != nil {
		t.Fatal(err)
	}
	installer := "# render-static: install RHCOS with worker.ign as the destination config, then reboot\nignition-file: /etc/coreos/dest.ign\ndest-device: " + device + "\n"
	if keyfile != nil {
		installer += "copy-network: true\n"
	}
	want := map[string][]byte{export.LiveDestPath: tree[filepath.Join(folder, WorkerIgnition)].Contents, export.LiveInstallerConfigPath: []byte(installer)}
	kfPath := path.Join(export.KeyfileDir, name+".nmconnection")
	if keyfile != nil {
		want[kfPath] = keyfile
		if rf := tree[filepath.Join(folder, "rootfs", kfPath)]; !bytes.Equal(rf.Contents, keyfile) || rf.Mode.Perm() != 0o600 {
			t.Errorf("%s: worker.ign does not lay down its keyfile 0600 (%v)", name, rf.Mode)
		}
	}
	if len(files) != len(want) {
		t.Errorf("%s/live.ign writes %d files, want %d", folder, len(files), len(want))
	}
	for p, data := range want {
		if !bytes.Equal(files[p], data) {
			t.Errorf("%s/live.ign: %s is %.80q, want %.80q", folder, p, files[p], data)
		}
	}
	var wl *WorkerLive
	for i := range s.WorkerLive {
		if s.WorkerLive[i].Name == name {
			wl = &s.WorkerLive[i]
		}
	}
	if wl == nil || wl.LiveBytes != len(live.Contents) || !wl.LiveEmbed.Fits() || wl.InstallDevice != device {
		t.Errorf("%s: the summary says %+v of live.ign (%d bytes)", name, wl, len(live.Contents))
	}
}

// TestWorkerFolderModes: a worker's folder holds its key: the folder is 0700, worker.ign 0600.
func TestWorkerFolderModes(t *testing.T) {
	testtools.Long(t, "renders the whole cluster")
	dir := filepath.Join(t.TempDir(), "aio")
	o := Options{InstallConfigData: withReplicas(t, "1"), InstallConfig: "install-config.yaml", NodeIP: "192.168.126.10", Dir: dir,
		WorkersData: []byte("- nodeName: w1\n  nodeIP: 192.168.126.40\n"), Workers: "workers.yaml"}
	if _, err := Render(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]fs.FileMode{filepath.Join(WorkersDir, "w1"): 0o700 | fs.ModeDir, filepath.Join(WorkersDir, "w1", WorkerIgnition): 0o600} {
		st, err := os.Stat(filepath.Join(dir, p))
		if err != nil || st.Mode() != want {
			t.Errorf("%s: %v %v, want %v", p, st.Mode(), err, want)
		}
	}
}

// TestValidateWorkerLiveInputs: each worker of a workers file may give its own live ISO install, as the agent
// installer's hosts do: installDevice, and networkKeyfiles (relative to the workers file's folder, or absolute),
// read when the render reads its inputs and checked as the control-plane node's (NetworkManager reads each, the
// worker's IPs are static addresses of one, names are unique); every problem names the worker's field and the file.
func TestValidateWorkerLiveInputs(t *testing.T) {
	tmp := t.TempDir()
	if err := os.Mkdir(filepath.Join(tmp, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	w0 := testtools.Keyfile(t, filepath.Join(tmp, "net"), "w0.nmconnection", "192.168.126.11/24")
	w1 := testtools.Keyfile(t, tmp, "w1.nmconnection", "192.168.126.12/24")
	other := filepath.Join(tmp, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	w0again := testtools.Keyfile(t, other, "w0.nmconnection", "192.168.126.11/24")
	opts := func(workers string) Options {
		return Options{InstallConfig: "install-config.yaml", InstallConfigData: withReplicas(t, "2"), NodeIP: "192.168.126.10",
			NodeName: "master-0", Dir: "aio", InfraID: "sno-x7k2p", Workers: filepath.Join(tmp, "workers.yaml"), WorkersData: []byte(workers)}
	}
	good := "- nodeName: worker-0\n  nodeIP: 192.168.126.11\n  installDevice: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4\n  networkKeyfiles: [net/w0.nmconnection]\n" +
		"- nodeName: worker-1\n  nodeIP: 192.168.126.12\n  networkKeyfiles: [" + w1 + "]\n"
	in, err := Validate(opts(good))
	if err != nil {
		t.Fatal(err)
	}
	w0data, _ := os.ReadFile(w0)
	w1data, _ := os.ReadFile(w1)
	if w := in.Workers[0]; w.InstallDevice != "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4" || len(w.NetworkKeyfiles) != 1 ||
		w.NetworkKeyfiles[0].Name != "w0.nmconnection" || !bytes.Equal(w.NetworkKeyfiles[0].Contents, w0data) {
		t.Errorf("worker-0: %+v", w)
	}
	if w := in.Workers[1]; w.InstallDevice != "" || len(w.NetworkKeyfiles) != 1 || !bytes.Equal(w.NetworkKeyfiles[0].Contents, w1data) {
		t.Errorf("worker-1: %+v", w)
	}
	// The state keeps the keyfiles' contents, so that later runs need no file.
	o, errs := opts(good).readFiles()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var saved []state.Worker
	if _, err := SaveInputs(o, in).Get(InWorkers, &saved); err != nil {
		t.Fatal(err)
	}
	if len(saved) != 2 || saved[0].InstallDevice != in.Workers[0].InstallDevice || len(saved[0].NetworkKeyfiles) != 1 ||
		saved[0].NetworkKeyfiles[0] != (state.Keyfile{Name: "w0.nmconnection", Contents: string(w0data)}) {
		t.Errorf("saved workers %+v", saved)
	}

	for _, c := range []struct {
		name, workers string
		want          []string
	}{
		{"device", "- nodeName: worker-0\n  nodeIP: 192.168.126.11\n  installDevice: sda\n- nodeName: worker-1\n  nodeIP: 192.168.126.12\n  installDevice: /dev/../etc/passwd\n", []string{
			`workers[0].installDevice: "sda" is not an absolute device path (/dev/..., e.g. /dev/sda or /dev/disk/by-id/...)`,
			`workers[1].installDevice: "/dev/../etc/passwd" is not an absolute device path (/dev/..., e.g. /dev/sda or /dev/disk/by-id/...)`}},
		{"a partition, the subnet's own address", "- nodeName: worker-0\n  nodeIP: 192.168.126.255\n  installDevice: /dev/nvme0n1p1\n" +
			"- nodeName: worker-1\n  nodeIP: 192.168.126.12\n  installDevice: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part3\n", []string{
			`workers[0].installDevice: "/dev/nvme0n1p1" is a partition (the kernel names nvme0n1's partitions nvme0n1p1, nvme0n1p2, ...), but coreos-installer writes a whole disk, its own partition table included: give the disk, /dev/nvme0n1`,
			"workers[0].nodeIP: 192.168.126.255 is the broadcast address of networking.machineNetwork[0] 192.168.126.0/24, not a host's: give the node an address from 192.168.126.1 to 192.168.126.254",
			`workers[1].installDevice: "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part3" is a partition (udev names a disk's partitions <disk>-part1, <disk>-part2, ...), but coreos-installer writes a whole disk, its own partition table included: give the disk, /dev/disk/by-id/wwn-0x5000c500a1b2c3d4`}},
		{"another worker's keyfile", "- nodeName: worker-0\n  nodeIP: 192.168.126.11\n- nodeName: worker-1\n  nodeIP: 192.168.126.12\n  networkKeyfiles: [net/w0.nmconnection]\n", []string{
			"workers[1].networkKeyfiles: 192.168.126.12 (workers[1].nodeIP) is not a static address of any keyfile, and the node must keep it (it is in the node's certificates): w0.nmconnection: ipv4.method=manual, ipv4.addresses 192.168.126.11/24"}},
		{"same name twice", "- nodeName: worker-0\n  nodeIP: 192.168.126.11\n  networkKeyfiles: [net/w0.nmconnection, other/w0.nmconnection]\n- nodeName: worker-1\n  nodeIP: 192.168.126.12\n", []string{
			"workers[0].networkKeyfiles: " + w0again + ": a second keyfile named w0.nmconnection (the first: " + w0 + "): both would be /etc/NetworkManager/system-connections/w0.nmconnection"}},
		{"missing keyfile", "- nodeName: worker-0\n  nodeIP: 192.168.126.11\n  networkKeyfiles: [net/w0.nmconnection, gone.nmconnection]\n- nodeName: worker-1\n  nodeIP: 192.168.126.12\n", []string{
			"workers[0].networkKeyfiles: open " + filepath.Join(tmp, "gone.nmconnection") + ": no such file or directory"}},
		{"paths, not keyfiles", "- nodeName: worker-0\n  nodeIP: 192.168.126.11\n  networkKeyfiles: [{name: a.nmconnection, contents: x}]\n", []string{
			"workers: " + filepath.Join(tmp, "workers.yaml") + ": line 3: cannot unmarshal !!map into string"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Validate(opts(c.workers))
			list, ok := err.(installconfig.ErrorList)
			if !ok {
				t.Fatalf("error %v, want the problems", err)
			}
			var got []string
			for _, e := range list.Named(nil) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}
