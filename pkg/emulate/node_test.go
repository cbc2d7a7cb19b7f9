package emulate

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/loops"
)

func testInputs(t *testing.T, ips ...string) *clusterconfig.Inputs {
	t.Helper()
	in := &clusterconfig.Inputs{
		InstallConfig: &installconfig.InstallConfig{ControlPlane: &installconfig.MachinePool{Architecture: "arm64"}},
		NodeName:      "sno-0", InfraID: "sno-x7k2p",
	}
	for _, ip := range ips {
		in.NodeIPs = append(in.NodeIPs, netip.MustParseAddr(ip))
	}
	lt, err := certs.NewLifetimes(certs.DefaultLeafValidity)
	if err != nil {
		t.Fatal(err)
	}
	in.Lifetimes = lt
	return in
}

// testCluster is a cluster whose loops list namespaces, seeded with objs.
func testCluster(t *testing.T, namespaces []string, objs ...runtime.Object) *loops.Cluster {
	t.Helper()
	c, err := loops.NewCluster(namespaces, nil, objs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// syncTwice runs a loop twice and fails if the second sync writes anything.
func syncTwice(t *testing.T, c *loops.Cluster, l loops.Loop) {
	t.Helper()
	if err := l.Sync(context.Background()); err != nil {
		t.Fatalf("%s: %v", l.Name, err)
	}
	n := len(c.Journal())
	if err := l.Sync(context.Background()); err != nil {
		t.Fatalf("%s (second sync): %v", l.Name, err)
	}
	if w := c.Journal()[n:]; len(w) > 0 {
		t.Errorf("%s wrote again on the second sync: %v", l.Name, w)
	}
}

func TestNodeEmulation(t *testing.T) {
	c := testCluster(t, clusterconfig.Namespaces)
	in := testInputs(t, "192.168.126.10", "fd00::10")
	l := NodeEmulation(c, in)
	if l.Name != "emulate/kubelet-node-registration" {
		t.Errorf("loop name %q", l.Name)
	}
	syncTwice(t, c, l)
	n, err := c.KubeFactory().Core().V1().Nodes().Lister().Get("sno-0")
	if err != nil {
		t.Fatalf("the node is not listed: %v", err)
	}
	for _, label := range []string{"node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane"} {
		if _, ok := n.Labels[label]; !ok {
			t.Errorf("node lacks label %s", label)
		}
	}
	var internal []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = append(internal, a.Address)
		}
	}
	if strings.Join(internal, ",") != "192.168.126.10,fd00::10" {
		t.Errorf("InternalIPs %v, want both families, primary first", internal)
	}
	if v := n.Status.NodeInfo.KubeletVersion; !strings.HasPrefix(v, "v1.") || v != clusterconfig.KubeletVersion() {
		t.Errorf("kubelet version %q", v)
	}
	if n.Status.NodeInfo.Architecture != "arm64" {
		t.Errorf("architecture %q, want the control plane's", n.Status.NodeInfo.Architecture)
	}
	ready := false
	for _, cond := range n.Status.Conditions {
		ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue && !cond.LastTransitionTime.IsZero())
	}
	if !ready {
		t.Errorf("node is not Ready: %+v", n.Status.Conditions)
	}

	// Someone changes the addresses: the emulation puts them back, keeping the Ready condition's times.
	changed := n.DeepCopy()
	changed.Status.Addresses = nil
	if _, err := c.Kube.CoreV1().Nodes().Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	syncTwice(t, c, l)
	again, _ := c.KubeFactory().Core().V1().Nodes().Lister().Get("sno-0")
	if len(again.Status.Addresses) != 3 || !again.Status.Conditions[0].LastTransitionTime.Equal(&n.Status.Conditions[0].LastTransitionTime) {
		t.Errorf("after repair: addresses %v conditions %v", again.Status.Addresses, again.Status.Conditions)
	}
}
