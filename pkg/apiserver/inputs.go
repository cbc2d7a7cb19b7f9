package apiserver

import (
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

var (
	etcdEndpoints = operator.ConfigMapInput(EtcdNamespace, "etcd-endpoints", "", "etcd")
	// revisionInputs are the cross-component inputs of kube-apiserver's revisioned resources.
	revisionInputs = []operator.Input{
		etcdEndpoints,
		operator.ConfigMapInput(ConfigNamespace, "etcd-serving-ca", "ca-bundle.crt", "etcd"),
		operator.Secret(ConfigNamespace, "etcd-client", "tls.crt", "etcd"),
		operator.ConfigMapInput(ManagedNamespace, "csr-controller-ca", "ca-bundle.crt", "kube-controller-manager"),
		operator.ConfigMapInput(ManagedNamespace, "sa-token-signing-certs", "", "installer"),
		operator.RecoveryTokenInput(TargetNamespace),
	}
)

// Inputs are what kube-apiserver's loops read that others produce: its revision inputs (while one is missing,
// its config observation, target config and revision loops wait) and the installer's cluster configuration.
var Inputs = append(append([]operator.Input(nil), revisionInputs...),
	operator.ConfigMapInput(ConfigNamespace, "admin-kubeconfig-client-ca", "ca-bundle.crt", "installer"),
	operator.ConfigMapInput(ManagedNamespace, "kubelet-bootstrap-kubeconfig", "", "installer"),
	operator.Input{Kind: "APIServer", Name: "cluster", From: "installer"},
	operator.Input{Kind: "Authentication", Name: "cluster", From: "installer"},
	operator.Input{Kind: "Infrastructure", Name: "cluster", From: "installer"},
	operator.Input{Kind: "Network", Name: "cluster", From: "emulate/cluster-network-operator"},
	operator.Input{Kind: "Proxy", Name: "cluster", From: "emulate/cluster-network-operator-proxy"},
)

// Waiting lists the inputs from other components that kube-apiserver still waits for: while any is missing,
// its config observation, target config and revision loops do nothing, and the render has no kube-apiserver pod
// (revision 0). Empty once every producer is registered and ran.
func (k *Component) Waiting() []string {
	m, err := operator.Missing(k.Cluster, revisionInputs...)
	if err != nil {
		return []string{err.Error()}
	}
	return m
}

// whenInputs returns the loop with a guard: while one of the inputs (made by another component) is missing, the
// sync is skipped without an error, so the other components' loops still reach their fixpoint; the guard keeps
// the loop's workqueue closer.
func (k *Component) whenInputs(l loops.Loop, in ...operator.Input) loops.Loop {
	return operator.WhenInputs(k.Cluster, l, in...)
}

// Images are the default pull specs of the images kube-apiserver's pods run, both flavors
// (UpstreamImage: the upstream flavor's); the registry (pkg/components) collects them.
var Images = clusterconfig.OKDImages("hyperkube", "cluster-kube-apiserver-operator").
	With(UpstreamImage, clusterconfig.KubernetesImage(UpstreamImage))

// ServingCA is the bundle of every kube-apiserver serving CA (target config, targetconfig.go): what a client of the
// API trusts (the admin kubeconfig; pkg/components names it to the pipeline).
var ServingCA = operator.Input{Namespace: TargetNamespace, Name: "kube-apiserver-server-ca", Key: "ca-bundle.crt", From: ComponentName}
