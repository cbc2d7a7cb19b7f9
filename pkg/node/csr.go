package node

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/internal/parsecache"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/loops"
)

// The CSR signer kube-controller-manager signs every certificates.k8s.io CSR with (its operator keeps it; its CA
// reaches kube-apiserver's client-ca through openshift-config-managed/csr-controller-ca).
const (
	SignerNamespace = "openshift-kube-controller-manager-operator"
	SignerName      = "csr-signer"
)

// CSRApprovalLoopName is the loop that stands in for the kubelet's bootstrap CSR, its approval and
// kube-controller-manager's signing of it.
//
// It is the one stand-in ("emulate/...") not in pkg/emulate: the private keys it signs for are the node side's
// (Node.keys: made here, kept in the state by keys.go, turned into the kubelets' and the approver's kubeconfigs by
// clientCertificate). In pkg/emulate the loop would import pkg/node for them, while pkg/node's tests drive the
// loop together with the other stand-ins (legacytokens_test.go and helpers_test.go import pkg/emulate): an import
// cycle. Moving the keys out of the node side instead would be more than a move.
const CSRApprovalLoopName = "emulate/node-client-csr-approval"

// clientIdentity is a client certificate the node side needs before any controller runs.
type clientIdentity struct {
	csrName string
	signer  string // spec.signerName, as the real request would carry
	user    string
	groups  []string
}

// ApproverUser is the identity of the CSR approver timer; RBAC lets it approve kubelet CSRs and nothing else.
const ApproverUser = "render-static:node-csr-approver"

// NodeUser is the node's identity.
func NodeUser(nodeName string) string { return "system:node:" + nodeName }

func (n *Node) nodeIdentity() clientIdentity { return nodeIdentityOf(n.in.NodeName) }

// nodeIdentityOf is the kubelet identity of a node by its name (the control-plane node's, or a worker's): one CSR
// record per node, so that each kubelet's key and certificate are its own.
func nodeIdentityOf(name string) clientIdentity {
	return clientIdentity{csrName: "render-static-node-client-" + name, signer: certificatesv1.KubeAPIServerClientKubeletSignerName,
		user: NodeUser(name), groups: []string{"system:nodes"}}
}

// identities are every client identity the node side signs: the control-plane node's kubelet, the CSR approver,
// and each worker's kubelet.
func (n *Node) identities() []clientIdentity {
	ids := []clientIdentity{n.nodeIdentity(), n.approverIdentity()}
	for _, w := range n.in.Workers {
		ids = append(ids, nodeIdentityOf(w.Name))
	}
	return ids
}

func (n *Node) approverIdentity() clientIdentity {
	return clientIdentity{csrName: "render-static-node-csr-approver", signer: certificatesv1.KubeAPIServerClientSignerName, user: ApproverUser}
}

// CSRApprovalLoop emulates, for the kubelets (the control-plane node's and each worker's) and for the CSR approver,
// what happens on a cluster when a client
// requests its first certificate: a CSR is created, approved, and signed by kube-controller-manager with the CSR
// signer. It waits for openshift-kube-controller-manager-operator/csr-signer (which kube-controller-manager's
// component produces) and keeps one approved and signed CertificateSigningRequest per identity in the cluster,
// so the trace shows the signing; the private keys stay in memory. A certificate is re-signed when it no longer
// verifies against the current signer (the signer was rotated in a later pass) or was not made from the key in
// memory. Leaves live --cert-validity, cut at the signer's expiry.
//
// The CSRs are a record of the render only: FilterExport keeps them out of the exported manifests.
//
// Every pass runs it again, mostly with the same signer: the signer parsed last is kept while the secret's
// certificate and key bytes are the same (parsing depends on nothing else).
func (n *Node) CSRApprovalLoop() loops.Loop {
	secrets := n.cluster.KubeFactory().Core().V1().Secrets().Lister()
	var kept parsecache.Value[kubeSigner]
	return loops.Loop{Name: CSRApprovalLoopName, Sync: func(ctx context.Context) error {
		s, err := secrets.Secrets(SignerNamespace).Get(SignerName)
		if err != nil {
			return fmt.Errorf("waiting for kube-controller-manager's CSR signer %s/%s: %w", SignerNamespace, SignerName, err)
		}
		crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
		signer, err := kept.Get(func() (kubeSigner, error) {
			cert, signer, err := parseSigner(s)
			return kubeSigner{cert, signer}, err
		}, crt, key)
		if err != nil {
			return fmt.Errorf("CSR signer %s/%s: %w", SignerNamespace, SignerName, err)
		}
		for _, id := range n.identities() {
			if err := n.ensureSigned(ctx, id, signer.cert, signer.signer); err != nil {
				return err
			}
		}
		return nil
	}}
}

// kubeSigner is a CSR signer's certificate and key, parsed (parseSigner).
type kubeSigner struct {
	cert   *x509.Certificate
	signer crypto.Signer
}

func parseSigner(s *corev1.Secret) (*x509.Certificate, crypto.Signer, error) {
	cs, err := certs.ParseCertificates(s.Data[corev1.TLSCertKey])
	if err != nil || len(cs) == 0 {
		return nil, nil, fmt.Errorf("no certificate in %s: %v", corev1.TLSCertKey, err)
	}
	if !cs[0].IsCA {
		return nil, nil, fmt.Errorf("%s is not a CA", cs[0].Subject.CommonName)
	}
	key, err := parsePrivateKey(s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", corev1.TLSPrivateKeyKey, err)
	}
	if !publicKeysEqual(key.Public(), cs[0].PublicKey) {
		return nil, nil, fmt.Errorf("%s does not belong to the certificate in %s", corev1.TLSPrivateKeyKey, corev1.TLSCertKey)
	}
	return cs[0], key, nil
}

