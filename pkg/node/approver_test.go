package node

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/template"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/export"
)

// The approver tests run the rendered aio-csr-approver.sh with the real openssl, od and base64 against the stub oc
// (testdata/node/bin/oc), the stand-in for kube-apiserver these tests use for every node script: it serves the
// CSR list as kubectl prints it with the script's template (kubectlGoTemplate) and keeps the approvals it gets.
// The real kubectl and kube-apiserver run the same script in the real-node e2e (test/e2e, startCSRApprover).

const (
	servingSigner = certificatesv1.KubeletServingSignerName
	clientSigner  = certificatesv1.KubeAPIServerClientKubeletSignerName
)

// testWorker is a second node for the approver's list: the all-in-one node must never get its name or IPs.
var testWorker = ApproverNode{Name: "worker-1", IPs: []netip.Addr{netip.MustParseAddr("192.168.126.11"), netip.MustParseAddr("fd00::11")}}

// approverHarness is the rendered approver laid down under a root, as Ignition lays it down on the node.
type approverHarness struct {
	script   string            // path of the rendered script
	template string            // its list template
	env      map[string]string // the unit's environment, with APPROVER_ROOT
	root     string
	nodes    []ApproverNode
}

var listTemplateRE = regexp.MustCompile(`(?m)^list_template='([^']*)'$`)

// newApproverHarness lays down the approver's script and nodes file of the tree under a new root; nodes, when
// given, replace the rendered list of nodes (ApproverNodesFile, as a render with workers would write it).
func newApproverHarness(t testing.TB, tr *export.Tree, nodes []ApproverNode) *approverHarness {
	t.Helper()
	testtools.Tool(t, "openssl")
	root := t.TempDir()
	h := &approverHarness{root: root, script: filepath.Join(root, ApproverScript), nodes: nodes,
		env: unitEnv(t, unitOf(t, tr, ApproverService).Contents)}
	h.env["APPROVER_ROOT"] = root
	for _, p := range []string{ApproverScript, ApproverNodesPath} {
		f := fileOf(t, tr, p)
		if err := export.WriteFile(filepath.Join(root, p), f.Mode, f.Contents); err != nil {
			t.Fatal(err)
		}
	}
	if nodes != nil {
		b, err := ApproverNodesFile(nodes)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, ApproverNodesPath), b, 0644); err != nil {
			t.Fatal(err)
		}
	}
	m := listTemplateRE.FindSubmatch(fileOf(t, tr, ApproverScript).Contents)
	if m == nil {
		t.Fatal("the approver has no list_template='...' line")
	}
	h.template = string(m[1])
	return h
}

// kubectlGoTemplate prints CSRs as `kubectl get csr -o go-template=TEXT` prints them (k8s.io/cli-runtime's
// GoTemplatePrinter: the list marshalled to JSON, decoded with apimachinery's json into plain maps and slices, run
// through text/template; kubectl's default --allow-missing-template-keys=true is missingkey=default). A stand-in
// for kubectl itself: cli-runtime is not a dependency of this module (it would bring kustomize); the real kubectl
// prints the same template against a real API server in the real-node e2e.
func kubectlGoTemplate(t testing.TB, text string, csrs []certificatesv1.CertificateSigningRequest) []byte {
	t.Helper()
	items := make([]any, len(csrs))
	for i, c := range csrs {
		c.APIVersion, c.Kind = "certificates.k8s.io/v1", "CertificateSigningRequest"
		items[i] = c
	}
	raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}})
	if err != nil {
		t.Fatal(err)
	}
	var data any
	if err := utiljson.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.New("output").Option("missingkey=default").Parse(text)
	if err != nil {
		t.Fatalf("the approver's template: %v", err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, data); err != nil {
		t.Fatalf("the approver's template: %v", err)
	}
	return out.Bytes()
}

// approverRun is what one run of the approver did.
type approverRun struct {
	out      string
	err      error
	approved []string                                             // names, sorted
	bodies   map[string]*certificatesv1.CertificateSigningRequest // approvals sent, by name (accepted or not)
}

// run runs the approver once against the stub API holding csrs. current: CSR name -> UID of the object the API
// holds under that name by the time of the approval (it replaced the one listed). extra: more "K=V".
func (h *approverHarness) run(t testing.TB, csrs []certificatesv1.CertificateSigningRequest, current map[string]string, extra ...string) approverRun {
	t.Helper()
	stub := newStubAPI(t)
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0644); err != nil {
			t.Fatal(err)
		}
	}
	write("template", []byte(h.template))
	write("list", kubectlGoTemplate(t, h.template, csrs))
	for name, uid := range current {
		write(name+".current", []byte(uid))
	}
	out, err := stub.runScript(h.script, h.env, append([]string{"STUB_CSRS=" + dir}, extra...)...)
	r := approverRun{out: out, err: err, bodies: map[string]*certificatesv1.CertificateSigningRequest{}}
	files, _ := filepath.Glob(filepath.Join(stub.api, "approvals", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var body certificatesv1.CertificateSigningRequest
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			t.Fatalf("approval %s is not a CertificateSigningRequest: %v\n%s", f, err, b)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		r.bodies[name] = &body
		if uid, replaced := current[name]; !replaced || string(body.UID) == uid {
			r.approved = append(r.approved, name)
		}
	}
	slices.Sort(r.approved)
	return r
}

