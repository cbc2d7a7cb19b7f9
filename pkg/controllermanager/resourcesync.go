package controllermanager

import "github.com/render-static/render-static/pkg/resourcesync"

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
