package node

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/crypto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/emulate"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// repo is the repository root, for testdata.
func repo(p string) string { return filepath.Join("..", "..", p) }

// testConfig is an install-config the node tests render for, and what the node side must make of it.
type testConfig struct {
	name, config string
	nodeIPs      string // "": the install-config's "# node-ip:" comment
	clusterDNS   string // the kubelet's clusterDNS
	address      string // the address the kubelet serves on
	apiHosts     string // the /etc/hosts entry of api and api-int
}

// testConfigs are the install-configs the node tests render for, one per IP family and one with a proxy.
var testConfigs = []testConfig{
	{name: "ipv4", config: "examples/sno/install-config.yaml", nodeIPs: "192.168.126.10", clusterDNS: "172.30.0.10", address: "0.0.0.0",
		apiHosts: "192.168.126.10 api.sno.example.com api-int.sno.example.com"},
	{name: "ipv6", config: "testdata/installconfig/good/ipv6.yaml", clusterDNS: "fd02::a", address: "::",
		apiHosts: "fd00:0:0:1::10 api.edge-01.lab.example.org api-int.edge-01.lab.example.org"},
	{name: "dualstack", config: "testdata/installconfig/good/dualstack.yaml", clusterDNS: "172.30.0.10", address: "::",
		apiHosts: "192.168.126.10 api.dual.example.com api-int.dual.example.com"},
	{name: "proxy", config: "testdata/installconfig/good/proxy.yaml", clusterDNS: "172.30.0.10", address: "0.0.0.0",
		apiHosts: "10.0.0.5 api.hub-site-7.corp.example.net api-int.hub-site-7.corp.example.net"},
}

// forEachConfig runs check as a subtest for each of testConfigs, with the config's fixture (with the CSR signer)
// converged and the node's tree.
func forEachConfig(t *testing.T, check func(t *testing.T, tc testConfig, f *fixture, tr *export.Tree)) {
	t.Helper()
	for _, tc := range testConfigs {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.config, tc.nodeIPs, true)
			f.converge(t)
			check(t, tc, f, f.tree(t))
		})
	}
}

func testInputs(t testing.TB, config, nodeIPs string) *clusterconfig.Inputs {
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
	defaults := clusterconfig.AddOnImages(clusterconfig.FlavorOpenShift) // the pod network's add-ons (pkg/podnetwork)
	for k, v := range Images {
		defaults[k] = v
	}
	images, err := clusterconfig.LoadImages("", defaults)
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

func newTestCA(t testing.TB, name string, validity time.Duration) *testCA {
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

func newFixture(t testing.TB, config, nodeIPs string, withSigner bool) *fixture {
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

// converge runs the fixture's extra loops, the node's loops and the namespaces stand-in (as pkg/pipeline does)
// to a fixpoint and returns the runner's result.
func (f *fixture) converge(t testing.TB) *loops.Result {
	t.Helper()
	r := &loops.Runner{Cluster: f.c}
	if err := r.Run(context.Background(), loops.Phase{Name: "converge", Loops: append(append(f.extra, f.n.Loops()...), emulate.Namespaces(f.c))}); err != nil {
		t.Fatal(err)
	}
	return r.Result()
}

// exported is the filtered export of the fixture's cluster, as the pipeline makes it.
func (f *fixture) exported(t testing.TB) []export.Manifest {
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
func (f *fixture) tree(t testing.TB) *export.Tree {
	t.Helper()
	o := testOptions
	o.Manifests = f.exported(t)
	tr, err := f.n.Tree(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func fileOf(t testing.TB, tr *export.Tree, p string) export.File {
	t.Helper()
	return findIn(t, tr.Files(), func(f export.File) bool { return f.Path == p }, p)
}

func unitOf(t testing.TB, tr *export.Tree, name string) export.Unit {
	t.Helper()
	return findIn(t, tr.Units(), func(u export.Unit) bool { return u.Name == name }, "unit "+name)
}

// findIn returns the first of a node tree's files or units that matches, or fails the test naming what is missing.
func findIn[T any](t testing.TB, xs []T, match func(T) bool, what string) T {
	t.Helper()
	i := slices.IndexFunc(xs, match)
	if i < 0 {
		t.Fatalf("the node tree has no %s", what)
	}
	return xs[i]
}
