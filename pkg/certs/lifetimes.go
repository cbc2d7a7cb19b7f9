// Package certs holds what every component's certificate loops share: the lifetime policy of a render
// (lifetimes.go), a certificate table's row (rotation.go), and how a row runs as a library-go cert-rotation
// controller in the engine (rotationloop.go: the only file that knows the engine's concurrency and turns).
package certs

import (
	"fmt"
	"time"
)

// Lifetimes is the certificate policy of a render. Nobody rotates certificates in an all-in-one cluster without
// operators, so leaves live as long as the user asks (a year by default) and signers outlive every leaf by far.
type Lifetimes struct {
	Leaf   time.Duration
	Signer time.Duration
}

// MinSignerValidity is the shortest signer lifetime a render uses.
const MinSignerValidity = 10 * 365 * 24 * time.Hour

// DefaultLeafValidity is --cert-validity's default.
const DefaultLeafValidity = 365 * 24 * time.Hour

// MinLeafValidity is the shortest --cert-validity. Leaves of a few minutes are for tests and labs that watch a
// node outlive its first certificates (`render-static renew` before they expire). The floor is kept where the
// parts a leaf lifetime drives still work:
//   - library-go rotates a leaf at 4/5 of its validity (refresh below), so one render (seconds) never rotates
//     twice;
//   - the kubelet renews its render-time client certificate at 70-90 % of its life through a CSR
//     (k8s.io/client-go/util/certificate/certificate_manager.go, nextRotationDeadline) that the node's approver
//     timer (every minute) approves and kube-controller-manager signs; the render backdates that certificate by
//     5 minutes as kube-controller-manager's signer does (pkg/node newCSR), which leaves the kubelet at least
//     10 % of (5 min + leaf), 1 minute at the floor, to get there;
//   - a renewed client certificate in a cert directory reaches kube-controller-manager and kube-scheduler when
//     client-go reloads such files, every 5 minutes (k8s.io/client-go/transport/cert_rotation.go,
//     CertCallbackRefreshDuration): a node that is to outlive its first leaves must apply `render-static renew`
//     more than 5 minutes before they expire, so a lab that renews right after boot needs leaves of ~8 minutes
//     or more (the end-to-end renewal uses 12, test/e2e/renew_test.go renewLeaf says why);
//   - what kube-controller-manager signs after boot (the kubelet's renewed client and its serving certificates)
//     follows --cluster-signing-duration, the operator's 720h (kube-controller-manager's defaultconfig.yaml), not
//     this; it signs nothing shorter than 10 minutes anyway (2 × its 5-minute backdate,
//     pkg/controller/certificates/signer/signer.go).
const MinLeafValidity = 5 * time.Minute

// ShortLeafValidity is where a render starts warning (Lifetimes.Warning): a node whose leaves live less than an
// hour dies within the hour unless it is renewed.
const ShortLeafValidity = time.Hour

// NewLifetimes derives the policy from the leaf validity: signers live at least ten years, and at least twice as
// long as a leaf, so a leaf is never cut short by its signer.
func NewLifetimes(leaf time.Duration) (Lifetimes, error) {
	if leaf < MinLeafValidity {
		return Lifetimes{}, fmt.Errorf("%s is too short (at least %s; below %s only for tests and labs)", leaf, MinLeafValidity, ShortLeafValidity)
	}
	if leaf > 100*365*24*time.Hour {
		return Lifetimes{}, fmt.Errorf("%s is too long (at most 100 years)", leaf)
	}
	signer := MinSignerValidity
	if 2*leaf > signer {
		signer = 2 * leaf
	}
	return Lifetimes{Leaf: leaf, Signer: signer}, nil
}

// Warning is what a render prints when its leaves are short (below ShortLeafValidity), or "".
func (lt Lifetimes) Warning() string {
	if lt.Leaf >= ShortLeafValidity {
		return ""
	}
	return fmt.Sprintf("{certValidity} %s: every leaf certificate (serving and client certificates of the control plane, "+
		"the kubelet's first client certificate, auth/kubeconfig) expires %s after this render; for tests and labs only: "+
		"boot the node and apply `render-static renew` more than 5 minutes before then (components reload renewed "+
		"client certificates every 5 minutes; auth/kubeconfig is not renewed)", lt.Leaf, lt.Leaf)
}

// refresh is when library-go would rotate: late enough that a second pass of the loops never rotates again.
func refresh(validity time.Duration) time.Duration { return validity * 4 / 5 }
