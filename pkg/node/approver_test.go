package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testtools"
)

// testCSR is a pending CSR the stub API serves to the approver.
type testCSR struct {
	name, signer, user string
	cn                 string
	orgs               []string
	dns                []string
	ips                []string
	approve            bool
}

func (c testCSR) request(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: c.cn, Organization: c.orgs}, DNSNames: c.dns}
	for _, ip := range c.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// TestApprover runs aio-csr-approver.sh against a stub API holding pending CSRs, with the real openssl: it
// approves the node's own serving and client-renewal requests, and leaves everything else alone.
func TestApprover(t *testing.T) {
	testtools.Tool(t, "openssl")
	f := newFixture(t, "testdata/installconfig/good/dualstack.yaml", "", true)
	f.converge(t)
	tr := f.tree(t)
	env := unitEnv(t, unitOf(t, tr, ApproverService).Contents)
	node, nodes := "system:node:sno-0", []string{"system:nodes"}
	serving, client := "kubernetes.io/kubelet-serving", "kubernetes.io/kube-apiserver-client-kubelet"
	ips := []string{"192.168.126.10", "fd00::10"}
	csrs := []testCSR{
		{name: "csr-serving", signer: serving, user: node, cn: node, orgs: nodes, dns: []string{"sno-0"}, ips: ips, approve: true},
		{name: "csr-serving-v4", signer: serving, user: node, cn: node, orgs: nodes, dns: []string{"sno-0"}, ips: ips[:1], approve: true},
		{name: "csr-client", signer: client, user: node, cn: node, orgs: nodes, approve: true},
		{name: "csr-serving-other-name", signer: serving, user: node, cn: node, orgs: nodes, dns: []string{"sno-0", "api-int.dual.example.com"}, ips: ips},
		{name: "csr-serving-other-ip", signer: serving, user: node, cn: node, orgs: nodes, dns: []string{"sno-0"}, ips: []string{"10.0.0.1"}},
		{name: "csr-serving-no-names", signer: serving, user: node, cn: node, orgs: nodes},
		{name: "csr-client-other-node", signer: client, user: node, cn: "system:node:sno-1", orgs: nodes},
		{name: "csr-client-masters", signer: client, user: node, cn: node, orgs: []string{"system:masters"}},
		{name: "csr-client-with-names", signer: client, user: node, cn: node, orgs: nodes, dns: []string{"sno-0"}},
		{name: "csr-from-another-node", signer: client, user: "system:node:sno-1", cn: "system:node:sno-1", orgs: nodes},
		{name: "csr-from-bootstrapper", signer: client, user: "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper", cn: node, orgs: nodes},
		{name: "csr-other-signer", signer: "kubernetes.io/kube-apiserver-client", user: node, cn: node, orgs: nodes},
	}
	dir := t.TempDir()
	csrDir := filepath.Join(dir, "csrs")
	if err := os.MkdirAll(csrDir, 0755); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range csrs {
		line := c.name + " " + c.signer + " " + c.user + "\n"
		if err := os.WriteFile(filepath.Join(csrDir, c.name+".line"), []byte(line), 0644); err != nil {
			t.Fatal(err)
		}
		req := base64.StdEncoding.EncodeToString(c.request(t))
		if err := os.WriteFile(filepath.Join(csrDir, c.name+".req"), []byte(req), 0644); err != nil {
			t.Fatal(err)
		}
		if c.approve {
			want = append(want, c.name)
		}
	}
	script := filepath.Join(dir, "approver.sh")
	if err := os.WriteFile(script, fileOf(t, tr, ApproverScript).Contents, 0755); err != nil {
		t.Fatal(err)
	}
	stub := newStubAPI(t)
	out, err := stub.runScript(script, env, "STUB_CSRS="+csrDir)
	if err != nil {
		t.Fatalf("approver: %v\n%s", err, out)
	}
	var approved []string
	for _, l := range stub.calls(t) {
		if i := strings.Index(l, "adm certificate approve "); i >= 0 {
			approved = append(approved, strings.TrimSpace(l[i+len("adm certificate approve "):]))
		}
	}
	slices.Sort(approved)
	slices.Sort(want)
	if !slices.Equal(approved, want) {
		t.Errorf("approved %v, want %v\n%s", approved, want, out)
	}
	for _, c := range csrs {
		if !c.approve && c.user == node && (c.signer == serving || c.signer == client) && !strings.Contains(out, "leaving "+c.name+" ") {
			t.Errorf("%s is not reported as left pending:\n%s", c.name, out)
		}
	}
}

// TestOpensslSAN: the approver compares names in the form openssl prints them.
func TestOpensslSAN(t *testing.T) {
	for in, want := range map[string]string{
		"192.168.126.10": "IP Address:192.168.126.10",
		"fd00::10":       "IP Address:FD00:0:0:0:0:0:0:10",
		"fd00:0:0:1::10": "IP Address:FD00:0:0:1:0:0:0:10",
		"2001:db8::abcd": "IP Address:2001:DB8:0:0:0:0:0:ABCD",
	} {
		if got := opensslSAN("", netip.MustParseAddr(in)); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	if got := opensslSAN("sno-0", netip.Addr{}); got != "DNS:sno-0" {
		t.Errorf("DNS: %q", got)
	}
}
