package apiserver

import "github.com/render-static/render-static/pkg/resourcesync"

// SyncRules are kube-apiserver's resource sync rules: its inputs copied into the operand namespace, and its
// outputs published in openshift-config-managed. The encryption controllers add the encryption-config rule.
var SyncRules = []resourcesync.Rule{
	{Dest: loc(TargetNamespace, "etcd-serving-ca"), Source: loc(ConfigNamespace, "etcd-serving-ca")},
	{Secret: true, Dest: loc(TargetNamespace, "etcd-client"), Source: loc(ConfigNamespace, "etcd-client")},
	{Dest: loc(TargetNamespace, "sa-token-signing-certs"), Source: loc(ManagedNamespace, "sa-token-signing-certs")},
	{Dest: loc(TargetNamespace, "aggregator-client-ca"), Source: loc(ManagedNamespace, "kube-apiserver-aggregator-client-ca")},
	{Dest: loc(TargetNamespace, "kubelet-serving-ca"), Source: loc(ManagedNamespace, "csr-controller-ca")},
	{Dest: loc(ManagedNamespace, "kube-apiserver-client-ca"), Source: loc(TargetNamespace, "client-ca")},
	{Dest: loc(ManagedNamespace, "kubelet-serving-ca"), Source: loc(TargetNamespace, "kubelet-serving-ca")},
	{Dest: loc(ManagedNamespace, "kube-apiserver-server-ca"), Source: loc(TargetNamespace, "kube-apiserver-server-ca")},
	{Dest: loc(ManagedNamespace, "bound-sa-token-signing-certs"), Source: loc(TargetNamespace, "bound-sa-token-signing-certs")},
}
