package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestRefusesHostNamespaces: in the host's namespaces (where `go test` normally runs) the runner and the
// namespace helpers refuse to start. Needs neither root nor tools, so it runs in -short mode too.
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
	r := &Runner{Root: t.TempDir(), BinDir: t.TempDir(), WorkDir: t.TempDir(), LogDir: t.TempDir(), NodeName: "n", NodeIPs: []string{"192.0.2.10"}}
	if err := r.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("Runner.Start in the host network namespace = %v, want a refusal", err)
	}
	if err := r.RunNodeCommand(context.Background(), "x", []string{"/bin/true"}, nil, 0); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("Runner.RunNodeCommand in the host network namespace = %v, want a refusal", err)
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

func TestImageComponent(t *testing.T) {
	for in, want := range map[string]string{
		"registry.k8s.io/kube-apiserver:v1.34.3":  "kube-apiserver",
		"registry.k8s.io/etcd:3.6.5-0":            "etcd",
		"quay.io/coreos/etcd@sha256:0123":         "etcd",
		"localhost:5000/kube-scheduler:v1.34.3":   "kube-scheduler",
		"quay.io/openshift/origin-hyperkube:4.20": "hyperkube",
		"kube-controller-manager":                 "kube-controller-manager",
	} {
		if got := ImageComponent(in); got != want {
			t.Errorf("ImageComponent(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExpand(t *testing.T) {
	vals := map[string]string{"HOST_IP": "10.0.0.1", "NAME": "n"}
	for in, want := range map[string]string{
		"--advertise-address=$(HOST_IP)":  "--advertise-address=10.0.0.1",
		"$(NAME)=https://$(HOST_IP):2380": "n=https://10.0.0.1:2380",
		"$(UNSET) stays":                  "$(UNSET) stays",
		"$$(HOST_IP) is escaped":          "$(HOST_IP) is escaped",
		"cost $5":                         "cost $5",
		"open $(HOST_IP":                  "open $(HOST_IP",
	} {
		if got := expand(in, vals); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDefaultExeName(t *testing.T) {
	for in, want := range map[string]string{
		"go.etcd.io/etcd/server/v3":            "server",
		"go.etcd.io/etcd/etcdctl/v3":           "etcdctl",
		"k8s.io/kubernetes/cmd/kube-apiserver": "kube-apiserver",
	} {
		if got := defaultExeName(in); got != want {
			t.Errorf("defaultExeName(%q) = %q, want %q", in, got, want)
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
