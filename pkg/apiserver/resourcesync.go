package apiserver

import (
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"
)

// syncRule copies Source to Dest (the operator's resource sync, destination ← source).
type syncRule struct {
	Secret       bool
	Dest, Source resourcesynccontroller.ResourceLocation
}

func rl(ns, name string) resourcesynccontroller.ResourceLocation {
	return resourcesynccontroller.ResourceLocation{Namespace: ns, Name: name}
}

// SyncRules are kube-apiserver's resource sync rules: its inputs copied into the operand namespace, and its
// outputs published in openshift-config-managed. The encryption controllers add the encryption-config rule.
var SyncRules = []syncRule{
	{Dest: rl(TargetNamespace, "etcd-serving-ca"), Source: rl(ConfigNamespace, "etcd-serving-ca")},
	{Secret: true, Dest: rl(TargetNamespace, "etcd-client"), Source: rl(ConfigNamespace, "etcd-client")},
	{Dest: rl(TargetNamespace, "sa-token-signing-certs"), Source: rl(ManagedNamespace, "sa-token-signing-certs")},
	{Dest: rl(TargetNamespace, "aggregator-client-ca"), Source: rl(ManagedNamespace, "kube-apiserver-aggregator-client-ca")},
	{Dest: rl(TargetNamespace, "kubelet-serving-ca"), Source: rl(ManagedNamespace, "csr-controller-ca")},
	{Dest: rl(ManagedNamespace, "kube-apiserver-client-ca"), Source: rl(TargetNamespace, "client-ca")},
	{Dest: rl(ManagedNamespace, "kubelet-serving-ca"), Source: rl(TargetNamespace, "kubelet-serving-ca")},
	{Dest: rl(ManagedNamespace, "kube-apiserver-server-ca"), Source: rl(TargetNamespace, "kube-apiserver-server-ca")},
	{Dest: rl(ManagedNamespace, "bound-sa-token-signing-certs"), Source: rl(TargetNamespace, "bound-sa-token-signing-certs")},
}

// registerSyncRules puts SyncRules on the resource sync controller.
func registerSyncRules(c *resourcesynccontroller.ResourceSyncController) error {
	for _, r := range SyncRules {
		var err error
		if r.Secret {
			err = c.SyncSecret(r.Dest, r.Source)
		} else {
			err = c.SyncConfigMap(r.Dest, r.Source)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
