package controllermanager

import (
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"

	"github.com/render-static/render-static/pkg/certs"
)

// SyncRule copies Source to Dest (a configmap or a secret), as library-go's resource sync controller does.
type SyncRule struct {
	Dest, Source certs.Location
	Secret       bool
}

// SyncRules are the operator's resource sync rules, destination from source:
//   - the CSR CA bundle the operator builds is published for kube-apiserver (kubelet-serving-ca, client-ca);
//   - kube-controller-manager's client certificate, minted by kube-apiserver's operator, into the cert directory;
//   - the service CA (service-ca-operator's) into the revision;
//   - the client and aggregator client CAs kube-apiserver trusts, so the controller manager's own secure port
//     authenticates the same clients without reading them from the API.
var SyncRules = []SyncRule{
	{Dest: loc(ManagedNamespace, "csr-controller-ca"), Source: loc(OperatorNamespace, "csr-controller-ca")},
	{Dest: loc(TargetNamespace, "kube-controller-manager-client-cert-key"), Source: loc(ManagedNamespace, "kube-controller-manager-client-cert-key"), Secret: true},
	{Dest: loc(TargetNamespace, "service-ca"), Source: loc(ManagedNamespace, "service-ca")},
	{Dest: loc(TargetNamespace, "client-ca"), Source: loc(ManagedNamespace, "kube-apiserver-client-ca")},
	{Dest: loc(TargetNamespace, "aggregator-client-ca"), Source: loc(ManagedNamespace, "kube-apiserver-aggregator-client-ca")},
}

func rl(l certs.Location) resourcesynccontroller.ResourceLocation {
	return resourcesynccontroller.ResourceLocation{Namespace: l.Namespace, Name: l.Name}
}

// newResourceSync builds library-go's resource sync controller with SyncRules; the config observer shares it as
// its ResourceSyncer.
func (k *Component) newResourceSync() *resourcesynccontroller.ResourceSyncController {
	c := k.cluster
	s := resourcesynccontroller.NewResourceSyncController(ComponentName, k.op, c.KubeInformers, c.Kube.CoreV1(), c.Kube.CoreV1(), k.recorder)
	for _, r := range SyncRules {
		var err error
		if r.Secret {
			err = s.SyncSecret(rl(r.Dest), rl(r.Source))
		} else {
			err = s.SyncConfigMap(rl(r.Dest), rl(r.Source))
		}
		if err != nil {
			panic(err) // only for a namespace missing from Namespaces: a programming error
		}
	}
	return s
}
