package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The renewal test's node-free parts, without root: reading certificates from files, kubeconfigs and a TLS
// handshake, copying an update, running a command bounded.

type testCert struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
}

func (c *testCert) tlsCert() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{c.cert.Raw}, PrivateKey: c.key, Leaf: c.cert}
}

// issue makes a certificate valid from notBefore to notAfter, self-signed when parent is nil.
func issue(t *testing.T, cn string, isCA bool, parent *testCert, notBefore, notAfter time.Time, ips ...net.IP) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, NotBefore: notBefore, NotAfter: notAfter,
		IsCA: isCA, BasicConstraintsValid: true, IPAddresses: ips, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{cert: c, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}
}

func TestCertificatesIn(t *testing.T) {
	now := time.Now()
	ca := issue(t, "ca", true, nil, now.Add(-time.Hour), now.Add(24*time.Hour))
	early := issue(t, "early", false, ca, now.Add(-time.Hour), now.Add(5*time.Minute))
	late := issue(t, "late", false, ca, now.Add(-time.Hour), now.Add(10*time.Minute))
	client := issue(t, "system:node:n", false, ca, now.Add(-time.Hour), now.Add(7*time.Minute))

	dir := t.TempDir()
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("secrets/serving/tls.crt", append(append([]byte{}, early.certPEM...), ca.certPEM...)) // leaf + chain
	write("secrets/other/tls.crt", late.certPEM)
	write("secrets/serving/tls.key", []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"))
	write("configmaps/ca/ca-bundle.crt", ca.certPEM)
	write("notes.txt", []byte("no certificate here"))
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://api:6443", CertificateAuthorityData: ca.certPEM}
	kc.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificateData: client.certPEM, ClientKeyData: []byte("k")}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "node"}
	kc.CurrentContext = "x"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	write("kubeconfig", raw)
	if err := os.Symlink(filepath.Join(dir, "secrets/other/tls.crt"), filepath.Join(dir, "link.crt")); err != nil {
		t.Fatal(err)
	}

	all, err := CertificatesIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range all {
		rel, _ := filepath.Rel(dir, c.Path)
		got = append(got, rel+"="+c.Cert.Subject.CommonName)
	}
	want := "configmaps/ca/ca-bundle.crt=ca kubeconfig#node=system:node:n secrets/other/tls.crt=late secrets/serving/tls.crt=early secrets/serving/tls.crt=ca"
	if strings.Join(got, " ") != want {
		t.Errorf("found %v\nwant %s (the kubeconfig's client certificate, PEM chains; no key, text or symlink)", got, want)
	}
	leaves := Leaves(all)
	if len(leaves) != 3 {
		t.Errorf("%d leaves, want 3", len(leaves))
	}
	if e := Earliest(leaves); e == nil || e.Cert.Subject.CommonName != "early" {
		t.Errorf("earliest = %v, want early", e)
	}
	if exp := Expired(leaves, now.Add(8*time.Minute)); len(exp) != 2 || !strings.Contains(exp[0], "CN=system:node:n") || !strings.Contains(exp[1], "CN=early") {
		t.Errorf("expired 8 minutes on: %v, want the client and early", exp)
	}
	if exp := Expired(leaves, now); len(exp) != 0 {
		t.Errorf("expired now: %v", exp)
	}
	if one, err := CertificatesIn(filepath.Join(dir, "kubeconfig")); err != nil || len(one) != 1 || Fingerprint(one[0].Cert) != Fingerprint(client.cert) {
		t.Errorf("a single kubeconfig file: %v %v", one, err)
	}
	// The kubelet keeps its current client certificate behind a symlink.
	if one, err := CertificatesIn(filepath.Join(dir, "link.crt")); err != nil || len(one) != 1 || one[0].Cert.Subject.CommonName != "late" {
		t.Errorf("a symlink to a certificate: %v %v", one, err)
	}
	if _, err := CertificatesIn(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("a missing path: %v, want not-exist", err)
	}
	// A CERTIFICATE block that does not parse is an error naming its file, not a certificate less to check.
	write("broken/tls.crt", append(append([]byte{}, late.certPEM...), "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"...))
	if _, err := CertificatesIn(filepath.Join(dir, "broken")); err == nil || !strings.Contains(err.Error(), "broken/tls.crt") {
		t.Errorf("a file with a broken certificate: %v, want an error naming it", err)
	}
}