// checkApprovals: every approval sent names the object listed under that name (name, UID, resourceVersion), sets
// Approved=True and nothing else (the approval subresource takes the conditions only), and the log says so.
func (r approverRun) checkApprovals(t testing.TB, csrs []certificatesv1.CertificateSigningRequest) {
	t.Helper()
	for name, body := range r.bodies {
		i := slices.IndexFunc(csrs, func(c certificatesv1.CertificateSigningRequest) bool { return c.Name == name })
		if i < 0 {
			t.Errorf("approval of %q, which was not listed", name)
			continue
		}
		c := csrs[i]
		if body.APIVersion != "certificates.k8s.io/v1" || body.Kind != "CertificateSigningRequest" || body.Name != c.Name ||
			body.UID != c.UID || body.ResourceVersion != c.ResourceVersion {
			t.Errorf("approval of %s is for %s %s uid=%s rv=%s, want the object read: uid=%s rv=%s", name, body.Kind, body.Name, body.UID,
				body.ResourceVersion, c.UID, c.ResourceVersion)
		}
		conds := body.Status.Conditions
		if len(conds) != 1 || conds[0].Type != certificatesv1.CertificateApproved || conds[0].Status != "True" || conds[0].Reason != "AIOCSRApprover" ||
			len(body.Status.Certificate) != 0 || len(body.Spec.Request) != 0 || len(body.Spec.Usages) != 0 || body.Spec.SignerName != "" {
			t.Errorf("approval of %s: %+v", name, body)
		}
	}
	for _, name := range r.approved {
		if !strings.Contains(r.out, "approved "+name+" (") {
			t.Errorf("%s was approved but the log does not say so:\n%s", name, r.out)
		}
	}
}

// Keys of the requests: the kubelet's certificate manager generates ECDSA P-256 keys (client-go
// util/certificate/certificate_manager.go, generateCSR); an RSA key is what a kubelet given a key file of that kind
// would use, and changes the usages it asks for (DefaultKubeletServingGetUsages).
var (
	testKeysOnce sync.Once
	testECKey    *ecdsa.PrivateKey
	testRSAKey   *rsa.PrivateKey
)

func testKeys(t testing.TB) (*ecdsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	testKeysOnce.Do(func() {
		var err error
		if testECKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if testRSAKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return testECKey, testRSAKey
}

// kubeletRequest is a request as the kubelet makes it (client-go util/cert.MakeCSRFromTemplate, with the template
// of k8s.io/kubernetes pkg/kubelet/certificate/kubelet.go: CN=system:node:<node>, O=system:nodes, for a serving
// request the node's names and IPs), PEM.
func kubeletRequest(t testing.TB, key crypto.Signer, node string, dns []string, ips ...string) []byte {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, netip.MustParseAddr(ip).AsSlice())
	}
	b, err := cert.MakeCSRFromTemplate(key, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goRequest is a request made by Go's x509.CreateCertificateRequest from tmpl (for the ones the kubelet would not
// make but Go can), PEM.
func goRequest(t testing.TB, key crypto.Signer, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// DER by hand, for the requests no library makes.
func derOf(tag byte, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	n := len(body)
	var l []byte
	switch {
	case n < 0x80:
		l = []byte{byte(n)}
	case n < 0x100:
		l = []byte{0x81, byte(n)}
	default:
		l = []byte{0x82, byte(n >> 8), byte(n)}
	}
	return append(append([]byte{tag}, l...), body...)
}

func oidDER(oid asn1.ObjectIdentifier) []byte {
	b, err := asn1.Marshal(oid)
	if err != nil {
		panic(err)
	}
	return b
}

var (
	oidO          = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidCN         = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidExtRequest = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 14}
	oidChallenge  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 7}
	oidSAN        = asn1.ObjectIdentifier{2, 5, 29, 17}
	oidUnknownExt = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1}
	oidECDSA256   = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}
)

func atv(oid asn1.ObjectIdentifier, tag byte, v string) []byte {
	return derOf(0x30, oidDER(oid), derOf(tag, []byte(v)))
}
func rdnSet(atvs ...[]byte) []byte    { return derOf(0x31, atvs...) }
func subjectOf(rdns ...[]byte) []byte { return derOf(0x30, rdns...) }

// nodeSubject is the kubelet's subject, as Go encodes it: O=system:nodes, then CN=system:node:<node>.
func nodeSubject(node string) []byte {
	return subjectOf(rdnSet(atv(oidO, 0x13, "system:nodes")), rdnSet(atv(oidCN, 0x13, "system:node:"+node)))
}

func dnsSAN(s string) []byte { return derOf(0x82, []byte(s)) }
func ipSAN(b ...byte) []byte { return derOf(0x87, b) }
func sanExt(names ...[]byte) []byte {
	return derOf(0x30, oidDER(oidSAN), derOf(0x04, derOf(0x30, names...)))
}
func extRequest(exts ...[]byte) []byte {
	return derOf(0x30, oidDER(oidExtRequest), derOf(0x31, derOf(0x30, exts...)))
}
func attributes(attrs ...[]byte) []byte { return derOf(0xa0, attrs...) }