func parsePrivateKey(data []byte) (crypto.Signer, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, fmt.Errorf("no PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not an RSA, EC or PKCS#8 private key")
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key of type %T cannot sign", k)
	}
	return s, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

// ensureSigned keeps one approved, signed CSR for id whose certificate is valid for the key in memory.
func (n *Node) ensureSigned(ctx context.Context, id clientIdentity, signerCert *x509.Certificate, signerKey crypto.Signer) error {
	client := n.cluster.Kube.CertificatesV1().CertificateSigningRequests()
	existing, err := client.Get(ctx, id.csrName, metav1.GetOptions{})
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	n.mu.Lock()
	key := n.keys[id.csrName]
	n.mu.Unlock()
	if found && key != nil && signedFor(existing, id, key, signerCert) {
		return nil
	}
	if key == nil {
		// The kubelet generates ECDSA P-256 keys for its CSRs; so do we.
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		key = k
	}
	csr, err := newCSR(id, key, signerCert, signerKey, n.in.Lifetimes.Leaf)
	if err != nil {
		return err
	}
	if !found {
		_, err = client.Create(ctx, csr, metav1.CreateOptions{})
	} else {
		next := existing.DeepCopy()
		next.Spec, next.Status = csr.Spec, csr.Status
		_, err = client.Update(ctx, next, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.keys[id.csrName] = key
	n.mu.Unlock()
	return nil
}

// signedFor says whether csr is approved and carries a certificate for id, made from key, that verifies against
// the signer and is still valid.
func signedFor(csr *certificatesv1.CertificateSigningRequest, id clientIdentity, key crypto.Signer, signer *x509.Certificate) bool {
	approved := false
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue {
			approved = true
		}
	}
	if !approved || len(csr.Status.Certificate) == 0 {
		return false
	}
	cs, err := certs.ParseCertificates(csr.Status.Certificate)
	if err != nil || len(cs) == 0 {
		return false
	}
	leaf := cs[0]
	if !publicKeysEqual(key.Public(), leaf.PublicKey) || leaf.Subject.CommonName != id.user ||
		!slices.Equal(leaf.Subject.Organization, id.groups) || time.Now().After(leaf.NotAfter) {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(signer)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err == nil
}

// Boundaries of what kube-controller-manager's CSR signer issues (pkg/controller/certificates/signer/signer.go):
// every certificate starts csrBackdate before it is signed; one shorter than csrShort is not backdated at its end.
const (
	csrBackdate = 5 * time.Minute
	csrShort    = 8 * time.Hour
)

// csrBoundaries are NotBefore and NotAfter of a certificate signed at now for validity, as
// kube-controller-manager's signer computes them (pkg/controller/certificates/authority/policies.go): a long-lived
// certificate ends validity after its backdated start, a short-lived one validity after now (so a leaf of a few
// minutes is not cut by the backdate); never after the signer.
func csrBoundaries(now time.Time, validity time.Duration, signerNotAfter time.Time) (time.Time, time.Time) {
	notBefore := now.Add(-csrBackdate)
	notAfter := now.Add(validity - csrBackdate)
	if validity < csrShort {
		notAfter = now.Add(validity)
	}
	if notAfter.After(signerNotAfter) {
		notAfter = signerNotAfter
	}
	return notBefore, notAfter
}

// newCSR builds the request the client would send, approves it, and signs it as kube-controller-manager's
// signer does: subject and usages from the request, boundaries by csrBoundaries.
func newCSR(id clientIdentity, key crypto.Signer, signerCert *x509.Certificate, signerKey crypto.Signer, validity time.Duration) (*certificatesv1.CertificateSigningRequest, error) {
	subject := pkix.Name{CommonName: id.user, Organization: id.groups}
	reqDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		return nil, fmt.Errorf("%s: certificate request: %w", id.csrName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	notBefore, notAfter := csrBoundaries(time.Now().Truncate(time.Second), validity, signerCert.NotAfter)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, fmt.Errorf("%s: signing: %w", id.csrName, err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: id.csrName, Annotations: map[string]string{
			"render-static.io/emulated": "approved and signed at render time by " + CSRApprovalLoopName,
		}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: reqDER}),
			SignerName: id.signer,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			Username:   id.user,
			Groups:     id.groups,
		},
		Status: certificatesv1.CertificateSigningRequestStatus{
			Conditions: []certificatesv1.CertificateSigningRequestCondition{{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "RenderStaticEmulatedApproval",
				Message:        "approved at render time: the node's first certificates exist before any controller runs",
				LastUpdateTime: now, LastTransitionTime: now,
			}},
			Certificate: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		},
	}, nil
}

// clientCertificate returns the signed certificate and key (PEM) of an identity, once the loop signed it.
func (n *Node) clientCertificate(ctx context.Context, id clientIdentity) (certPEM, keyPEM []byte, err error) {
	csr, err := n.cluster.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx, id.csrName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("%s has not signed %s's certificate: %w", CSRApprovalLoopName, id.user, err)
	}
	n.mu.Lock()
	key := n.keys[id.csrName]
	n.mu.Unlock()
	if key == nil || len(csr.Status.Certificate) == 0 {
		return nil, nil, fmt.Errorf("%s has not signed %s's certificate", CSRApprovalLoopName, id.user)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return bytes.Clone(csr.Status.Certificate), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
