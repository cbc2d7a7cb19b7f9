package controllermanager

import (
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/operator"
)

// Inputs are what kube-controller-manager's loops read that others produce.
var Inputs = []operator.Input{
	operator.ServiceAccountCAInput,
	operator.Secret(ManagedNamespace, "kube-controller-manager-client-cert-key", "tls.crt", "kube-apiserver"),
	operator.ConfigMapInput(ManagedNamespace, "kube-apiserver-client-ca", "ca-bundle.crt", "kube-apiserver"),
	operator.ConfigMapInput(ManagedNamespace, "kube-apiserver-aggregator-client-ca", "ca-bundle.crt", "kube-apiserver"),
	operator.ConfigMapInput(ManagedNamespace, "service-ca", "ca-bundle.crt", "emulate/service-ca-operator"),
	operator.Secret(ConfigNamespace, "initial-service-account-private-key", "", "installer"),
	operator.RecoveryTokenInput(TargetNamespace),
	{Kind: "Infrastructure", Name: "cluster", From: "installer"},
	{Kind: "Network", Name: "cluster", From: "emulate/cluster-network-operator"},
	{Kind: "Node", From: "emulate/kubelet-node-registration"},
}

// Images are the default pull specs of the images kube-controller-manager's pods run, both flavors
// (UpstreamImage: the upstream flavor's); the registry (pkg/components) collects them.
var Images = clusterconfig.OKDImages("hyperkube", "cluster-kube-controller-manager-operator", "cluster-policy-controller", "tools").
	With(UpstreamImage, clusterconfig.KubernetesImage(UpstreamImage))