// rawRequest signs the certification request info tbs with the ECDSA key, as a request: PEM.
func rawRequest(t testing.TB, tbs []byte) []byte {
	t.Helper()
	ec, _ := testKeys(t)
	digest := sha256.Sum256(tbs)
	sig, err := ecdsa.SignASN1(rand.Reader, ec, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	der := derOf(0x30, tbs, derOf(0x30, oidDER(oidECDSA256)), derOf(0x03, append([]byte{0}, sig...)))
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// tbsOf is a certification request info for the ECDSA key: version 0, subject, key, attributes.
func tbsOf(t testing.TB, subject, attrs []byte) []byte {
	t.Helper()
	ec, _ := testKeys(t)
	spki, err := x509.MarshalPKIXPublicKey(ec.Public())
	if err != nil {
		t.Fatal(err)
	}
	return derOf(0x30, []byte{2, 1, 0}, subject, spki, attrs)
}

// servingTBS is the node's serving request info with the given names (raw general names).
func servingTBS(t testing.TB, node string, names ...[]byte) []byte {
	return tbsOf(t, nodeSubject(node), attributes(extRequest(sanExt(names...))))
}

func usagesOf(us ...certificatesv1.KeyUsage) []certificatesv1.KeyUsage { return us }

// approverCase is a pending CSR and the decision the approver must make on it.
type approverCase struct {
	name    string
	signer  string
	user    string   // "": system:node:sno-0
	groups  []string // nil: system:nodes, system:authenticated
	usages  []certificatesv1.KeyUsage
	request []byte // PEM
	decided bool   // already approved or denied: not pending
	want    bool   // approved
	// reason is what the log must give for leaving it pending; "" for a CSR the approver must pass over in
	// silence (not a node's kubelet request, not pending).
	reason string
	// escalates: Go's parser, which kube-controller-manager signs with, finds a name or IP of the request that is not
	// the node's own (approving it would have granted one).
	escalates bool
}

// csr is the CSR object of the case, as kube-apiserver would list it.
func (c approverCase) csr(i int) certificatesv1.CertificateSigningRequest {
	user, groups := c.user, c.groups
	if user == "" {
		user = "system:node:sno-0"
	}
	if groups == nil {
		groups = []string{"system:nodes", "system:authenticated"}
	}
	o := certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: c.name, UID: types.UID(testUID(i)), ResourceVersion: strings.Repeat("7", 1+i%5) + "1"},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: c.request, SignerName: c.signer, Username: user, Groups: groups, Usages: c.usages},
	}
	if c.decided {
		o.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: "True"}}
	}
	return o
}

func testUID(i int) string { return fmt.Sprintf("6f1c2d3e-0000-4000-8000-%012x", i) }

