package etcd_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/etcd"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/loops"
)

const node = "sno-0"

// A network case: an install-config and the node IPs it is rendered with.
type netCase struct {
	name, config, nodeIPs string
}

var (
	ipv4 = netCase{"ipv4", rendertest.InstallConfig(), "192.168.126.10"}
	ipv6 = netCase{"ipv6", rendertest.Repo("testdata/installconfig/good/ipv6.yaml"), ""}
	dual = netCase{"dualstack", rendertest.Repo("testdata/installconfig/good/dualstack.yaml"), ""}
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

var renders rendertest.Once[netCase, *rendered]

// render renders a network case with the OpenShift flavor once per test binary (key generation is the slow part).
func render(t *testing.T, nc netCase) *rendered {
	t.Helper()
	return renderFlavor(t, nc, clusterconfig.FlavorOpenShift)
}

// renderUpstream renders a network case with the upstream flavor once per test binary.
func renderUpstream(t *testing.T, nc netCase) *rendered {
	t.Helper()
	return renderFlavor(t, nc, clusterconfig.FlavorUpstream)
}

func renderFlavor(t *testing.T, nc netCase, flavor clusterconfig.Flavor) *rendered {
	t.Helper()
	key := nc
	key.name += "/" + string(flavor)
	r, err := renders.Get(key, func() (*rendered, error) { return doRender(nc, flavor) })
	if err != nil {
		t.Fatalf("render %s (%s flavor): %v", nc.name, flavor, err)
	}
	return r
}

// doRender renders etcd on its own (rendertest.Standalone) and writes its node files to dir/rootfs, as a render
// writes them.
func doRender(nc netCase, flavor clusterconfig.Flavor) (*rendered, error) {
	in, seeds, err := rendertest.StandaloneInputs(nc.config, nc.nodeIPs, flavor)
	if err != nil {
		return nil, err
	}
	c, err := loops.NewCluster(append(append([]string(nil), etcd.Namespaces...), clusterconfig.Namespaces...), clusterconfig.DynamicKinds, seeds...)
	if err != nil {
		return nil, err
	}
	comp := etcd.New(c, in)
	runner, n, tree, err := rendertest.Standalone(context.Background(), c, comp, nil)
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
	out := &rendered{in: in, cluster: c, comp: comp, runner: runner, rev: n, files: map[string]export.File{}, dir: dir}
	for _, f := range tree.Files() {
		out.files[strings.TrimPrefix(f.Path, "/")] = f
	}
	return out, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, r := range renders.Values() {
		os.RemoveAll(r.dir)
	}
	os.Exit(code)
}

func (r *rendered) file(t *testing.T, p string) []byte {
	t.Helper()
	return rendertest.Contents(t, r.files, p)
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
	return getObject(t, "configmap", ns, name, r.cluster.Kube.CoreV1().ConfigMaps(ns).Get)
}

func (r *rendered) secret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	return getObject(t, "secret", ns, name, r.cluster.Kube.CoreV1().Secrets(ns).Get)
}

// getObject reads the kind ns/name of the render's cluster with get (a typed client's Get), or fails the test.
func getObject[T any](t *testing.T, kind, ns, name string, get func(context.Context, string, metav1.GetOptions) (T, error)) T {
	t.Helper()
	o, err := get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s %s/%s: %v", kind, ns, name, err)
	}
	return o
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
