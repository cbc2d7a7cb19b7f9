package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testkit/testtools"
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
	have := func(b string) bool {
		return b == "kube-apiserver" || b == "coredns" || b == "agnhost" || b == "kube-proxy"
	}
	for img, want := range map[string]string{
		"registry.k8s.io/pause:3.10":              "pause:/pause",
		"registry.k8s.io/coredns/coredns:v1.12.1": "coredns:/coredns",
		AgnhostImage:                             "agnhost:/agnhost",
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
	// kube-proxy's: its binary first (the entrypoint), then the iptables-nft userspace of this machine.
	if _, err := os.Stat("/usr/sbin/xtables-nft-multi"); err != nil {
		testtools.Missing(t, "iptables (xtables-nft-multi) not installed: run hack/install-test-deps.sh")
		return
	}
	files, err := imageContent("registry.k8s.io/kube-proxy:v1.34.3", "p", have)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, f := range files {
		paths[f.Path] = f.Binary
	}
	if files[0].Binary != "kube-proxy" || files[0].Path != "/usr/local/bin/kube-proxy" {
		t.Errorf("kube-proxy's image starts with %+v", files[0])
	}
	for _, want := range []string{"/usr/sbin/iptables-restore", "/usr/sbin/ip6tables-save", "/usr/lib/x86_64-linux-gnu/xtables/libxt_comment.so",
		"/lib64/ld-linux-x86-64.so.2"} {
		if paths[want] == "" {
			t.Errorf("kube-proxy's image has no %s", want)
		}
	}
	if paths["/usr/sbin/iptables-restore"] != "/usr/sbin/xtables-nft-multi" {
		t.Errorf("iptables-restore comes from %q, want xtables-nft-multi", paths["/usr/sbin/iptables-restore"])
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

// TestReadUnit: a rendered oneshot unit's commands and environment, as the harness runs them (units.go).
func TestReadUnit(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc", "systemd", "system")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "etc", "net.env"), []byte("# comment\nA=1\n"), 0o644)
	unit := "[Unit]\nBefore=kubelet.service crio.service\n[Service]\nType=oneshot\nRemainAfterExit=yes\n" +
		"Environment=\"B=two words\"\nEnvironmentFile=/etc/net.env\nEnvironmentFile=-/etc/none.env\n" +
		"ExecStartPre=-/bin/mkdir -p /run/x\nExecStart=/usr/local/bin/aio-pod-network.sh \\\n  --flag 'a b'\n"
	if err := os.WriteFile(filepath.Join(dir, PodNetworkUnit+".service"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := ReadUnit(root, PodNetworkUnit)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(u.Env, "|"); got != "B=two words|A=1" {
		t.Errorf("Env = %q", got)
	}
	if len(u.Pre) != 1 || strings.Join(u.Pre[0], " ") != "/bin/mkdir -p /run/x" {
		t.Errorf("Pre = %q", u.Pre)
	}
	if len(u.Start) != 1 || !reflect.DeepEqual(u.Start[0], []string{"/usr/local/bin/aio-pod-network.sh", "--flag", "a b"}) {
		t.Errorf("Start = %q", u.Start)
	}
	if _, err := ReadUnit(root, "nothing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a unit not rendered: %v, want ErrNotExist", err)
	}
}

// TestCRIOSettings: the rendered CRI-O drop-in's network settings, as containerd's configuration takes them.
func TestCRIOSettings(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "etc", "crio", "crio.conf.d")
	os.MkdirAll(d, 0o755)
	os.WriteFile(filepath.Join(d, "00-aio.conf"), []byte("[crio.image]\npause_image = \"registry.k8s.io/pause:3.10\"\n"+
		"[crio.network]\nnetwork_dir = \"/etc/kubernetes/cni/net.d/\"\nplugin_dirs = [\"/var/lib/cni/bin\", \"/usr/libexec/cni\"]\n"), 0o644)
	if p, err := crioPauseImage(root); err != nil || p != "registry.k8s.io/pause:3.10" {
		t.Errorf("pause image %q, %v", p, err)
	}
	v, err := crioSetting(root, "plugin_dirs")
	if got := crioStrings(v); err != nil || !reflect.DeepEqual(got, []string{"/var/lib/cni/bin", "/usr/libexec/cni"}) {
		t.Errorf("plugin_dirs %q, %v", got, err)
	}
	v, _ = crioSetting(root, "network_dir")
	if got := crioStrings(v); !reflect.DeepEqual(got, []string{"/etc/kubernetes/cni/net.d/"}) {
		t.Errorf("network_dir %q", got)
	}
}