// approverCorpus are the requests the approver must decide right: the kubelet's own, and crafted ones.
func approverCorpus(t testing.TB, dir string) []approverCase {
	ec, rsaKey := testKeys(t)
	ips := []string{"192.168.126.10", "fd00::10"}
	servingEC, clientEC := certificate.DefaultKubeletServingGetUsages(ec), certificate.DefaultKubeletClientGetUsages(ec)
	servingRSA, clientRSA := certificate.DefaultKubeletServingGetUsages(rsaKey), certificate.DefaultKubeletClientGetUsages(rsaKey)
	honest := kubeletRequest(t, ec, "sno-0", []string{"sno-0"}, ips...)
	node := func(tmpl x509.CertificateRequest) []byte {
		if tmpl.Subject.CommonName == "" {
			tmpl.Subject = pkix.Name{CommonName: "system:node:sno-0", Organization: []string{"system:nodes"}}
		}
		return goRequest(t, ec, &tmpl)
	}
	v4 := net.IP{192, 168, 126, 10}
	ed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	badSig := func(p []byte) []byte {
		b, _ := pem.Decode(p)
		der := bytes.Clone(b.Bytes)
		der[len(der)-3] ^= 0x55
		return pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: der})
	}
	pwned := filepath.Join(dir, "pwned")
	tbsBody := derBody(servingTBS(t, "sno-0", dnsSAN("sno-0")))
	if len(tbsBody) >= 0x100 || !bytes.HasPrefix(tbsBody, []byte{2, 1, 0}) {
		t.Fatalf("the serving request info is %d bytes, starting %x", len(tbsBody), tbsBody[:3])
	}
	var many []string
	for i := range 400 {
		many = append(many, "sno-0-"+strings.Repeat("x", i%50))
	}
	honestDER, _ := pem.Decode(honest)
	wide := "-----BEGIN CERTIFICATE REQUEST-----\n"
	for b64 := base64Std(honestDER.Bytes); len(b64) > 0; {
		n := min(76, len(b64))
		wide, b64 = wide+b64[:n]+"\n", b64[n:]
	}
	wide += "-----END CERTIFICATE REQUEST-----\n"
	serving := func(name string, request []byte, usages []certificatesv1.KeyUsage, want bool, reason string) approverCase {
		return approverCase{name: name, signer: servingSigner, request: request, usages: usages, want: want, reason: reason}
	}
	return []approverCase{
		// What the kubelet asks for: approved.
		serving("kubelet-serving-ecdsa", honest, servingEC, true, ""),
		serving("kubelet-serving-ipv4-only", kubeletRequest(t, ec, "sno-0", []string{"sno-0"}, ips[0]), servingEC, true, ""),
		serving("kubelet-serving-rsa", kubeletRequest(t, rsaKey, "sno-0", []string{"sno-0"}, ips...), servingRSA, true, ""),
		{name: "kubelet-client-ecdsa", signer: clientSigner, request: kubeletRequest(t, ec, "sno-0", nil), usages: clientEC, want: true},
		{name: "kubelet-client-rsa", signer: clientSigner, request: kubeletRequest(t, rsaKey, "sno-0", nil), usages: clientRSA, want: true},
		{name: "worker-serving", signer: servingSigner, user: "system:node:worker-1", usages: servingEC, want: true,
			request: kubeletRequest(t, ec, "worker-1", []string{"worker-1"}, "192.168.126.11", "fd00::11")},
		serving("subject-utf8string", rawRequest(t, tbsOf(t, subjectOf(rdnSet(atv(oidO, 0x0c, "system:nodes")), rdnSet(atv(oidCN, 0x0c, "system:node:sno-0"))),
			attributes(extRequest(sanExt(dnsSAN("sno-0"), ipSAN(v4...)))))), servingEC, true, ""),

		// Names that openssl's text output hid or split.
		{name: "dns-newline", signer: servingSigner, usages: servingEC, escalates: true, reason: "a DNS name with a byte that is not",
			request: node(x509.CertificateRequest{DNSNames: []string{"sno-0\n", "api-int.dual.example.com"},
				IPAddresses: []net.IP{v4, {10, 0, 0, 1}}})},
		{name: "fake-san-header", signer: servingSigner, usages: servingEC, escalates: true, reason: "more than one extension",
			request: node(x509.CertificateRequest{ExtraExtensions: []pkix.Extension{
				{Id: oidUnknownExt, Value: []byte("\n            X509v3 Subject Alternative Name: \n                DNS:sno-0\n")},
				{Id: oidSAN, Value: derOf(0x30, dnsSAN("sno-0"), dnsSAN("api-int.dual.example.com"), ipSAN(v4...), ipSAN(10, 0, 0, 1))}}})},
		serving("fake-san-header-after", rawRequest(t, tbsOf(t, nodeSubject("sno-0"), attributes(extRequest(sanExt(dnsSAN("sno-0")),
			derOf(0x30, oidDER(oidUnknownExt), derOf(0x04, []byte("X509v3 Subject Alternative Name:\nDNS:sno-0\n"))))))), servingEC, false, "more than one extension"),
		serving("dns-comma", node(x509.CertificateRequest{DNSNames: []string{"sno-0, IP Address:192.168.126.10"}}), servingEC, false, "a DNS name with a byte that is not"),
		serving("dns-space", node(x509.CertificateRequest{DNSNames: []string{"sno 0"}}), servingEC, false, "a DNS name with a byte that is not"),
		serving("dns-upper-case", node(x509.CertificateRequest{DNSNames: []string{"SNO-0"}}), servingEC, false, "a DNS name with a byte that is not"),
		serving("dns-nul", node(x509.CertificateRequest{DNSNames: []string{"sno-0\x00evil"}}), servingEC, false, "a DNS name with a byte that is not"),
		serving("dns-colon", node(x509.CertificateRequest{DNSNames: []string{"sno-0:6443"}}), servingEC, false, "a DNS name with a byte that is not"),
		serving("dns-trailing-dot", node(x509.CertificateRequest{DNSNames: []string{"sno-0."}}), servingEC, false, "not a DNS-1123 subdomain: sno-0."),
		serving("dns-wildcard", node(x509.CertificateRequest{DNSNames: []string{"*.sno-0"}}), servingEC, false, "a DNS name with a byte that is not"),
		serving("dns-empty", node(x509.CertificateRequest{DNSNames: []string{""}, IPAddresses: []net.IP{v4}}), servingEC, false, "not a DNS-1123 subdomain"),

		// Names and IPs that are not the node's.
		{name: "dns-api-int", signer: servingSigner, usages: servingEC, escalates: true, reason: "a DNS name other than node sno-0's: api-int.dual.example.com",
			request: kubeletRequest(t, ec, "sno-0", []string{"sno-0", "api-int.dual.example.com"}, ips...)},
		{name: "dns-other-node", signer: servingSigner, usages: servingEC, escalates: true, reason: "a DNS name other than node sno-0's: worker-1",
			request: kubeletRequest(t, ec, "sno-0", []string{"sno-0", "worker-1"}, ips...)},
		{name: "ip-other-node", signer: servingSigner, usages: servingEC, escalates: true, reason: "an IP address other than node sno-0's: 192.168.126.11 (node worker-1's)",
			request: kubeletRequest(t, ec, "sno-0", []string{"sno-0"}, "192.168.126.10", "192.168.126.11")},
		{name: "ipv6-other-node", signer: servingSigner, usages: servingEC, escalates: true, reason: "an IP address other than node sno-0's: fd00:0:0:0:0:0:0:11 (node worker-1's)",
			request: kubeletRequest(t, ec, "sno-0", []string{"sno-0"}, "fd00::11")},
		{name: "ip-elsewhere", signer: servingSigner, usages: servingEC, escalates: true, reason: "an IP address other than node sno-0's: 10.0.0.1",
			request: kubeletRequest(t, ec, "sno-0", []string{"sno-0"}, "10.0.0.1")},
		{name: "worker-asks-for-sno-0", signer: servingSigner, user: "system:node:worker-1", usages: servingEC, escalates: true,
			reason: "a DNS name other than node worker-1's: sno-0", request: kubeletRequest(t, ec, "worker-1", []string{"sno-0"}, "192.168.126.11")},
		serving("ipv4-mapped-ipv6", rawRequest(t, servingTBS(t, "sno-0", dnsSAN("sno-0"), ipSAN(netip.AddrFrom16(netip.MustParseAddr("::ffff:192.168.126.10").As16()).AsSlice()...))),
			servingEC, false, "an IP address other than node sno-0's: 0:0:0:0:0:ffff:c0a8:7e0a"),
		serving("ip-5-bytes", rawRequest(t, servingTBS(t, "sno-0", ipSAN(192, 168, 126, 10, 0))), servingEC, false, "an IP address of 5 bytes"),
		serving("email", node(x509.CertificateRequest{DNSNames: []string{"sno-0"}, EmailAddresses: []string{"root@sno-0"}}), servingEC, false, "an email address"),
		serving("uri", rawRequest(t, servingTBS(t, "sno-0", dnsSAN("sno-0"), derOf(0x86, []byte("spiffe://sno-0")))), servingEC, false, "a URI"),
		serving("directory-name", rawRequest(t, servingTBS(t, "sno-0", dnsSAN("sno-0"), derOf(0xa4, nodeSubject("sno-0")))), servingEC, false, "a name with tag 0xa4"),
		serving("dns-constructed", rawRequest(t, servingTBS(t, "sno-0", derOf(0xa2, dnsSAN("api-int.dual.example.com")))), servingEC, false, "a name with tag 0xa2"),
		serving("no-names", node(x509.CertificateRequest{}), servingEC, false, "a serving request without names"),
		serving("empty-san", rawRequest(t, servingTBS(t, "sno-0")), servingEC, false, "no name at all"),

		// Extensions and attributes the kubelet does not ask for.
		serving("duplicate-san", rawRequest(t, tbsOf(t, nodeSubject("sno-0"), attributes(extRequest(sanExt(dnsSAN("sno-0")), sanExt(dnsSAN("api-int.dual.example.com")))))),
			servingEC, false, "more than one extension"),
		serving("two-extension-requests", rawRequest(t, tbsOf(t, nodeSubject("sno-0"), attributes(extRequest(sanExt(dnsSAN("sno-0"))), extRequest(sanExt(dnsSAN("api-int.dual.example.com")))))),
			servingEC, false, "more than one attribute"),
		serving("extension-request-two-values", rawRequest(t, tbsOf(t, nodeSubject("sno-0"), attributes(derOf(0x30, oidDER(oidExtRequest),
			derOf(0x31, derOf(0x30, sanExt(dnsSAN("sno-0"))), derOf(0x30, sanExt(dnsSAN("api-int.dual.example.com")))))))), servingEC, false, "more than one value"),
		serving("challenge-password", rawRequest(t, tbsOf(t, nodeSubject("sno-0"), attributes(derOf(0x30, oidDER(oidChallenge), derOf(0x31, derOf(0x0c, []byte("x"))))))),
			servingEC, false, "an attribute other than extensionRequest"),
		serving("unknown-extension-only", node(x509.CertificateRequest{ExtraExtensions: []pkix.Extension{{Id: oidUnknownExt, Value: []byte{5, 0}}}}),
			servingEC, false, "an extension other than the subject alternative name"),
		serving("critical-san", rawRequest(t, tbsOf(t, nodeSubject("sno-0"), attributes(extRequest(derOf(0x30, oidDER(oidSAN), []byte{1, 1, 0xff},
			derOf(0x04, derOf(0x30, dnsSAN("sno-0")))))))), servingEC, false, "critical or malformed"),
		serving("san-trailing-bytes", rawRequest(t, tbsOf(t, nodeSubject("sno-0"), attributes(extRequest(derOf(0x30, oidDER(oidSAN),
			derOf(0x04, derOf(0x30, dnsSAN("sno-0")), dnsSAN("api-int.dual.example.com"))))))), servingEC, false, "bytes after its names"),
		{name: "client-with-names", signer: clientSigner, usages: clientEC, reason: "a client request with attributes",
			request: kubeletRequest(t, ec, "sno-0", []string{"sno-0"})},
		{name: "client-with-ip", signer: clientSigner, usages: clientEC, reason: "a client request with attributes",
			request: kubeletRequest(t, ec, "sno-0", nil, ips[0])},

		// Usages other than the kubelet's.
		serving("usages-plus-client-auth", honest, usagesOf("digital signature", "server auth", "client auth"), false, "its usages are ,digital signature,server auth,client auth,"),
		serving("usages-any", honest, usagesOf("digital signature", "server auth", "any"), false, "its usages are"),
		serving("usages-duplicate", honest, usagesOf("digital signature", "server auth", "server auth"), false, "its usages are"),
		serving("usages-no-server-auth", honest, usagesOf("digital signature"), false, "its usages are"),
		serving("usages-key-encipherment-ecdsa", honest, servingRSA, false, "with an ec key the kubelet asks for exactly ,digital signature,server auth,"),
		serving("usages-rsa-without-key-encipherment", kubeletRequest(t, rsaKey, "sno-0", []string{"sno-0"}, ips...), servingEC, false,
			"with an rsa key the kubelet asks for exactly ,digital signature,key encipherment,server auth,"),
		serving("usages-client-on-serving", honest, clientEC, false, "its usages are"),
		{name: "usages-serving-on-client", signer: clientSigner, usages: servingEC, request: kubeletRequest(t, ec, "sno-0", nil), reason: "its usages are"},

		// Subjects other than exactly the kubelet's.
		{name: "subject-masters", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly O=system:nodes, CN=system:node:sno-0",
			request: goRequest(t, ec, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:sno-0", Organization: []string{"system:masters"}}})},
		{name: "subject-extra-o", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: goRequest(t, ec, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:sno-0", Organization: []string{"system:nodes", "system:masters"}}})},
		{name: "subject-extra-o-rdn", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: rawRequest(t, tbsOf(t, subjectOf(rdnSet(atv(oidO, 0x13, "system:nodes")), rdnSet(atv(oidO, 0x13, "system:masters")), rdnSet(atv(oidCN, 0x13, "system:node:sno-0"))), attributes()))},
		{name: "subject-ou", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: goRequest(t, ec, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:sno-0", Organization: []string{"system:nodes"}, OrganizationalUnit: []string{"x"}}})},
		{name: "subject-cn-comma", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: goRequest(t, ec, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:sno-0,O=system:masters", Organization: []string{"system:nodes"}}})},
		{name: "subject-cn-other-node", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: kubeletRequest(t, ec, "worker-1", nil)},
		{name: "subject-cn-first", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: rawRequest(t, tbsOf(t, subjectOf(rdnSet(atv(oidCN, 0x13, "system:node:sno-0")), rdnSet(atv(oidO, 0x13, "system:nodes"))), attributes()))},
		{name: "subject-one-rdn", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: rawRequest(t, tbsOf(t, subjectOf(rdnSet(atv(oidO, 0x13, "system:nodes"), atv(oidCN, 0x13, "system:node:sno-0"))), attributes()))},
		{name: "subject-ia5string", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: rawRequest(t, tbsOf(t, subjectOf(rdnSet(atv(oidO, 0x16, "system:nodes")), rdnSet(atv(oidCN, 0x16, "system:node:sno-0"))), attributes()))},
		{name: "subject-not-der", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: rawRequest(t, tbsOf(t, subjectOf(append([]byte{0x31, 0x81}, derBody(rdnSet(atv(oidO, 0x13, "system:nodes")))...), rdnSet(atv(oidCN, 0x13, "system:node:sno-0"))), attributes()))},
		{name: "subject-no-o", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: goRequest(t, ec, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:sno-0"}})},

		// Shell metacharacters in every field the script reads: nothing runs, nothing is approved.
		{name: "csr-$(touch " + pwned + "-name)", signer: servingSigner, usages: servingEC, request: honest, reason: "its name is not a DNS-1123 subdomain"},
		{name: "csr-x\nsno-0|kubernetes.io/kubelet-serving|system:node:sno-0", signer: servingSigner, usages: servingEC, request: honest,
			reason: "its name is not a DNS-1123 subdomain"},
		{name: "subject-shell", signer: clientSigner, usages: clientEC, reason: "its subject is not exactly",
			request: goRequest(t, ec, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:sno-0`touch " + pwned + "-cn`$(touch " + pwned + "-cn)", Organization: []string{"system:nodes"}}})},
		serving("dns-shell", node(x509.CertificateRequest{DNSNames: []string{"$(touch " + pwned + "-dns)", "`touch " + pwned + "-dns`"}}), servingEC, false, "a DNS name with a byte that is not"),
		{name: "user-shell", signer: servingSigner, user: "system:node:sno-0$(touch " + pwned + "-user)", usages: servingEC, request: honest},
		{name: "groups-shell", signer: servingSigner, groups: []string{"system:nodes", "$(touch " + pwned + "-group)"}, usages: servingEC, request: honest,
			reason: "its requester's groups are not system:nodes"},
		{name: "usages-shell", signer: servingSigner, usages: usagesOf("digital signature", "server auth", certificatesv1.KeyUsage("$(touch "+pwned+"-usage)")), request: honest, reason: "its usages are"},

		// Requesters other than a listed node's kubelet, and CSRs that are not pending: passed over.
		{name: "from-unlisted-node", signer: servingSigner, user: "system:node:worker-2", usages: servingEC, request: kubeletRequest(t, ec, "worker-2", []string{"worker-2"}, "192.168.126.12")},
		{name: "from-user-with-newline", signer: servingSigner, user: "system:node:sno-0\n", usages: servingEC, request: honest},
		{name: "from-bootstrapper", signer: clientSigner, user: "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper",
			groups: []string{"system:serviceaccounts"}, usages: clientEC, request: kubeletRequest(t, ec, "sno-0", nil)},
		{name: "other-signer", signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientEC, request: kubeletRequest(t, ec, "sno-0", nil)},
		{name: "already-decided", signer: servingSigner, usages: servingEC, request: honest, decided: true},
		{name: "groups-masters", signer: servingSigner, groups: []string{"system:nodes", "system:masters", "system:authenticated"}, usages: servingEC, request: honest,
			reason: "its requester's groups are not system:nodes (and system:authenticated): ,system%3Anodes,system%3Amasters,system%3Aauthenticated,"},
		{name: "groups-without-nodes", signer: servingSigner, groups: []string{"system:authenticated"}, usages: servingEC, request: honest, reason: "its requester's groups are not"},

		// Requests that cannot be read unambiguously.
		serving("oversize", node(x509.CertificateRequest{DNSNames: many}), servingEC, false, "larger than 4096 bytes"),
		serving("pem-with-preamble", append([]byte("X509v3 Subject Alternative Name:\n"), honest...), servingEC, false, "not exactly one PEM block"),
		serving("pem-two-blocks", append(bytes.Clone(honest), kubeletRequest(t, ec, "sno-0", []string{"api-int.dual.example.com"}, ips...)...), servingEC, false, "not exactly one PEM block"),
		serving("pem-headers", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: honestDER.Bytes}),
			servingEC, false, "not exactly one PEM block"),
		serving("pem-wide-lines", []byte(wide), servingEC, false, "not exactly one PEM block"),
		serving("pem-other-type", pem.EncodeToMemory(&pem.Block{Type: "NEW CERTIFICATE REQUEST", Bytes: honestDER.Bytes}), servingEC, false, "not exactly one PEM block"),
		serving("der-not-pem", honestDER.Bytes, servingEC, false, "not exactly one PEM block"),
		serving("trailing-bytes", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: append(bytes.Clone(honestDER.Bytes), 0x05, 0x00)}), servingEC, false, "bytes after it"),
		serving("non-minimal-length", rawRequest(t, append([]byte{0x30, 0x82, 0, byte(len(tbsBody))}, tbsBody...)), servingEC, false, "not the kubelet's kind of DER at byte 4 (certification request info)"),
		serving("indefinite-length", rawRequest(t, append(append([]byte{0x30, 0x80}, tbsBody...), 0, 0)), servingEC, false, "not the kubelet's kind of DER at byte 4 (certification request info)"),
		serving("version-2", rawRequest(t, derOf(0x30, []byte{2, 1, 1}, tbsBody[3:])), servingEC, false, "not version 1"),
		serving("bad-signature", badSig(honest), servingEC, false, "its signature does not verify"),
		serving("ed25519-key", goRequest(t, ed, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:sno-0", Organization: []string{"system:nodes"}}, DNSNames: []string{"sno-0"}}),
			servingEC, false, "a key that is neither ECDSA nor RSA"),
		serving("p224-key", goRequest(t, p224, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:sno-0", Organization: []string{"system:nodes"}}, DNSNames: []string{"sno-0"}}),
			servingEC, false, "a curve other than"),
	}
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// derBody is the contents of the DER element elem.
func derBody(elem []byte) []byte {
	if elem[1] < 0x80 {
		return elem[2:]
	}
	return elem[2+int(elem[1]&0x7f):]
}

// TestApproverCorpus runs the rendered approver once over the corpus: every request gets the decision it must,
// with its reason in the log; every approval is for the object read; nothing in a request runs.
func TestApproverCorpus(t *testing.T) {
	f := newFixture(t, "testdata/installconfig/good/dualstack.yaml", "", true)
	f.converge(t)
	tr := f.tree(t)
	h := newApproverHarness(t, tr, append(f.n.approverNodes(), testWorker))
	dir := t.TempDir()
	corpus := approverCorpus(t, dir)
	var csrs []certificatesv1.CertificateSigningRequest
	var want []string
	for i, c := range corpus {
		csrs = append(csrs, c.csr(i))
		if c.want {
			want = append(want, c.name)
		}
	}
	r := h.run(t, csrs, nil, "APPROVER_MAX_PER_NODE=1000")
	if r.err != nil {
		t.Fatalf("approver: %v\n%s", r.err, r.out)
	}
	slices.Sort(want)
	if !slices.Equal(r.approved, want) {
		t.Errorf("approved %v, want %v\n%s", r.approved, want, r.out)
	}
	r.checkApprovals(t, csrs)
	lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "aio-csr-approver: ") {
			t.Errorf("a line that is not one of the approver's (a reason of more than one line?): %q", l)
		}
	}
	for i, c := range corpus {
		listed := escapeName(c.name)
		var said []string
		for _, l := range lines {
			if strings.Contains(l, " "+listed+" (") {
				said = append(said, l)
			}
		}
		switch {
		case c.want:
		case c.reason == "" && len(said) > 0:
			t.Errorf("%s: the approver should pass over it in silence, it said: %q", c.name, said)
		case c.reason != "" && (len(said) != 1 || !strings.Contains(said[0], "leaving "+listed+" (") || !strings.Contains(said[0], c.reason)):
			t.Errorf("%s: want one line leaving it pending because %q, got %q", c.name, c.reason, said)
		}
		if c.escalates {
			checkEscalates(t, c, csrs[i], append(f.n.approverNodes(), testWorker))
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "pwned*")); len(m) > 0 {
		t.Errorf("a request ran a command: %v", m)
	}
}

// escapeName is a CSR name as the approver logs it (urlquery's escaping).
func escapeName(s string) string { return template.URLQueryEscaper(s) }

// checkEscalates: kube-controller-manager's parser (Go's) accepts the request and finds in it a DNS name or an IP
// that the requesting node does not own: approving it would have granted more than the node has.
func checkEscalates(t *testing.T, c approverCase, o certificatesv1.CertificateSigningRequest, nodes []ApproverNode) {
	t.Helper()
	b, _ := pem.Decode(o.Spec.Request)
	req, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		t.Errorf("%s: Go does not parse it (%v): not an escalation", c.name, err)
		return
	}
	node := nodeOfUser(o.Spec.Username, nodes)
	for _, d := range req.DNSNames {
		if d != node.Name {
			return
		}
	}
	for _, ip := range req.IPAddresses {
		a, _ := netip.AddrFromSlice(ip)
		if !slices.Contains(node.IPs, a) {
			return
		}
	}
	t.Errorf("%s: Go sees only node %s's names (%q, %v): not an escalation", c.name, node.Name, req.DNSNames, req.IPAddresses)
}

func nodeOfUser(user string, nodes []ApproverNode) *ApproverNode {
	for i := range nodes {
		if user == NodeUser(nodes[i].Name) {
			return &nodes[i]
		}
	}
	return nil
}

// TestApproverBoundToUID: an approval carries the UID and resourceVersion of the object read; a CSR replaced
// under the same name between the read and the approval is not approved (kube-apiserver refuses an update whose
// metadata.uid is not the stored object's: apiserver rest.defaultUpdatedObjectInfo.Preconditions; the stub does
// the same), and the run goes on with the next one.
func TestApproverBoundToUID(t *testing.T) {
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	f.converge(t)
	h := newApproverHarness(t, f.tree(t), nil)
	ec, _ := testKeys(t)
	usages := certificate.DefaultKubeletServingGetUsages(ec)
	var csrs []certificatesv1.CertificateSigningRequest
	for i, name := range []string{"csr-replaced", "csr-kept"} {
		csrs = append(csrs, approverCase{name: name, signer: servingSigner, usages: usages,
			request: kubeletRequest(t, ec, "sno-0", []string{"sno-0"}, "192.168.126.10")}.csr(i))
	}
	r := h.run(t, csrs, map[string]string{"csr-replaced": "11111111-2222-4333-8444-555555555555"})
	if r.err != nil {
		t.Fatalf("approver: %v\n%s", r.err, r.out)
	}
	if !slices.Equal(r.approved, []string{"csr-kept"}) {
		t.Errorf("approved %v, want only csr-kept", r.approved)
	}
	if b := r.bodies["csr-replaced"]; b == nil || b.UID != csrs[0].UID {
		t.Errorf("the approval of csr-replaced does not carry the UID read (%s): %+v", csrs[0].UID, b)
	}
	if !strings.Contains(r.out, "could not approve csr-replaced: Error from server (Conflict)") {
		t.Errorf("the refused approval is not logged:\n%s", r.out)
	}
	r.checkApprovals(t, csrs)
}

// TestApproverBounded: a run decides at most APPROVER_MAX_PER_NODE requests of each node (a node flooding the
// API with requests delays only its own), says so once, and leaves the rest for the next run.
func TestApproverBounded(t *testing.T) {
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	f.converge(t)
	worker := ApproverNode{Name: "worker-1", IPs: []netip.Addr{netip.MustParseAddr("192.168.126.11")}}
	h := newApproverHarness(t, f.tree(t), append(f.n.approverNodes(), worker))
	ec, _ := testKeys(t)
	usages := certificate.DefaultKubeletServingGetUsages(ec)
	var csrs []certificatesv1.CertificateSigningRequest
	for i := range 5 {
		csrs = append(csrs, approverCase{name: "csr-sno-" + string(rune('a'+i)), signer: servingSigner, usages: usages,
			request: kubeletRequest(t, ec, "sno-0", []string{"sno-0"}, "192.168.126.10")}.csr(i))
	}
	csrs = append(csrs, approverCase{name: "csr-worker", signer: servingSigner, user: "system:node:worker-1", usages: usages,
		request: kubeletRequest(t, ec, "worker-1", []string{"worker-1"}, "192.168.126.11")}.csr(9))
	r := h.run(t, csrs, nil, "APPROVER_MAX_PER_NODE=2")
	if r.err != nil {
		t.Fatalf("approver: %v\n%s", r.err, r.out)
	}
	if want := []string{"csr-sno-a", "csr-sno-b", "csr-worker"}; !slices.Equal(r.approved, want) {
		t.Errorf("approved %v, want %v", r.approved, want)
	}
	if n := strings.Count(r.out, "more than 2 pending requests from node sno-0: the others wait for the next run"); n != 1 {
		t.Errorf("the bound is said %d times, want once:\n%s", n, r.out)
	}
}

// TestApproverNodesFile: the rendered list holds the node with its IPs; the script reads any spelling of an IP
// (bytes are compared), and refuses to run, naming the line, on a list it cannot trust whole.
func TestApproverNodesFile(t *testing.T) {
	f := newFixture(t, "testdata/installconfig/good/dualstack.yaml", "", true)
	f.converge(t)
	tr := f.tree(t)
	file := fileOf(t, tr, ApproverNodesPath)
	if file.Mode != 0644 || !strings.HasSuffix(string(file.Contents), "\nsno-0 192.168.126.10 fd00::10\n") {
		t.Errorf("%s (%o):\n%s", ApproverNodesPath, file.Mode, file.Contents)
	}
	if env := unitEnv(t, unitOf(t, tr, ApproverService).Contents); env["APPROVER_NODES"] != ApproverNodesPath || env["APPROVER_KUBECONFIG"] != ApproverKubeconfig {
		t.Errorf("the unit's settings: %v", env)
	}
	for _, bad := range [][]ApproverNode{
		nil,
		{{Name: "Sno_0", IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}}},
		{{Name: "sno-0"}},
		{{Name: "sno-0", IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}}, {Name: "sno-0", IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}}},
		{{Name: "sno-0", IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}}, {Name: "w", IPs: []netip.Addr{netip.MustParseAddr("::ffff:10.0.0.1")}}},
		{{Name: "sno-0", IPs: []netip.Addr{netip.MustParseAddr("fe80::1%eth0")}}},
	} {
		if _, err := ApproverNodesFile(bad); err == nil {
			t.Errorf("ApproverNodesFile(%v) is no error", bad)
		}
	}

	h := newApproverHarness(t, tr, nil)
	ec, _ := testKeys(t)
	csrs := []certificatesv1.CertificateSigningRequest{approverCase{name: "csr-serving", signer: servingSigner, usages: certificate.DefaultKubeletServingGetUsages(ec),
		request: kubeletRequest(t, ec, "sno-0", []string{"sno-0"}, "192.168.126.10", "fd00::10")}.csr(0)}
	nodes := filepath.Join(h.root, ApproverNodesPath)
	for _, tc := range []struct{ file, fails string }{
		{"# comment\n\nsno-0 192.168.126.10 FD00:0:0:0::10", ""},
		{"sno-0 192.168.126.10 fd00:0:0:0:0:0:0:10\n", ""},
		{"sno-0 192.168.126.10 fd00:0:0:0:0:0:0:10:1\n", `:1: "fd00:0:0:0:0:0:0:10:1" of node sno-0 is not an IP address`},
		{"sno-0 192.168.126.10 fd00::1::10\n", `:1: "fd00::1::10" of node sno-0 is not an IP address`},
		{"sno-0 192.168.126.010\n", `:1: "192.168.126.010" of node sno-0 is not an IP address`},
		{"sno-0 192.168.126.256\n", `:1: "192.168.126.256" of node sno-0 is not an IP address`},
		{"sno-0 ::ffff:192.168.126.10\n", `of node sno-0 is not an IP address`},
		{"# only\n", "lists no node"},
		{"sno-0\n", ":1: node sno-0 has no IP"},
		{"sno-0 10.0.0.1\nSNO-0 10.0.0.2\n", `:2: node name "SNO-0" is not a DNS-1123 subdomain`},
		{"sno-0 10.0.0.1\nsno-0 10.0.0.2\n", ":2: node sno-0 is listed twice"},
		{"sno-0 10.0.0.1\nworker-1 10.0.0.01\n", `:2: "10.0.0.01" of node worker-1 is not an IP address`},
		{"sno-0 10.0.0.1 fd00::10\nworker-1 FD00::10\n", ":2: IP FD00::10 of node worker-1 is also node sno-0's"},
	} {
		if err := os.WriteFile(nodes, []byte(tc.file), 0644); err != nil {
			t.Fatal(err)
		}
		r := h.run(t, csrs, nil)
		if tc.fails == "" {
			if r.err != nil || !slices.Equal(r.approved, []string{"csr-serving"}) {
				t.Errorf("%q: approved %v (%v)\n%s", tc.file, r.approved, r.err, r.out)
			}
			continue
		}
		if r.err == nil || len(r.bodies) > 0 || !strings.Contains(r.out, tc.fails) {
			t.Errorf("%q: err %v, approvals %d, want a failure saying %q:\n%s", tc.file, r.err, len(r.bodies), tc.fails, r.out)
		}
	}
}
