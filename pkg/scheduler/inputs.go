package scheduler

import (
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/operator"
)

// Inputs are what kube-scheduler's loops read that others produce.
var Inputs = []operator.Input{
	operator.ServiceAccountCAInput,
	operator.Secret(ManagedNamespace, "kube-scheduler-client-cert-key", "tls.crt", "kube-apiserver"),
	operator.RecoveryTokenInput(TargetNamespace),
	{Kind: "Scheduler", Name: "cluster", From: "installer"},
	{Kind: "Infrastructure", Name: "cluster", From: "installer"},
	{Kind: "Node", From: "emulate/kubelet-node-registration"},
}

// Images are the default pull specs of the images kube-scheduler's pods run, both flavors
// (UpstreamImage: the upstream flavor's); the registry (pkg/components) collects them.
var Images = clusterconfig.OKDImages("hyperkube", "cluster-kube-scheduler-operator").
	With(UpstreamImage, clusterconfig.KubernetesImage(UpstreamImage))
