package certs

import (
	"context"
	"crypto/x509"
	"fmt"

	"github.com/openshift/library-go/pkg/crypto"
	"github.com/openshift/library-go/pkg/operator/certrotation"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/render-static/render-static/pkg/loops"
)

// How a certificate table's row (rotation.go) runs: library-go's cert-rotation controller for it, wrapped as a
// concurrent loop of the engine (pkg/loops turn.go) so that rows make their keys side by side while the writes keep
// the fixed order. This is speed machinery: a row's meaning does not depend on it (a render whose loops run one at
// a time is the same: pkg/pipeline's TestConcurrentEngineMatchesSequential).

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
		Concurrent(turn, footprint...).Reads(r.Inputs...).Settles(footprint[0], footprint[1]).
		MakesKeys(footprint[0], footprint[2]).Unchanged()
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
