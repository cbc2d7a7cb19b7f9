package renew

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/openshift/library-go/pkg/operator/certrotation"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/loops"
)

// How renew makes a leaf due without touching its certificate.
//
// library-go's cert-rotation controllers (pkg/operator/certrotation/target.go, needNewTargetCertKeyPairForTime)
// do not read the certificate to decide whether a target needs a new one: they read the secret's
// auth.openshift.io/certificate-not-before and auth.openshift.io/certificate-not-after annotations (annotations.go)
// and compare them with time.Now(), which they take directly (no clock can be injected). The target is reissued
// when now is past not-after ("already expired"), past 80% of [not-before, not-after], or past not-before+refresh
// once its signer is old enough. The annotations are only ever written together with a new certificate
// (setTLSAnnotationsOnTargetCertKeyPairSecret); AdditionalAnnotations, which the controller re-applies on every
// sync, carries no not-before/not-after (they are set on a copy at issue time), so a changed annotation stays until
// the controller reissues.
//
// So renew marks a leaf due by setting its not-after annotation one second before now, before the converge phase
// (SettleHooks.BeforeConverge); the controller then finds it "already expired" and issues a new key and
// certificate with its own validity, signer, names and annotations. After the converge phase, every mark the
// controllers did not consume (the certificate is still the one that was marked) gets its original annotation
// back (SettleHooks.AfterConverge), so nothing else changes. Signers are never marked: they follow library-go's
// own rule (signer.go, needNewSigningCertKeyPair: expired, past 80% of validity, or past not-before+refresh).

// leaf is a target certificate library-go manages, or a node credential the render signed (CSR), as found before
// the converge phase.
type leaf struct {
	Namespace, Name string
	Cert            []byte // tls.crt (or the CSR's status.certificate) as it was
	NotBefore       time.Time
	NotAfter        time.Time
	// NotAfterAnnotation is the original annotation value, restored when the mark is not consumed.
	NotAfterAnnotation string
	// CSR: the node side's emulated CertificateSigningRequest Name (pkg/node, CSRApprovalLoop).
	CSR bool
}

func (l leaf) String() string {
	if l.CSR {
		return "certificatesigningrequest " + l.Name
	}
	return "secret " + l.Namespace + "/" + l.Name
}

// marker marks leaves due and takes unconsumed marks back.
type marker struct {
	now    time.Time
	within time.Duration // leaves whose certificate expires before now+within are due
	force  bool          // every leaf is due
	// validity, when not 0, makes due every leaf issued for another lifetime (a re-render's new certificate
	// validity: lifetimeIs).
	validity time.Duration
	// reason is why a marked leaf was due, as the report and update.json say it.
	reason string

	marked     []leaf // in namespace/name order
	unconsumed []leaf // marked, but not reissued by any loop (their marks were taken back)
	// revisions is each operator resource's latestAvailableRevision before the converge phase.
	revisions map[string]int
}