// TestServedCertificate: the certificate a TLS server on 127.0.0.1 presents is read from the handshake; with roots
// that do not hold its CA the handshake fails, with the right roots it verifies.
func TestServedCertificate(t *testing.T) {
	now := time.Now()
	ca := issue(t, "ca", true, nil, now.Add(-time.Hour), now.Add(time.Hour))
	other := issue(t, "other-ca", true, nil, now.Add(-time.Hour), now.Add(time.Hour))
	serving := issue(t, "api.example", false, ca, now.Add(-time.Hour), now.Add(time.Hour), net.ParseIP("127.0.0.1"))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving.tlsCert()}}
	srv.StartTLS()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	ctx := context.Background()

	got, err := ServedCertificate(ctx, addr, "127.0.0.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if Fingerprint(got) != Fingerprint(serving.cert) {
		t.Errorf("served %s, want %s", Describe(got), Describe(serving.cert))
	}
	wrong := x509.NewCertPool()
	wrong.AddCert(other.cert)
	if _, err := ServedCertificate(ctx, addr, "127.0.0.1", wrong); err == nil {
		t.Error("a server whose CA is not in the roots verified")
	}
	right := x509.NewCertPool()
	right.AddCert(ca.cert)
	if _, err := ServedCertificate(ctx, addr, "127.0.0.1", right); err != nil {
		t.Errorf("with its CA: %v", err)
	}
}

func TestCopyTree(t *testing.T) {
	src := filepath.Join(t.TempDir(), "update")
	for rel, mode := range map[string]os.FileMode{"update.json": 0o644, "files/etc/kubernetes/x/tls.key": 0o600, "bin/run": 0o755} {
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(rel), mode); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "copy")
	if err := CopyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	for rel, mode := range map[string]os.FileMode{"update.json": 0o644, "files/etc/kubernetes/x/tls.key": 0o600, "bin/run": 0o755} {
		p := filepath.Join(dst, rel)
		st, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %o, want %o", rel, st.Mode().Perm(), mode)
		}
		if b, _ := os.ReadFile(p); string(b) != rel {
			t.Errorf("%s: content %q", rel, b)
		}
	}
	if err := CopyTree(src, dst); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("copy over an existing directory: %v", err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if err := CopyTree(src, filepath.Join(t.TempDir(), "again")); err == nil || !strings.Contains(err.Error(), "link") {
		t.Errorf("copy of a tree with a symlink: %v, want a refusal naming it", err)
	}
}

// TestRunLogged: output is returned and appended to the log; a failing command's error names it; a command
// that outlives its bound is killed with its process group, and the call returns soon after the bound.
func TestRunLogged(t *testing.T) {
	ctx := context.Background()
	log := filepath.Join(t.TempDir(), "logs", "cmd.log")
	out, err := RunLogged(ctx, 10*time.Second, log, []string{"GREETING=hello"}, "/bin/sh", "-c", `echo "$GREETING"; echo err >&2`)
	if err != nil || out != "hello\nerr\n" {
		t.Errorf("out %q, err %v", out, err)
	}
	if _, err := RunLogged(ctx, 10*time.Second, log, nil, "/bin/sh", "-c", "echo failing; exit 3"); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("a failing command: %v", err)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "hello") || !strings.Contains(string(b), "failing") || strings.Count(string(b), "--- ") != 2 {
		t.Errorf("log:\n%s", b)
	}
	start := time.Now()
	// The child sleep is in the same process group: it dies with the shell, so the pipe closes at once.
	_, err = RunLogged(ctx, time.Second, "", nil, "/bin/sh", "-c", "sleep 30 & sleep 30")
	if err == nil || !strings.Contains(err.Error(), "still running after 1s") {
		t.Errorf("a command past its bound: %v", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("returned %s after a 1s bound", d)
	}
}
