package apiserver

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/render-static/render-static/pkg/loops"
)

// input is an object another component (or the installer's seeds) produces and kube-apiserver consumes.
type input struct {
	Secret          bool
	Namespace, Name string
	// Key, when set, must be present and non-empty (a token secret exists before the token controller fills it).
	Key string
	// From names who produces it.
	From string
}

func (i input) String() string {
	kind := "configmap"
	if i.Secret {
		kind = "secret"
	}
	s := fmt.Sprintf("%s %s/%s", kind, i.Namespace, i.Name)
	if i.Key != "" {
		s += " key " + i.Key
	}
	return s + " (from " + i.From + ")"
}

var (
	etcdEndpoints = input{Namespace: EtcdNamespace, Name: "etcd-endpoints", From: "etcd"}
	// revisionInputs are the cross-component inputs of kube-apiserver's revisioned resources.
	revisionInputs = []input{
		etcdEndpoints,
		{Namespace: ConfigNamespace, Name: "etcd-serving-ca", Key: "ca-bundle.crt", From: "etcd"},
		{Secret: true, Namespace: ConfigNamespace, Name: "etcd-client", Key: "tls.crt", From: "etcd"},
		{Namespace: ManagedNamespace, Name: "csr-controller-ca", Key: "ca-bundle.crt", From: "kube-controller-manager"},
		{Namespace: ManagedNamespace, Name: "sa-token-signing-certs", From: "installer seed (clusterconfig.ServiceAccountKeySeeds)"},
		{Secret: true, Namespace: TargetNamespace, Name: "localhost-recovery-client-token", Key: "token", From: "emulate/legacy-serviceaccount-token-controller"},
	}
)

// missing returns the inputs that are not there yet, read through the listers.
func (k *Component) missing(in ...input) ([]string, error) {
	var out []string
	for _, i := range in {
		inf := k.cluster.KubeInformers.InformersFor(i.Namespace).Core().V1()
		var data map[string]bool
		var err error
		if i.Secret {
			s, gerr := inf.Secrets().Lister().Secrets(i.Namespace).Get(i.Name)
			err = gerr
			if gerr == nil {
				data = map[string]bool{}
				for key, v := range s.Data {
					data[key] = len(v) > 0
				}
			}
		} else {
			c, gerr := inf.ConfigMaps().Lister().ConfigMaps(i.Namespace).Get(i.Name)
			err = gerr
			if gerr == nil {
				data = map[string]bool{}
				for key, v := range c.Data {
					data[key] = len(v) > 0
				}
			}
		}
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, i.String())
		case err != nil:
			return nil, err
		case i.Key != "" && !data[i.Key]:
			out = append(out, i.String())
		}
	}
	return out, nil
}

// Waiting lists the inputs from other components that kube-apiserver still waits for: while any is missing,
// its config observation, target config and revision loops do nothing, and the render has no kube-apiserver pod
// (revision 0). Empty once every producer is registered and ran.
func (k *Component) Waiting() []string {
	m, err := k.missing(revisionInputs...)
	if err != nil {
		return []string{err.Error()}
	}
	sort.Strings(m)
	return m
}

// whenInputs returns the loop with a guard: while one of the inputs (made by another component) is missing, the
// sync is skipped without an error, so the other components' loops still reach their fixpoint; the guard keeps
// the loop's workqueue closer.
func (k *Component) whenInputs(l loops.Loop, in ...input) loops.Loop {
	inner := l.Sync
	l.Sync = func(ctx context.Context) error {
		m, err := k.missing(in...)
		if err != nil {
			return err
		}
		if len(m) > 0 {
			return nil
		}
		return inner(ctx)
	}
	return l
}
