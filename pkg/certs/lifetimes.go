// Package certs holds what every component's certificate loops share: the lifetime policy of a render and the
// table-driven construction of library-go cert-rotation controllers.
package certs

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/openshift/library-go/pkg/crypto"
	"github.com/openshift/library-go/pkg/operator/certrotation"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/render-static/render-static/pkg/loops"
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

// Location is a namespace/name pair.
type Location struct{ Namespace, Name string }

func (l Location) String() string { return l.Namespace + "/" + l.Name }

// TargetKind says what a rotation's target certificate is.
type TargetKind int

const (
	// Client is a client certificate for User in Groups.
	Client TargetKind = iota
	// Serving is a serving certificate for the hostnames Hostnames returns.
	Serving
	// IntermediateSigner is a CA signed by the signer (SignerName is its CN prefix).
	IntermediateSigner
)

// Rotation is one row of a component's certificate table: a signer, the CA bundle it is published in, and a
// target it signs. Several rows may share a signer and bundle, as in the operators.
type Rotation struct {
	Name   string // the operator's controller name, e.g. "AggregatorProxyClientCert"
	Signer Location
	Bundle Location
	Target Location
	Kind   TargetKind
	User   string
	Groups []string
	// Hostnames returns the serving names; an error means an input is not there yet (the loop retries).
	Hostnames func() ([]string, error)
	// Inputs are the objects Hostnames reads (the loop reads them before its turn, see pkg/loops turn.go).
	Inputs     []loops.Object
	SignerName string
	// ExtKeyUsages, when set, replace a serving certificate's extended key usages (etcd's peer and serving
	// certificates are used both as client and as server certificates).
	ExtKeyUsages []x509.ExtKeyUsage
	// Description and JiraComponent become the operators' TLS artifact annotations.
	Description   string
	JiraComponent string
}

// Loop builds the library-go cert-rotation controller for the row and wraps it as a loop named
// "cert-rotation/<Name>". Its status reporter writes CertRotation_<Name>_Degraded on the operator client.
//
// The loop is concurrent (pkg/loops, turn.go): it may make its keys while the loops ahead of it in the pass
// still run. Its footprint is the row's signer, bundle and target, the only objects library-go's controller
// reads or writes besides the operator resource (read and written only in the loop's turn, through the turn's
// operator client) and, for serving rows, the Network and Infrastructure status the hostnames come from (written
// only by non-concurrent loops, declared as Inputs). Rows that share a signer or bundle overlap: a row starts
// once the row ahead of it that shares them has settled them (it reads its target: library-go's controller
// ensures the signer, then the bundle, then the target), reading the signer and bundle that row keeps for its
// turn when it has not had it yet, so their targets' keys are made side by side. In a later pass the runner skips
// the row while nothing it watches changed since its last successful run (loops.Loop.Unchanged: the controller
// writes only what is missing, expired past its refresh time or no longer matches its inputs).
func (r Rotation) Loop(c *loops.Cluster, lt Lifetimes, operator v1helpers.StaticPodOperatorClient, recorder events.Recorder) loops.Loop {
	kube := c.KubeInformers
	name := "cert-rotation/" + r.Name
	// Writes made before the turn are kept for it: library-go's controller makes its target's key right after
	// writing its signer and bundle, and reads none of the three back through a lister (signer.go, cabundle.go,
	// target.go: each is read once, before it is written), so it computes on instead of waiting.
	turn := loops.NewTurn().DeferWrites()
	client := turn.CoreV1(c.Kube.CoreV1())
	// Several rows may share a signer and bundle: only the target carries the row's description, or the rows
	// would rewrite the shared signer's annotations in turn and never settle.
	shared := certrotation.AdditionalAnnotations{JiraComponent: r.JiraComponent}
	ann := certrotation.AdditionalAnnotations{JiraComponent: r.JiraComponent, Description: r.Description}
	var hostnames []string
	var creator certrotation.TargetCertCreator
	switch r.Kind {
	case Client:
		creator = &certrotation.ClientRotation{UserInfo: &user.DefaultInfo{Name: r.User, Groups: r.Groups}}
	case Serving:
		serving := &certrotation.ServingRotation{Hostnames: func() []string { return hostnames }}
		if usages := r.ExtKeyUsages; len(usages) > 0 {
			serving.CertificateExtensionFn = []crypto.CertificateExtensionFunc{func(c *x509.Certificate) error {
				c.ExtKeyUsage = append([]x509.ExtKeyUsage(nil), usages...)
				return nil
			}}
		}
		creator = serving
	case IntermediateSigner:
		creator = &certrotation.SignerRotation{SignerName: r.SignerName}
	}
	ctrl := certrotation.NewCertRotationController(
		r.Name,
		certrotation.RotatedSigningCASecret{
			Namespace: r.Signer.Namespace, Name: r.Signer.Name,
			Validity: lt.Signer, Refresh: refresh(lt.Signer),
			AdditionalAnnotations: shared,
			Informer:              kube.InformersFor(r.Signer.Namespace).Core().V1().Secrets(),
			Lister:                publishedSecrets{kube.InformersFor(r.Signer.Namespace).Core().V1().Secrets().Lister(), c, name},
			Client:                client,
			EventRecorder:         recorder,
		},
		certrotation.CABundleConfigMap{
			Namespace: r.Bundle.Namespace, Name: r.Bundle.Name,
			AdditionalAnnotations: shared,
			Informer:              kube.InformersFor(r.Bundle.Namespace).Core().V1().ConfigMaps(),
			Lister:                publishedConfigMaps{kube.InformersFor(r.Bundle.Namespace).Core().V1().ConfigMaps().Lister(), c, name},
			Client:                client,
			EventRecorder:         recorder,
		},
		certrotation.RotatedSelfSignedCertKeySecret{
			Namespace: r.Target.Namespace, Name: r.Target.Name,
			Validity: lt.Leaf, Refresh: refresh(lt.Leaf),
			AdditionalAnnotations: ann,
			CertCreator:           creator,
			Informer:              kube.InformersFor(r.Target.Namespace).Core().V1().Secrets(),
			// library-go turns to the target once the signer and bundle are settled (SyncWorker's order).
			Lister:        settlingLister{kube.InformersFor(r.Target.Namespace).Core().V1().Secrets().Lister(), turn},
			Client:        client,
			EventRecorder: recorder,
		},
		recorder,
		&certrotation.StaticPodConditionStatusReporter{OperatorClient: turn.StaticPodOperator(operator)},
	)
	footprint := []loops.Object{
		loops.Secret(r.Signer.Namespace, r.Signer.Name),
		loops.ConfigMap(r.Bundle.Namespace, r.Bundle.Name),
		loops.Secret(r.Target.Namespace, r.Target.Name),
	}
	inner := loops.ControllerLoop(name, ctrl, recorder).
		Concurrent(turn, footprint...).Reads(r.Inputs...).Settles(footprint[0], footprint[1]).Unchanged()
	if r.Kind != Serving {
		return inner
	}
	// Serving rotations need their hostnames first (the operator waits for them before it starts the loop).
	return inner.Before(func(context.Context) error {
		h, err := r.Hostnames()
		if err != nil {
			return err
		}
		if len(h) == 0 {
			return fmt.Errorf("no hostnames for %s yet", r.Target)
		}
		hostnames = h
		return nil
	})
}

