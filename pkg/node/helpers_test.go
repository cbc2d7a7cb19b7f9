package node

import (
	"context"
	"crypto/x509"
	"fmt"
	"github.com/render-static/render-static/internal/testtools"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/crypto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// repo is the repository root, for testdata.
func repo(p string) string { return filepath.Join("..", "..", p) }

// testConfigs are the install-configs the node tests render for, with their node IPs.
var testConfigs = []struct{ name, config, nodeIPs string }{
	{"ipv4", "examples/sno/install-config.yaml", "192.168.126.10"},
	{"ipv6", "testdata/installconfig/good/ipv6.yaml", ""},
	{"dualstack", "testdata/installconfig/good/dualstack.yaml", ""},
	{"proxy", "testdata/installconfig/good/proxy.yaml", ""},
}

func testInputs(t *testing.T, config, nodeIPs string) *clusterconfig.Inputs {
	t.Helper()
	if nodeIPs == "" {
		b, err := os.ReadFile(repo(config))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^# node-ip: (\S+)`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s has no '# node-ip:' comment", config)
		}
		nodeIPs = string(m[1])
	}
	ips, err := installconfig.ParseNodeIPs(nodeIPs)
	if err != nil {
		t.Fatal(err)
	}
	ic, err := installconfig.Load(repo(config), ips)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := certs.NewLifetimes(certs.DefaultLeafValidity)
	if err != nil {
		t.Fatal(err)
	}
	images, err := clusterconfig.LoadImages("", Images)
	if err != nil {
		t.Fatal(err)
	}
	return &clusterconfig.Inputs{InstallConfig: ic, NodeName: "sno-0", NodeIPs: ips, InfraID: "sno-x7k2p", Lifetimes: lt, Images: images}
}

// testCA is a stand-in signer: a self-signed CA and its PEM.
type testCA struct {
	ca              *crypto.CA
	certPEM, keyPEM []byte
	cert            *x509.Certificate
}

func newTestCA(t *testing.T, name string, validity time.Duration) *testCA {
	t.Helper()
	cfg, err := crypto.MakeSelfSignedCAConfigForDuration(fmt.Sprintf("%s@%d", name, time.Now().UnixNano()), validity)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := cfg.GetPEMBytes()
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{ca: &crypto.CA{Config: cfg, SerialGenerator: &crypto.RandomSerialGenerator{}}, certPEM: certPEM, keyPEM: keyPEM, cert: cfg.Certs[0]}
}

// signerSecret is the stand-in for kube-controller-manager's CSR signer, which its component produces.
func (ca *testCA) signerSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: SignerNamespace, Name: SignerName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: ca.certPEM, corev1.TLSPrivateKeyKey: ca.keyPEM},
	}
}

func bundleConfigMap(ns, name string, pem []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"ca-bundle.crt": string(pem)}}
}

// fixture is a render's cluster with what the node side reads from other components, as stand-ins: the CSR
// signer (optional), kube-apiserver's kubelet client CA and its serving CA bundle.
type fixture struct {
	in       *clusterconfig.Inputs
	c        *loops.Cluster
	n        *Node
	signer   *testCA
	kubeletC *testCA // signs kube-apiserver's client certificate to the kubelet
	servingC *testCA // signs kube-apiserver's serving certificates
	extra    []loops.Loop
}

func newFixture(t *testing.T, config, nodeIPs string, withSigner bool) *fixture {
	t.Helper()
	in := testInputs(t, config, nodeIPs)
	f := &fixture{in: in, kubeletC: newTestCA(t, "kube-apiserver-to-kubelet-signer", certs.MinSignerValidity),
		servingC: newTestCA(t, "loadbalancer-serving-signer", certs.MinSignerValidity)}
	seeds, err := clusterconfig.Objects(in)
	if err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds,
		bundleConfigMap(kubeletClientCA.Namespace, kubeletClientCA.Name, f.kubeletC.certPEM),
		bundleConfigMap(apiServerCA.Namespace, apiServerCA.Name, f.servingC.certPEM))
	if withSigner {
		f.signer = newTestCA(t, "kube-csr-signer", certs.MinSignerValidity)
		seeds = append(seeds, runtime.Object(f.signer.signerSecret()))
	}
	f.c, err = loops.NewCluster(append([]string{SignerNamespace}, clusterconfig.Namespaces...), clusterconfig.DynamicKinds, seeds...)
	if err != nil {
		t.Fatal(err)
	}
	f.n = New(f.c, in)
	return f
}

// converge runs the fixture's extra loops and the node's loops to a fixpoint and returns the runner's result.
func (f *fixture) converge(t *testing.T) *loops.Result {
	t.Helper()
	r := &loops.Runner{Cluster: f.c}
	if err := r.Run(context.Background(), loops.Phase{Name: "converge", Loops: append(f.extra, f.n.Loops()...)}); err != nil {
		t.Fatal(err)
	}
	return r.Result()
}

// exported is the filtered export of the fixture's cluster, as the pipeline makes it.
func (f *fixture) exported(t *testing.T) []export.Manifest {
	t.Helper()
	ms, err := export.Manifests(f.c)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := FilterExport(ms)
	return kept
}

var testOptions = Options{ManifestsDir: "/opt/openshift/manifests", AdminKubeconfig: "/opt/openshift/auth/kubeconfig"}

// tree builds the node's tree after the loops settled.
func (f *fixture) tree(t *testing.T) *export.Tree {
	t.Helper()
	o := testOptions
	o.Manifests = f.exported(t)
	tr, err := f.n.Tree(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func fileOf(t *testing.T, tr *export.Tree, p string) export.File {
	t.Helper()
	for _, f := range tr.Files() {
		if f.Path == p {
			return f
		}
	}
	t.Fatalf("the node tree has no %s", p)
	return export.File{}
}

func unitOf(t *testing.T, tr *export.Tree, name string) export.Unit {
	t.Helper()
	for _, u := range tr.Units() {
		if u.Name == name {
			return u
		}
	}
	t.Fatalf("the node tree has no unit %s", name)
	return export.Unit{}
}

// requireTool finds a tool; without it the test is skipped, or fails when the tools are required.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	return testtools.Tool(t, name)
}