// firstCert parses the first certificate of a PEM bundle.
func firstCert(data []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

// managedLeaves are the secrets library-go's cert-rotation labels as targets (label.go:
// auth.openshift.io/managed-certificate-type=target) whose certificate is not a CA. An intermediate CA issued as
// a target (kube-controller-manager's csr-signer, SignerRotation) is a signer: it follows library-go's rule.
func managedLeaves(ctx context.Context, c *loops.Cluster) ([]leaf, error) {
	list, err := c.Kube.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []leaf
	for i := range list.Items {
		s := &list.Items[i]
		if s.Labels[certrotation.ManagedCertificateTypeLabelName] != string(certrotation.CertificateTypeTarget) || IsRevisionCopy(s.ObjectMeta) {
			continue
		}
		crt := s.Data[corev1.TLSCertKey]
		cert, err := firstCert(crt)
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s: tls.crt: %w", s.Namespace, s.Name, err)
		}
		if cert.IsCA {
			continue
		}
		out = append(out, leaf{Namespace: s.Namespace, Name: s.Name, Cert: crt, NotBefore: cert.NotBefore, NotAfter: cert.NotAfter,
			NotAfterAnnotation: s.Annotations[certrotation.CertificateNotAfterAnnotation]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// IsRevisionCopy says whether an object is a copy library-go's revision controller made for a revision
// (revisioncontroller/revision_controller.go, createNewRevision: owned by the configmap revision-status-<N>).
// A copy keeps the labels of what it copies, but no controller manages it: it is what revision N used, for good.
func IsRevisionCopy(m metav1.ObjectMeta) bool {
	for _, o := range m.OwnerReferences {
		if o.Kind == "ConfigMap" && strings.HasPrefix(o.Name, "revision-status-") {
			return true
		}
	}
	return false
}

// due says whether renew makes the leaf due now (library-go may find others due by its own rule).
func (m *marker) due(l leaf) bool {
	return m.force || l.NotAfter.Before(m.now.Add(m.within)) || (m.validity > 0 && !lifetimeIs(l, m.validity))
}

// lifetimeIs says whether the leaf was issued for validity. library-go issues a target from one second before now
// until validity after now (library-go pkg/crypto/crypto.go, MakeServerCertForDuration and
// MakeClientCertificateForDuration: NotBefore currentTime-1s, NotAfter currentTime+lifetime); the render's CSR
// approval backdates by 5 minutes, and ends a short one validity after now, a long one validity after its start
// (pkg/node csrBoundaries). A certificate cut at its signer's expiry is shorter: it is issued again too.
func lifetimeIs(l leaf, validity time.Duration) bool {
	life := l.NotAfter.Sub(l.NotBefore)
	return life >= validity && life <= validity+csrBackdate+time.Second
}

// csrBackdate is how far before its signing the render's CSR approval starts a certificate (pkg/node csrBackdate).
const csrBackdate = 5 * time.Minute

// before is SettleHooks.BeforeConverge: it records every operator's revision and marks the due leaves.
func (m *marker) before(ctx context.Context, c *loops.Cluster) error {
	m.revisions = map[string]int{}
	for name, oc := range c.OperatorClients() {
		_, st, _, err := oc.GetStaticPodOperatorState()
		if err != nil {
			return err
		}
		m.revisions[name] = int(st.LatestAvailableRevision)
	}
	leaves, err := managedLeaves(ctx, c)
	if err != nil {
		return err
	}
	mark := m.now.Add(-time.Second).UTC().Format(time.RFC3339)
	for _, l := range leaves {
		if !m.due(l) {
			continue
		}
		if err := setNotAfter(ctx, c, l, mark); err != nil {
			return err
		}
		m.marked = append(m.marked, l)
	}
	return m.markCSRs(ctx, c)
}

// The node's render-time credentials (the kubelet's first client certificate and the CSR approver's) are not
// library-go targets: the node side's stand-in for CSR approval (pkg/node/csr.go, CSRApprovalLoop) keeps one
// approved CertificateSigningRequest per identity and signs it again, for the same key, when its certificate no
// longer verifies or is expired. renew marks such a credential due by taking the certificate off the CSR's status
// (the record of the emulated approval, not a certificate anywhere): the loop signs it again with the current CSR
// signer and the render's leaf validity. The kubelet's own rotation (rotateCertificates, CSRs approved on the node)
// does not depend on this; the CSR approver's credential has no other way to be renewed.
func (m *marker) markCSRs(ctx context.Context, c *loops.Cluster) error {
	csrs := c.Kube.CertificatesV1().CertificateSigningRequests()
	list, err := csrs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for i := range list.Items {
		csr := &list.Items[i]
		if len(csr.Status.Certificate) == 0 {
			continue
		}
		cert, err := firstCert(csr.Status.Certificate)
		if err != nil {
			return fmt.Errorf("certificatesigningrequest %s: status.certificate: %w", csr.Name, err)
		}
		l := leaf{Name: csr.Name, Cert: csr.Status.Certificate, NotBefore: cert.NotBefore, NotAfter: cert.NotAfter, CSR: true}
		if !m.due(l) {
			continue
		}
		next := csr.DeepCopy()
		next.Status.Certificate = nil
		if _, err := csrs.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("renew: %s: %w", l, err)
		}
		m.marked = append(m.marked, l)
	}
	return nil
}

// after is SettleHooks.AfterConverge: a marked leaf whose certificate is still the marked one gets its original
// not-after annotation back.
func (m *marker) after(ctx context.Context, c *loops.Cluster) error {
	for _, l := range m.marked {
		if l.CSR {
			csr, err := c.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx, l.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("renew: %s after the converge phase: %w", l, err)
			}
			if len(csr.Status.Certificate) > 0 {
				continue
			}
			next := csr.DeepCopy()
			next.Status.Certificate = l.Cert
			if _, err := c.Kube.CertificatesV1().CertificateSigningRequests().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("renew: %s: %w", l, err)
			}
			m.unconsumed = append(m.unconsumed, l)
			continue
		}
		s, err := c.Kube.CoreV1().Secrets(l.Namespace).Get(ctx, l.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("renew: %s after the converge phase: %w", l, err)
		}
		if string(s.Data[corev1.TLSCertKey]) != string(l.Cert) {
			continue
		}
		if err := setNotAfter(ctx, c, l, l.NotAfterAnnotation); err != nil {
			return err
		}
		m.unconsumed = append(m.unconsumed, l)
	}
	return nil
}

func setNotAfter(ctx context.Context, c *loops.Cluster, l leaf, value string) error {
	s, err := c.Kube.CoreV1().Secrets(l.Namespace).Get(ctx, l.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("renew: %s: %w", l, err)
	}
	s = s.DeepCopy()
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if value == "" {
		delete(s.Annotations, certrotation.CertificateNotAfterAnnotation)
	} else {
		s.Annotations[certrotation.CertificateNotAfterAnnotation] = value
	}
	if _, err := c.Kube.CoreV1().Secrets(l.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("renew: %s: %w", l, err)
	}
	return nil
}
