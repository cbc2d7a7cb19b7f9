package node

import (
	"context"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/loops"
)

// TestCSRApprovalWaitsForSigner: without kube-controller-manager's CSR signer the loop fails with an error naming
// it (the runner retries it next pass), and writes nothing.
func TestCSRApprovalWaitsForSigner(t *testing.T) {
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", false)
	err := f.n.CSRApprovalLoop().Sync(context.Background())
	if err == nil || !strings.Contains(err.Error(), SignerNamespace+"/"+SignerName) {
		t.Fatalf("err = %v, want one naming the CSR signer", err)
	}
	if n := len(f.c.Journal()); n != 0 {
		t.Errorf("the loop wrote %d times without a signer", n)
	}
	r := &loops.Runner{Cluster: f.c}
	err = r.Run(context.Background(), loops.Phase{Name: "converge", Loops: []loops.Loop{f.n.CSRApprovalLoop()}})
	if err == nil || !strings.Contains(err.Error(), CSRApprovalLoopName) {
		t.Errorf("runner: %v, want a not-converged error naming %s", err, CSRApprovalLoopName)
	}
}

// clientCert returns the kubeconfig's client certificate.
func kubeconfigClientCert(t *testing.T, raw []byte) (*x509.Certificate, string, []byte) {
	t.Helper()
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	user, cluster := cfg.AuthInfos[ctx.AuthInfo], cfg.Clusters[ctx.Cluster]
	cs, err := certs.ParseCertificates(user.ClientCertificateData)
	if err != nil || len(cs) != 1 {
		t.Fatalf("client certificate data: %d certificates, %v", len(cs), err)
	}
	if _, err := parsePrivateKey(user.ClientKeyData); err != nil {
		t.Fatalf("client key: %v", err)
	}
	return cs[0], cluster.Server, cluster.CertificateAuthorityData
}

// TestNodeClientCertificate: with a stand-in signer in openshift-kube-controller-manager-operator/csr-signer, the
// loop signs system:node:<name> (O=system:nodes) and the approver's identity; the kubeconfigs point at api-int,
// trust kube-apiserver's serving CA and carry certificates that chain to the signer, live --cert-validity, and
// were made from the key in the kubeconfig. A second pass writes nothing; a rotated signer gets a new certificate.
func TestNodeClientCertificate(t *testing.T) {
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	res := f.converge(t)
	if !strings.Contains(res.Trace(), CSRApprovalLoopName) || !strings.Contains(res.Trace(), "certificatesigningrequests") {
		t.Errorf("the trace does not show the emulated approval:\n%s", res.Trace())
	}
	tr := f.tree(t)
	roots := x509.NewCertPool()
	roots.AddCert(f.signer.cert)
	for path, want := range map[string]struct {
		user   string
		groups []string
	}{
		KubeletKubeconfigPath: {"system:node:sno-0", []string{"system:nodes"}},
		ApproverKubeconfig:    {ApproverUser, nil},
	} {
		file := fileOf(t, tr, path)
		if file.Mode != 0600 {
			t.Errorf("%s: mode %o, want 0600", path, file.Mode)
		}
		leaf, server, ca := kubeconfigClientCert(t, file.Contents)
		if server != "https://api-int.sno.example.com:6443" {
			t.Errorf("%s: server %s, want api-int", path, server)
		}
		if string(ca) != string(f.servingC.certPEM) {
			t.Errorf("%s: the CA is not kube-apiserver-server-ca", path)
		}
		if leaf.Subject.CommonName != want.user || strings.Join(leaf.Subject.Organization, ",") != strings.Join(want.groups, ",") {
			t.Errorf("%s: subject %v, want CN=%s O=%v", path, leaf.Subject, want.user, want.groups)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: does not chain to the CSR signer: %v", path, err)
		}
		if life := leaf.NotAfter.Sub(leaf.NotBefore); life != f.in.Lifetimes.Leaf {
			t.Errorf("%s: lives %s, want %s", path, life, f.in.Lifetimes.Leaf)
		}
	}

	// A second run writes nothing.
	before := len(f.c.Journal())
	f.converge(t)
	if after := len(f.c.Journal()); after != before {
		t.Errorf("a settled node side wrote %d more times", after-before)
	}

	// The signer is rotated (kube-controller-manager's loops run again): the certificates are signed again.
	rotated := newTestCA(t, "kube-csr-signer", 2*time.Hour)
	if _, err := f.c.Kube.CoreV1().Secrets(SignerNamespace).Update(context.Background(), rotated.signerSecret(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.converge(t)
	leaf, _, _ := kubeconfigClientCert(t, fileOf(t, f.tree(t), KubeletKubeconfigPath).Contents)
	rroots := x509.NewCertPool()
	rroots.AddCert(rotated.cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: rroots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("after the signer rotated, the node certificate does not chain to the new signer: %v", err)
	}
	if !leaf.NotAfter.Equal(rotated.cert.NotAfter) {
		t.Errorf("the node certificate outlives its signer: %s > %s", leaf.NotAfter, rotated.cert.NotAfter)
	}
}

// TestTreeNeedsSignedCertificates: building the node's files before the loop signed is an error naming the loop.
func TestTreeNeedsSignedCertificates(t *testing.T) {
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", false)
	_, err := f.n.Tree(context.Background(), testOptions)
	if err == nil || !strings.Contains(err.Error(), CSRApprovalLoopName) {
		t.Fatalf("err = %v", err)
	}
}

// TestCSRApprovalLoopKeepsTheSignerOnlyWhileItsBytesAreSame: one loop, run again after the signer secret
// changed, signs with the new signer (it keeps the parsed signer only while the secret's bytes are the same), and
// fails on a key that no longer belongs to the certificate.
func TestCSRApprovalLoopKeepsTheSignerOnlyWhileItsBytesAreSame(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	loop := f.n.CSRApprovalLoop()
	sync := func(step string, wantWrite bool) {
		t.Helper()
		n := len(f.c.Journal())
		if err := loop.Sync(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if wrote := len(f.c.Journal()) > n; wrote != wantWrite {
			t.Fatalf("%s: wrote %v, want %v", step, wrote, wantWrite)
		}
	}
	sync("first", true)
	sync("same signer", false)

	rotated := newTestCA(t, "kube-csr-signer", 2*time.Hour)
	secrets := f.c.Kube.CoreV1().Secrets(SignerNamespace)
	if _, err := secrets.Update(ctx, rotated.signerSecret(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sync("rotated signer", true)
	csr, err := f.c.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx, f.n.nodeIdentity().csrName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := certs.ParseCertificates(csr.Status.Certificate)
	if err != nil || len(leaf) == 0 {
		t.Fatalf("no certificate after the rotation: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(rotated.cert)
	if _, err := leaf[0].Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("after the rotation, the node certificate does not chain to the new signer: %v", err)
	}
	sync("same rotated signer", false)

	other := newTestCA(t, "other", time.Hour)
	mismatched := rotated.signerSecret()
	mismatched.Data[corev1.TLSPrivateKeyKey] = other.keyPEM
	if _, err := secrets.Update(ctx, mismatched, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := loop.Sync(ctx); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Fatalf("with another key: err = %v", err)
	}
}