// settlingLister is the target's lister of a cert-rotation row: the controller reads its target only after it
// ensured the signer and the bundle, so the first read tells the runner that the row will not write those again
// in this run (loops.Turn.Settle).
type settlingLister struct {
	corev1listers.SecretLister
	turn *loops.Turn
}

func (l settlingLister) Secrets(ns string) corev1listers.SecretNamespaceLister {
	l.turn.Settle()
	return l.SecretLister.Secrets(ns)
}

// publishedSecrets and publishedConfigMaps are a cert-rotation row's signer and bundle listers: a row that shares
// its signer with a row ahead starts once that row settled them, possibly before its turn made its writes, so
// the row reads the signer and bundle that row keeps for its turn (loops.Cluster.Published) when there are.
type publishedSecrets struct {
	corev1listers.SecretLister
	cluster *loops.Cluster
	loop    string
}

func (l publishedSecrets) Secrets(ns string) corev1listers.SecretNamespaceLister {
	in := l.SecretLister.Secrets(ns)
	return struct {
		secretsIn
		published[*corev1.Secret]
	}{secretsIn{in}, published[*corev1.Secret]{l.cluster, l.loop, loops.Secret(ns, ""), in.Get}}
}

type publishedConfigMaps struct {
	corev1listers.ConfigMapLister
	cluster *loops.Cluster
	loop    string
}

func (l publishedConfigMaps) ConfigMaps(ns string) corev1listers.ConfigMapNamespaceLister {
	in := l.ConfigMapLister.ConfigMaps(ns)
	return struct {
		configMapsIn
		published[*corev1.ConfigMap]
	}{configMapsIn{in}, published[*corev1.ConfigMap]{l.cluster, l.loop, loops.ConfigMap(ns, ""), in.Get}}
}

// secretsIn and configMapsIn serve what published does not (List), one level down.
type (
	secretsIn struct {
		corev1listers.SecretNamespaceLister
	}
	configMapsIn struct {
		corev1listers.ConfigMapNamespaceLister
	}
)

// published gets an object of one namespace: the one a loop ahead keeps for its turn and published, else get's.
type published[T any] struct {
	cluster *loops.Cluster
	loop    string
	object  loops.Object // resource and namespace; Get names it
	get     func(name string) (T, error)
}

func (p published[T]) Get(name string) (T, error) {
	o := p.object
	o.Name = name
	if obj, ok := p.cluster.Published(p.loop, o); ok {
		return obj.(T), nil
	}
	return p.get(name)
}
