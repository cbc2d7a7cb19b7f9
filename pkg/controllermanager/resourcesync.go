package controllermanager

import (
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/resourcesync"
)

// SyncRules are the operator's resource sync rules, destination from source:
//   - the CSR CA bundle the operator builds is published for kube-apiserver (kubelet-serving-ca, client-ca);
//   - kube-controller-manager's client certificate, minted by kube-apiserver's operator, into the cert directory;
//   - the service CA (service-ca-operator's) into the revision;
//   - the client and aggregator client CAs kube-apiserver trusts, so the controller manager's own secure port
//     authenticates the same clients without reading them from the API.
var SyncRules = []resourcesync.Rule{
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
	s, err := resourcesync.New(k.cluster, ComponentName, k.op, k.recorder, SyncRules)
	if err != nil {
		panic(err) // a rule naming a namespace missing from Namespaces: a programming error
	}
	return s
}
