package worker

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/internal/testkit/treetest"
	"github.com/render-static/render-static/internal/testkit/updatetest"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/node"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/podnetwork"
	"github.com/render-static/render-static/pkg/renew"
	"github.com/render-static/render-static/pkg/state"
)

// TestAddWorker: `render-static worker` on a render (upstream flavor) adds the worker to the saved inputs, writes
// its folder (worker.ign for system:node:<name>) and an update for the control-plane node with exactly what that
// node must learn: the CSR approver's list with the worker's line, and the worker's declared Node. aio-update
// applies it on a node root laid down from the render before (stub client): the approver's list is replaced and the
// Node applied; nothing else of the node changes. Bad input is refused (checkAddWorkerBadInput). A second worker follows the first (its update names the
// first's as previous, kept in updates/); a re-render keeps both; renew --force renews their render-time client
// certificates.
func TestAddWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("renders and adds workers")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "aio")
	o := pipeline.Options{InstallConfig: repo("examples/sno/install-config.yaml"), NodeIP: "192.168.126.10", NodeName: pipeline.DefaultNodeName,
		Dir: dir, CertValidity: certs.DefaultLeafValidity, Flavor: "upstream"}
	if _, err := pipeline.Render(ctx, o); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := renew.CopyTree(filepath.Join(dir, "rootfs"), root); err != nil {
		t.Fatal(err)
	}

	keyfile := testtools.Keyfile(t, t.TempDir(), "w0.nmconnection", "192.168.126.11/24")
	rep, err := AddWorker(ctx, WorkerOptions{Dir: dir, NodeName: "worker-0", NodeIP: "192.168.126.11", InstallDevice: "/dev/vda", NetworkKeyfiles: []string{keyfile}})
	if err != nil {
		t.Fatal(err)
	}
	var printed strings.Builder
	rep.Print(&printed)
	for _, want := range []string{"  its live ISO config: " + filepath.Join(rep.Folder, pipeline.WorkerLiveIgnition),
		"\n  worker-0 live.ign: ", " bytes; embeds in ", "\n  worker-0 install:  to /dev/vda, then reboot; network: w0.nmconnection (live system and installed node)\n"} {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, printed.String())
		}
	}
	kfData, err := os.ReadFile(keyfile)
	if err != nil {
		t.Fatal(err)
	}
	checkWorkerLiveFiles(t, dir, "worker-0", "/dev/vda", "w0.nmconnection", kfData)
	if rep.Update == nil || rep.Folder != filepath.Join(dir, pipeline.WorkersDir, "worker-0") {
		t.Fatalf("report: update %v, folder %s", rep.Update, rep.Folder)
	}
	var got []string
	for _, f := range rep.Update.Files {
		got = append(got, f.Kind+" "+f.Path+f.Object)
	}
	// The approver's list, the control-plane node's pod network routes (the worker's pod CIDR via the worker) and
	// the worker's declared Node.
	want := []string{renew.KindFile + " " + node.ApproverNodesPath, renew.KindFile + " " + podnetwork.RoutesPath, renew.KindObject + " Node worker-0"}
	if !slices.Equal(got, want) || len(rep.Renewed) != 0 {
		t.Errorf("update %q (renewed %v), want %q and nothing renewed", got, rep.Renewed, want)
	}
	for _, c := range rep.Update.Components {
		if c.From != c.To {
			t.Errorf("adding a worker rolled %s %d -> %d", c.Name, c.From, c.To)
		}
	}
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var added []state.Worker
	if _, err := st.Inputs.Get(pipeline.InAddedWorkers, &added); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(added, []state.Worker{{NodeName: "worker-0", NodeIP: "192.168.126.11", InstallDevice: "/dev/vda",
		NetworkKeyfiles: []state.Keyfile{{Name: "w0.nmconnection", Contents: string(kfData)}}}}) || st.WorkerLiveEmbeds["worker-0"] == nil {
		t.Errorf("saved added workers %+v", added)
	}
	if _, err := os.Stat(filepath.Join(rep.Folder, pipeline.WorkerIgnition)); err != nil {
		t.Error(err)
	}
	inv := updatetest.CertsByName(t, dir)
	if _, ok := inv["file worker-0:"+node.KubeletKubeconfigPath+" (user kubelet client)"]; !ok {
		t.Errorf("render-static certs does not list the worker's client certificate: %v", slices.Sorted(maps.Keys(inv)))
	}

	checkAddWorkerBadInput(t, dir)

	// On the control-plane node.
	e := updatetest.New(t, root)
	before := updatetest.NodeFiles(t, root)
	out, err := e.Run(t, nil, "apply", filepath.Join(dir, renew.UpdateDir))
	if err != nil {
		t.Fatalf("aio-update apply: %v\n%s", err, out)
	}
	changed := updatetest.DiffFiles(before, updatetest.NodeFiles(t, root))
	if slices.Sort(changed); !slices.Equal(changed, []string{node.ApproverNodesPath, podnetwork.RoutesPath}) {
		t.Errorf("the update changed %v on the node, want only %s and %s", changed, node.ApproverNodesPath, podnetwork.RoutesPath)
	}
	// The node learns the worker's pod CIDR (node 1: the second /23 of 10.128.0.0/14) via the worker, and installs it
	// by running the pod network's unit again.
	if b, _ := os.ReadFile(filepath.Join(root, podnetwork.RoutesPath)); !strings.HasSuffix(string(b), "\ncluster 10.128.0.0/14\nroute 10.128.2.0/23 192.168.126.11\n") {
		t.Errorf("the pod network's routes on the node:\n%s", b)
	}
	if calls, _ := os.ReadFile(e.Log); !strings.Contains(string(calls), "systemctl restart "+node.PodNetworkUnit+"\n") {
		t.Errorf("aio-update did not run %s again; calls:\n%s", node.PodNetworkUnit, calls)
	}
	if b, _ := os.ReadFile(filepath.Join(root, node.ApproverNodesPath)); !strings.HasSuffix(string(b), "\nmaster-0 192.168.126.10\nworker-0 192.168.126.11\n") {
		t.Errorf("the approver's nodes on the node:\n%s", b)
	}
	applied, _ := filepath.Glob(filepath.Join(e.API, "*node_worker-0*"))
	if len(applied) != 1 {
		t.Errorf("the Node was not applied to the API (stub storage %s: %v)", e.API, applied)
	}

	// A second worker: its update follows the first's.
	first := rep.Update.ID
	rep, err = AddWorker(ctx, WorkerOptions{Dir: dir, NodeName: "worker-1", NodeIP: "192.168.126.12"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Update == nil || rep.Update.Previous != first {
		t.Errorf("the second worker's update does not follow %s: %+v", first, rep.Update)
	}
	if _, err := os.Stat(filepath.Join(dir, renew.UpdatesDir, first, "update.json")); err != nil {
		t.Errorf("the first worker's update is not kept: %v", err)
	}
	// A re-render and a renew with nothing due: the workers' folders the same, byte for byte, with no input given.
	folders := func() map[string][]byte { return treetest.Contents(t, filepath.Join(dir, pipeline.WorkersDir)) }
	was := folders()
	if _, err := pipeline.Render(ctx, pipeline.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"worker-0", "worker-1"} {
		if _, err := os.Stat(filepath.Join(dir, pipeline.WorkersDir, w, pipeline.WorkerIgnition)); err != nil {
			t.Errorf("a re-render dropped %s: %v", w, err)
		}
	}
	if d := updatetest.DiffFiles(prefixed(was), prefixed(folders())); len(d) > 0 {
		t.Errorf("a re-render changed the workers' folders: %v", d)
	}
	if _, err := renew.Run(ctx, renew.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if d := updatetest.DiffFiles(prefixed(was), prefixed(folders())); len(d) > 0 {
		t.Errorf("a renew with nothing due changed the workers' folders: %v", d)
	}
	renewed, err := renew.Run(ctx, renew.Options{Dir: dir, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	// Renewed, the worker's live.ign carries its new worker.ign, still to its disk with its keyfile.
	checkWorkerLiveFiles(t, dir, "worker-0", "/dev/vda", "w0.nmconnection", kfData)
	for _, w := range []string{"worker-0", "worker-1"} {
		if !slices.Contains(renewed.RenewedObjects("leaf"), "certificatesigningrequest render-static-node-client-"+w) {
			t.Errorf("renew --force did not renew %s's render-time client certificate: %v", w, renewed.RenewedObjects("leaf"))
		}
	}
}

// checkAddWorkerBadInput: on a render dir with worker-0 added, a name or an IP another node has, an IP outside the
// machine network or of another family, missing inputs, a directory without state: errors naming the worker
// command's inputs, nothing written.
func checkAddWorkerBadInput(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	before := treetest.Contents(t, dir)
	empty := t.TempDir()
	kfDir := t.TempDir()
	other := testtools.Keyfile(t, kfDir, "w0.nmconnection", "192.168.126.11/24")
	w1 := testtools.Keyfile(t, kfDir, "w1.nmconnection", "192.168.126.12/24")
	if err := os.Mkdir(filepath.Join(kfDir, "again"), 0o700); err != nil {
		t.Fatal(err)
	}
	w1again := testtools.Keyfile(t, filepath.Join(kfDir, "again"), "w1.nmconnection", "192.168.126.12/24")
	for _, c := range []struct {
		o    WorkerOptions
		want []string
	}{
		{WorkerOptions{Dir: dir, NodeName: "master-0", NodeIP: "192.168.126.10"}, []string{
			"nodeName: master-0 is already the name of the control-plane node: every node needs a name of its own",
			"nodeIP: 192.168.126.10 is already the IP of the control-plane node master-0: every node needs addresses of its own"}},
		{WorkerOptions{Dir: dir, NodeName: "worker-0", NodeIP: "192.168.126.11"}, []string{
			"nodeName: worker-0 is already the name of worker worker-0 (added by render-static worker): every node needs a name of its own",
			"nodeIP: 192.168.126.11 is already the IP of worker worker-0 (added by render-static worker): every node needs addresses of its own"}},
		{WorkerOptions{Dir: dir, NodeName: "worker-1", NodeIP: "10.0.0.1"}, []string{"nodeIP: 10.0.0.1 is not in any networking.machineNetwork (192.168.126.0/24)"}},
		{WorkerOptions{Dir: dir, NodeName: "worker-1", NodeIP: "192.168.126.12,fd00::1"}, []string{
			"nodeIP: two addresses were given but the cluster is not dual stack (networking.serviceNetwork is IPv4 only)",
			"nodeIP: fd00::1 is not in any networking.machineNetwork (192.168.126.0/24)"}},
		{WorkerOptions{Dir: dir, NodeName: "Worker 1", NodeIP: "nope"}, []string{
			`nodeName: "Worker 1" is not a valid node name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`nodeIP: "nope" is not an IP address`}},
		{WorkerOptions{Dir: dir}, []string{"nodeName: required: the worker's name", "nodeIP: required: the worker's IP (two for dual stack)"}},
		{WorkerOptions{Dir: dir, NodeName: "worker-1", NodeIP: "192.168.126.12", InstallDevice: "sdb"}, []string{
			`installDevice: "sdb" is not an absolute device path (/dev/..., e.g. /dev/sda or /dev/disk/by-id/...)`}},
		{WorkerOptions{Dir: dir, NodeName: "worker-1", NodeIP: "192.168.126.12", NetworkKeyfiles: []string{other}}, []string{
			"networkKeyfiles: 192.168.126.12 ({nodeIP}) is not a static address of any keyfile, and the node must keep it (it is in the node's certificates): w0.nmconnection: ipv4.method=manual, ipv4.addresses 192.168.126.11/24"}},
		{WorkerOptions{Dir: dir, NodeName: "worker-1", NodeIP: "192.168.126.12", NetworkKeyfiles: []string{w1, w1again}}, []string{
			"networkKeyfiles: " + w1again + ": a second keyfile named w1.nmconnection (the first: " + w1 + "): both would be /etc/NetworkManager/system-connections/w1.nmconnection"}},
		{WorkerOptions{Dir: dir, NodeName: "worker-1", NodeIP: "192.168.126.12", NetworkKeyfiles: []string{filepath.Join(kfDir, "gone.nmconnection")}}, []string{
			"networkKeyfiles: open " + filepath.Join(kfDir, "gone.nmconnection") + ": no such file or directory"}},
		{WorkerOptions{Dir: empty, NodeName: "worker-1", NodeIP: "192.168.126.12"}, []string{
			"dir: " + empty + " holds no render state (" + empty + "/state/): worker continues a cluster that render-static rendered into this directory"}},
	} {
		_, err := AddWorker(ctx, c.o)
		var list installconfig.ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%+v: error %v, want the problems", c.o, err)
			continue
		}
		var got []string
		for _, e := range list {
			got = append(got, e.Error())
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%+v:\n%s\nwant:\n%s", c.o, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
	after := treetest.Contents(t, dir)
	if d := updatetest.DiffFiles(prefixed(before), prefixed(after)); len(d) > 0 {
		t.Errorf("refused workers changed the directory: %v", d)
	}
}

// checkWorkerLiveFiles: the worker's live.ign in dir installs its worker.ign (byte for byte) to device with its
// keyfile (named keyfileName), which worker.ign lays down too.
func checkWorkerLiveFiles(t *testing.T, dir, name, device, keyfileName string, keyfile []byte) {
	t.Helper()
	folder := filepath.Join(dir, pipeline.WorkersDir, name)
	worker, err := os.ReadFile(filepath.Join(folder, pipeline.WorkerIgnition))
	if err != nil {
		t.Fatal(err)
	}
	live, err := os.ReadFile(filepath.Join(folder, pipeline.WorkerLiveIgnition))
	if err != nil {
		t.Fatal(err)
	}
	files, err := inventory.FromIgnition(live)
	if err != nil {
		t.Fatal(err)
	}
	laid, err := inventory.FromIgnition(worker)
	if err != nil {
		t.Fatal(err)
	}
	kf := path.Join(export.KeyfileDir, keyfileName)
	switch {
	case !bytes.Equal(files[export.LiveDestPath], worker):
		t.Errorf("%s: live.ign does not carry worker.ign", name)
	case !strings.Contains(string(files[export.LiveInstallerConfigPath]), "\ndest-device: "+device+"\ncopy-network: true\n"):
		t.Errorf("%s: live.ign's installer config %q", name, files[export.LiveInstallerConfigPath])
	case !bytes.Equal(files[kf], keyfile) || !bytes.Equal(laid[kf], keyfile):
		t.Errorf("%s: the keyfile %s is not in live.ign and worker.ign", name, kf)
	}
}

func prefixed(m map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range m {
		out["/"+k] = v
	}
	return out
}

func repo(p string) string { return filepath.Join("..", "..", p) }
