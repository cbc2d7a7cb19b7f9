// Package resourcesync declares an operator's resource-sync rules as data and builds library-go's resource sync
// controller from them, the same way for every component.
package resourcesync

import (
	"fmt"

	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/loops"
)

// Rule copies Source to Dest, a configmap or (Secret) a secret. An unconditional rule makes Dest follow Source,
// deleting Dest while Source is missing; a Conditional one copies only while Source exists (library-go's
// Sync*Conditionally), as the etcd operator declares its rules.
type Rule struct {
	Dest, Source certs.Location
	Secret       bool
	Conditional  bool
}

func loc(l certs.Location) resourcesynccontroller.ResourceLocation {
	return resourcesynccontroller.ResourceLocation{Namespace: l.Namespace, Name: l.Name}
}

// New builds library-go's resource sync controller for an operator with its rules. Every namespace a rule names
// must be one the cluster has informers for; a rule naming another is an error.
func New(c *loops.Cluster, name string, operator v1helpers.OperatorClient, recorder events.Recorder, rules []Rule) (*resourcesynccontroller.ResourceSyncController, error) {
	kube := c.KubeInformers
	ctrl := resourcesynccontroller.NewResourceSyncController(name, operator, kube, c.Kube.CoreV1(), c.Kube.CoreV1(), recorder)
	for _, r := range rules {
		dest, src := loc(r.Dest), loc(r.Source)
		var err error
		switch {
		case r.Secret && r.Conditional:
			lister := kube.InformersFor(src.Namespace).Core().V1().Secrets().Lister().Secrets(src.Namespace)
			err = ctrl.SyncSecretConditionally(dest, src, func() (bool, error) { _, err := lister.Get(src.Name); return exists(err) })
		case r.Conditional:
			lister := kube.InformersFor(src.Namespace).Core().V1().ConfigMaps().Lister().ConfigMaps(src.Namespace)
			err = ctrl.SyncConfigMapConditionally(dest, src, func() (bool, error) { _, err := lister.Get(src.Name); return exists(err) })
		case r.Secret:
			err = ctrl.SyncSecret(dest, src)
		default:
			err = ctrl.SyncConfigMap(dest, src)
		}
		if err != nil {
			return nil, fmt.Errorf("%s resource sync %s ← %s: %w", name, r.Dest, r.Source, err)
		}
	}
	return ctrl, nil
}

func exists(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, err
}
