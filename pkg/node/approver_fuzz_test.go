package node

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cryptobyte_asn1 "golang.org/x/crypto/cryptobyte/asn1"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/util/certificate"
)

// Pools the fuzz target draws subject alternative names from: the nodes' own, the other node's, and the forms
// that openssl's text output hid or split.
var (
	fuzzDNS = []string{"sno-0", "worker-1", "sno-0\n", "sno-0, IP Address:192.168.126.10", "sno 0", "SNO-0", "api-int.dual.example.com",
		"sno-0.", "*.sno-0", "sno-0\x00", "", "-sno-0", "sno_0", "x", "sno-0\nDNS:worker-1", "sno-0\r"}
	fuzzIPs = []string{"192.168.126.10", "fd00::10", "192.168.126.11", "fd00::11", "10.0.0.1", "::", "0.0.0.0", "fd00::10:0"}
)

// fuzzRequest turns fuzz bytes into a CSR: data[0] picks the signer (bit 0), the key (bit 1: RSA), the usages
// (bits 2-3: the kubelet's, plus another, minus the last, the other key type's), the requester (bit 4: worker-1)
// and the subject (bits 5-6: the requester's own, another node's, O=system:masters, the requester's own); every
// further byte (at most 8) adds a name: bits 5-7 pick DNS (0, 1, 6, 7), IP (2, 3), email (4), URI (5), the rest
// which one. ok is false when Go cannot make such a request.
func fuzzRequest(t testing.TB, data []byte) (o certificatesv1.CertificateSigningRequest, ok bool) {
	if len(data) == 0 {
		return o, false
	}
	ec, rsaKey := testKeys(t)
	ctl := data[0]
	var key crypto.Signer = ec
	if ctl&2 != 0 {
		key = rsaKey
	}
	signer, usages := servingSigner, certificate.DefaultKubeletServingGetUsages(key)
	other := certificatesv1.UsageClientAuth
	if ctl&1 != 0 {
		signer, usages, other = clientSigner, certificate.DefaultKubeletClientGetUsages(key), certificatesv1.UsageServerAuth
	}
	switch (ctl >> 2) & 3 {
	case 1:
		usages = append(slices.Clone(usages), other)
	case 2:
		usages = usages[:len(usages)-1]
	case 3:
		var otherKey any = &rsa.PrivateKey{}
		if key != crypto.Signer(ec) {
			otherKey = &ecdsa.PrivateKey{}
		}
		usages = certificate.DefaultKubeletServingGetUsages(otherKey)
		if ctl&1 != 0 {
			usages = certificate.DefaultKubeletClientGetUsages(otherKey)
		}
	}
	node, otherNode := "sno-0", "worker-1"
	if ctl&16 != 0 {
		node, otherNode = otherNode, node
	}
	subject := pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}
	switch (ctl >> 5) & 3 {
	case 1:
		subject.CommonName = "system:node:" + otherNode
	case 2:
		subject.Organization = []string{"system:masters"}
	}
	tmpl := &x509.CertificateRequest{Subject: subject}
	for _, b := range data[1:min(len(data), 9)] {
		i := int(b & 31)
		switch b >> 5 {
		case 2, 3:
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.IP(netip.MustParseAddr(fuzzIPs[i%len(fuzzIPs)]).AsSlice()))
		case 4:
			tmpl.EmailAddresses = append(tmpl.EmailAddresses, fuzzDNS[i%len(fuzzDNS)]+"@example.com")
		case 5:
			tmpl.URIs = append(tmpl.URIs, &url.URL{Scheme: "spiffe", Host: "sno-0", Path: "/" + string(rune('a'+i))})
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, fuzzDNS[i%len(fuzzDNS)])
		}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return o, false
	}
	c := approverCase{name: "csr-fuzz", signer: signer, user: NodeUser(node), usages: usages,
		request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}
	return c.csr(0), true
}

