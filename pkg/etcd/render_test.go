package etcd_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/internal/rendertest"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/etcd"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/staticpod"
)

// repo is the repository root; shared is ../shared next to it.
func repo(p string) string   { return filepath.Join("..", "..", p) }
func shared(p string) string { return filepath.Join("..", "..", "..", "shared", p) }

const node = "sno-0"

// A network case: an install-config and the node IPs it is rendered with.
type netCase struct {
	name, config, nodeIPs string
}

var (
	ipv4 = netCase{"ipv4", shared("conformance/sno/install-config.yaml"), "192.168.126.10"}
	ipv6 = netCase{"ipv6", repo("testdata/installconfig/good/ipv6.yaml"), ""}
	dual = netCase{"dualstack", repo("testdata/installconfig/good/dualstack.yaml"), ""}
)

// rendered is etcd rendered on its own: the component's loops to a fixpoint, its revision, and the installer
// layout of its static pod (also written to dir/rootfs, as a render writes it).
type rendered struct {
	in      *clusterconfig.Inputs
	cluster *loops.Cluster
	comp    *etcd.Component
	runner  *loops.Runner
	rev     int
	files   map[string]export.File // node path without the leading slash
	dir     string
}

var (
	renderMu sync.Mutex
	renders  = map[string]*rendered{}
	renderEr = map[string]error{}
)

// render renders a network case once per test binary (key generation is the slow part).
func render(t *testing.T, nc netCase) *rendered {
	t.Helper()
	renderMu.Lock()
	defer renderMu.Unlock()
	if r, ok := renders[nc.name]; ok {
		return r
	}
	if err, ok := renderEr[nc.name]; ok {
		t.Fatalf("render %s: %v", nc.name, err)
	}
	r, err := doRender(nc)
	if err != nil {
		renderEr[nc.name] = err
		t.Fatalf("render %s: %v", nc.name, err)
	}
	renders[nc.name] = r
	return r
}

func doRender(nc netCase) (*rendered, error) {
	ips := nc.nodeIPs
	if ips == "" {
		var err error
		if ips, err = rendertest.NodeIPs(nc.config); err != nil {
			return nil, err
		}
	}
	nodeIPs, err := installconfig.ParseNodeIPs(ips)
	if err != nil {
		return nil, err
	}
	ic, err := installconfig.Load(nc.config, nodeIPs)
	if err != nil {
		return nil, err
	}
	lt, err := certs.NewLifetimes(certs.DefaultLeafValidity)
	if err != nil {
		return nil, err
	}
	images, err := clusterconfig.LoadImages("", components.DefaultImages())
	if err != nil {
		return nil, err
	}
	in := &clusterconfig.Inputs{InstallConfig: ic, NodeName: node, NodeIPs: nodeIPs, InfraID: "sno-x7k2p", Lifetimes: lt, Images: images}
	seeds, err := clusterconfig.Objects(in)
	if err != nil {
		return nil, err
	}
	c, err := loops.NewCluster(append(append([]string(nil), etcd.Namespaces...), clusterconfig.Namespaces...), clusterconfig.DynamicKinds, seeds...)
	if err != nil {
		return nil, err
	}
	comp := etcd.New(c, in)
	rev, err := comp.Revision()
	if err != nil {
		return nil, err
	}
	r := &loops.Runner{Cluster: c, MaxPasses: 10}
	ctx := context.Background()
	for _, ph := range []loops.Phase{{Name: "converge", Loops: comp.Converge()}, {Name: "revision", Loops: rev}} {
		if err := r.Run(ctx, ph); err != nil {
			return nil, err
		}
		for _, l := range ph.Loops {
			defer l.Close()
		}
	}
	if err := r.CheckDegraded(); err != nil {
		return nil, err
	}
	n, err := staticpod.LatestRevision(comp.Operator())
	if err != nil {
		return nil, err
	}
	tree, err := export.Install(ctx, c.Kube, comp.StaticPod(), n, node)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "etcd-render-")
	if err != nil {
		return nil, err
	}
	if err := export.WriteRootfs(filepath.Join(dir, "rootfs"), tree); err != nil {
		return nil, err
	}
	out := &rendered{in: in, cluster: c, comp: comp, runner: r, rev: n, files: map[string]export.File{}, dir: dir}
	for _, f := range tree.Files() {
		out.files[strings.TrimPrefix(f.Path, "/")] = f
	}
	return out, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, r := range renders {
		os.RemoveAll(r.dir)
	}
	os.Exit(code)
}

func (r *rendered) file(t *testing.T, p string) []byte {
	t.Helper()
	f, ok := r.files[p]
	if !ok {
		t.Fatalf("the render has no %s", p)
	}
	return f.Contents
}

func (r *rendered) pod(t *testing.T) *corev1.Pod {
	t.Helper()
	pod, err := resourceread.ReadPodV1(r.file(t, "etc/kubernetes/manifests/etcd-pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func (r *rendered) configMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := r.cluster.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configmap %s/%s: %v", ns, name, err)
	}
	return cm
}

func (r *rendered) secret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s, err := r.cluster.Kube.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("secret %s/%s: %v", ns, name, err)
	}
	return s
}

func container(t *testing.T, pod *corev1.Pod, name string) corev1.Container {
	t.Helper()
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("pod has no container %s", name)
	return corev1.Container{}
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

// nodeIPs are the IPs the case was rendered with.
func (r *rendered) nodeIPs() []netip.Addr { return r.in.NodeIPs }
