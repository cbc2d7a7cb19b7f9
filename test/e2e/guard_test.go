package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRefusesHostNamespaces: in the host's namespaces (where `go test` normally runs) the node and the namespace
// helpers refuse to start. Needs neither root nor tools, so it runs in -short mode too.
func TestRefusesHostNamespaces(t *testing.T) {
	self, err := nsLink("self", "net")
	if err != nil {
		t.Skipf("cannot read /proc/self/ns/net: %v", err)
	}
	// With no readable reference at all (e.g. not root) the checks must refuse too: they fail safe.
	if refs := hostNamespaceRefs("net", EnvHostNetns); len(refs) > 0 && !slices.Contains(refs, self) {
		t.Skip("this test process already runs in a private network namespace")
	}
	if err := CheckPrivateNetns(); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("CheckPrivateNetns() = %v, want a refusal", err)
	}
	n := &Node{Root: t.TempDir(), Work: t.TempDir(), BinDir: t.TempDir(), NodeName: "n", Logf: t.Logf}
	if err := n.Mount(); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("Node.Mount in the host's namespaces = %v, want a refusal", err)
	}
	if err := ConfigureNetns(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("ConfigureNetns in the host's network namespace = %v, want a refusal", err)
	}
	if err := JoinNetns(context.Background(), nil, time.Second); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("JoinNetns in the host's network namespace = %v, want a refusal", err)
	}
	if err := LinkWorker(context.Background(), os.Getpid(), "aio-wk-test"); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("LinkWorker in the host's network namespace = %v, want a refusal", err)
	}
	t.Setenv(EnvHostNetns, "net:[1],"+self)
	if err := LinkWorker(context.Background(), os.Getpid(), "aio-wk-test"); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("LinkWorker in a network namespace its creator passed down = %v, want a refusal", err)
	}
	if mnt, err := nsLink("self", "mnt"); err == nil {
		if refs := hostNamespaceRefs("mnt", EnvHostMntns); len(refs) > 0 && !slices.Contains(refs, mnt) {
			return
		}
		if err := CheckPrivateMntns(); err == nil {
			t.Errorf("CheckPrivateMntns() = nil in the host mount namespace, want a refusal")
		}
	}
}

// TestNames: the names the harness derives from a reference: an image's component, a package's executable.
func TestNames(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(string) string
		want map[string]string // argument → result
	}{
		{"ImageComponent", ImageComponent, map[string]string{
			"registry.k8s.io/kube-apiserver:v1.34.3":  "kube-apiserver",
			"registry.k8s.io/etcd:3.6.5-0":            "etcd",
			"quay.io/coreos/etcd@sha256:0123":         "etcd",
			"localhost:5000/kube-scheduler:v1.34.3":   "kube-scheduler",
			"quay.io/openshift/origin-hyperkube:4.20": "hyperkube",
			"kube-controller-manager":                 "kube-controller-manager",
		}},
		{"defaultExeName", defaultExeName, map[string]string{
			"go.etcd.io/etcd/server/v3":            "server",
			"go.etcd.io/etcd/etcdctl/v3":           "etcdctl",
			"k8s.io/kubernetes/cmd/kube-apiserver": "kube-apiserver",
		}},
	} {
		for in, want := range c.want {
			if got := c.f(in); got != want {
				t.Errorf("%s(%q) = %q, want %q", c.name, in, got, want)
			}
		}
	}
}

func TestSystemdWords(t *testing.T) {
	got := systemdWords(`"A=1 2" B=3 'C=x y' D=a\ b`)
	want := []string{"A=1 2", "B=3", "C=x y", "D=a b"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("systemdWords = %q, want %q", got, want)
	}
}

// TestReadKubeletUnit: the rendered kubelet.service's continuation lines and quoting are read as systemd does.
func TestReadKubeletUnit(t *testing.T) {
	root := t.TempDir()
	unit := "[Service]\nExecStartPre=/bin/mkdir --parents /etc/kubernetes/manifests\nExecStart=/usr/bin/kubelet \\\n    --config=/etc/kubernetes/kubelet.conf \\\n    --node-ip=\"192.0.2.1\" \\\n    --v=2\n"
	if err := os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/systemd/system/kubelet.service"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := ReadKubeletUnit(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(u.Start, "|"), "/usr/bin/kubelet|--config=/etc/kubernetes/kubelet.conf|--node-ip=192.0.2.1|--v=2"; got != want {
		t.Errorf("ExecStart = %s, want %s", got, want)
	}
	if len(u.Pre) != 1 || u.Pre[0][0] != "/bin/mkdir" {
		t.Errorf("ExecStartPre = %q", u.Pre)
	}
	if got := applyFlagOverrides([]string{"/usr/bin/kubelet", "--runtime-cgroups=/system.slice/crio.service", "--v=2"}); strings.Join(got, " ") != "/usr/bin/kubelet --v=2" {
		t.Errorf("applyFlagOverrides = %q", got)
	}
}

// TestImageContent: which local binaries each image the render names is built from.
func TestImageContent(t *testing.T) {
	have := func(b string) bool { return b == "kube-apiserver" }
	for img, want := range map[string]string{
		"registry.k8s.io/pause:3.10":             "pause:/pause",
		"registry.k8s.io/etcd:3.6.5-0":           "etcd:/usr/local/bin/etcd etcdctl:/usr/local/bin/etcdctl",
		"registry.k8s.io/kube-apiserver:v1.34.3": "kube-apiserver:/usr/local/bin/kube-apiserver",
	} {
		files, err := imageContent(img, "registry.k8s.io/pause:3.10", have)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range files {
			got = append(got, f.Binary+":"+f.Path)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %q, want %q", img, got, want)
		}
	}
	if _, err := imageContent("quay.io/openshift/origin-hyperkube:4.20", "p", have); err == nil {
		t.Error("an image with no local binary was accepted")
	}
}

// TestReadYAMLReadsJSON: what the outer test writes as JSON for the inner one (the spec, the first boot's state)
// reads back unchanged through readYAML, values YAML would take for other types included.
func TestReadYAMLReadsJSON(t *testing.T) {
	spec := innerSpec{Phase: "boot", Case: "ipv6", Root: "/tmp/x y/root", Work: "no", BinDir: "0700", Images: "1.10",
		NodeName: "null", NodeAddrs: []string{"fd2e:6f44:5dd8:c956::14/64", "192.168.126.10/24"}, Kubeconfig: "~",
		Domain: "on.example.com", OpenShiftPods: "yes: no", CLI: `C:\render "static"`,
		Fleet: &fleetJobSpec{Dir: "/tmp/fleet", Sites: []string{"on", "1e3"}, Shards: 4}}
	st := nodeState{Marker: "0x1f", AiokubeDone: 7}
	for _, c := range []struct{ in, out any }{{&spec, &innerSpec{}}, {&st, &nodeState{}}} {
		data, err := json.MarshalIndent(c.in, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "spec.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := readYAML(p, c.out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.in, c.out) {
			t.Errorf("read back %+v, wrote %+v", c.out, c.in)
		}
	}
}