// approvesInGo is the approver's rules applied to what Go's parser makes of the CSR (x509.ParseCertificateRequest:
// what kube-apiserver validates and kube-controller-manager signs with, pkg/apis/certificates ParseCSR): the
// reference the fuzz target holds the script to.
func approvesInGo(o certificatesv1.CertificateSigningRequest, nodes []ApproverNode) bool {
	serving := o.Spec.SignerName == servingSigner
	if !serving && o.Spec.SignerName != clientSigner {
		return false
	}
	node := nodeOfUser(o.Spec.Username, nodes)
	if node == nil || !slices.Contains(o.Spec.Groups, "system:nodes") {
		return false
	}
	for _, g := range o.Spec.Groups {
		if g != "system:nodes" && g != "system:authenticated" {
			return false
		}
	}
	// One PEM block exactly as Go writes it, of at most 4096 bytes of DER.
	b, _ := pem.Decode(o.Spec.Request)
	if b == nil || b.Type != "CERTIFICATE REQUEST" || !bytes.Equal(pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: b.Bytes}), o.Spec.Request) || len(b.Bytes) > 4096 {
		return false
	}
	req, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil || req.CheckSignature() != nil {
		return false
	}
	// The subject: O=system:nodes, CN=system:node:<node>, each a PrintableString or UTF8String.
	subjectOK := false
	for _, tags := range [][2]byte{{0x13, 0x13}, {0x13, 0x0c}, {0x0c, 0x13}, {0x0c, 0x0c}} {
		want := subjectOf(rdnSet(atv(oidO, tags[0], "system:nodes")), rdnSet(atv(oidCN, tags[1], "system:node:"+node.Name)))
		subjectOK = subjectOK || bytes.Equal(req.RawSubject, want)
	}
	if !subjectOK {
		return false
	}
	var private any
	switch k := req.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() && k.Curve != elliptic.P521() {
			return false
		}
		private = &ecdsa.PrivateKey{}
	case *rsa.PublicKey:
		private = &rsa.PrivateKey{}
	default:
		return false
	}
	// Usages: exactly the kubelet's for this signer and key type, each once.
	want := certificate.DefaultKubeletClientGetUsages(private)
	if serving {
		want = certificate.DefaultKubeletServingGetUsages(private)
	}
	if len(o.Spec.Usages) != len(want) {
		return false
	}
	for i, u := range o.Spec.Usages {
		if !slices.Contains(want, u) || slices.Contains(o.Spec.Usages[:i], u) {
			return false
		}
	}
	// Attributes: none for a client request; one extensionRequest with one extension, the non-critical subject
	// alternative name, for a serving request.
	var info struct {
		Version    int
		Subject    asn1.RawValue
		PublicKey  asn1.RawValue
		Attributes []asn1.RawValue `asn1:"tag:0"`
	}
	if rest, err := asn1.Unmarshal(req.RawTBSCertificateRequest, &info); err != nil || len(rest) > 0 {
		return false
	}
	if !serving {
		return len(info.Attributes) == 0 && len(req.Extensions) == 0
	}
	if len(info.Attributes) != 1 || len(req.Extensions) != 1 || !req.Extensions[0].Id.Equal(oidSAN) || req.Extensions[0].Critical {
		return false
	}
	// Every name a DNS name or an IP address of the node, and at least one.
	names := cryptobyte.String(req.Extensions[0].Value)
	var seq cryptobyte.String
	if !names.ReadASN1(&seq, cryptobyte_asn1.SEQUENCE) || !names.Empty() || seq.Empty() {
		return false
	}
	for !seq.Empty() {
		var v cryptobyte.String
		var tag cryptobyte_asn1.Tag
		if !seq.ReadAnyASN1(&v, &tag) {
			return false
		}
		switch tag {
		case cryptobyte_asn1.Tag(2).ContextSpecific():
			if string(v) != node.Name {
				return false
			}
		case cryptobyte_asn1.Tag(7).ContextSpecific():
			ip, ok := netip.AddrFromSlice(v)
			if !ok || !slices.Contains(node.IPs, ip) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// FuzzApproverSANs: for requests with random subject alternative names (and signers, keys, usages, requesters and
// subjects), the rendered approver approves exactly when approvesInGo does. `go test` runs the seeds; `go test
// -fuzz FuzzApproverSANs -fuzztime 2m ./pkg/node` searches further (every input is one bounded run of the script).
func FuzzApproverSANs(f *testing.F) {
	fx := newFixture(f, "testdata/installconfig/good/dualstack.yaml", "", true)
	fx.converge(f)
	nodes := append(fx.n.approverNodes(), testWorker)
	for _, seed := range []struct {
		data    []byte
		approve bool
		what    string
	}{
		{[]byte{0x00, 0x00, 0x40, 0x41}, true, "the kubelet's serving request"},
		{[]byte{0x00, 0x00, 0x40}, true, "IPv4 only"},
		{[]byte{0x02, 0x00, 0x40, 0x41}, true, "an RSA key"},
		{[]byte{0x01}, true, "the kubelet's client request"},
		{[]byte{0x03}, true, "a client request with an RSA key"},
		{[]byte{0x10, 0x01, 0x42, 0x43}, true, "worker-1's own"},
		{[]byte{0x00, 0x02, 0x06, 0x40, 0x44}, false, "a newline hides api-int and 10.0.0.1"},
		{[]byte{0x00, 0x03}, false, "a comma"},
		{[]byte{0x00, 0x00, 0x0e}, false, "a newline and a second DNS in one name"},
		{[]byte{0x00, 0x00, 0x01, 0x40}, false, "another node's name"},
		{[]byte{0x00, 0x00, 0x42}, false, "another node's IP"},
		{[]byte{0x10, 0x00, 0x42}, false, "worker-1 asks for sno-0's name"},
		{[]byte{0x00, 0x00, 0x80}, false, "an email address"},
		{[]byte{0x00, 0x00, 0xa0}, false, "a URI"},
		{[]byte{0x04, 0x00, 0x40}, false, "client auth too"},
		{[]byte{0x0c, 0x00, 0x40}, false, "key encipherment with an ECDSA key"},
		{[]byte{0x0e, 0x00, 0x40}, false, "an RSA key without key encipherment"},
		{[]byte{0x20, 0x00, 0x40}, false, "the CN of another node"},
		{[]byte{0x41}, false, "a client request as system:masters"},
		{[]byte{0x01, 0x00}, false, "a client request with a name"},
		{[]byte{0x00}, false, "a serving request without names"},
	} {
		o, ok := fuzzRequest(f, seed.data)
		if !ok {
			f.Fatalf("seed %x (%s): Go makes no such request", seed.data, seed.what)
		}
		if got := approvesInGo(o, nodes); got != seed.approve {
			f.Fatalf("seed %x (%s): Go's rules approve it: %v, want %v", seed.data, seed.what, got, seed.approve)
		}
		f.Add(seed.data)
	}
	h := newApproverHarness(f, fx.tree(f), nodes)
	f.Fuzz(func(t *testing.T, data []byte) {
		o, ok := fuzzRequest(t, data)
		if !ok {
			t.Skip("Go makes no such request")
		}
		want := approvesInGo(o, nodes)
		r := h.run(t, []certificatesv1.CertificateSigningRequest{o}, nil)
		if r.err != nil {
			t.Fatalf("approver: %v\n%s", r.err, r.out)
		}
		if got := len(r.approved) == 1; got != want {
			b, _ := pem.Decode(o.Spec.Request)
			req, _ := x509.ParseCertificateRequest(b.Bytes)
			t.Fatalf("the approver approved: %v, Go's rules: %v; signer %s, user %s, usages %v, subject %q, DNS %q, IPs %v, emails %q, URIs %v\n%s",
				got, want, o.Spec.SignerName, o.Spec.Username, o.Spec.Usages, req.Subject, req.DNSNames, req.IPAddresses, req.EmailAddresses, req.URIs, r.out)
		}
		r.checkApprovals(t, []certificatesv1.CertificateSigningRequest{o})
	})
}
