package etcd

import (
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/operator"
)

// Inputs are what etcd's loops read that others produce: only what the installer seeds (etcd is the first
// producer).
var Inputs = []operator.Input{
	operator.ConfigMapInput(KubeSystem, "cluster-config-v1", "install-config", "installer"),
	{Kind: "APIServer", Name: "cluster", From: "installer"},
	{Kind: "Infrastructure", Name: "cluster", From: "installer"},
}

// Images are the default pull specs of the images etcd's pods run, both flavors
// (UpstreamImage: the upstream flavor's); the registry (pkg/components) collects them.
var Images = clusterconfig.OKDImages("etcd", "cluster-etcd-operator").
	// "etcd" is OpenShift's etcd image; UpstreamImage is upstream etcd (3.6.5, kubeadm 1.34's), whose repository's
	// last path element names the binary, as clusterconfig.KubernetesImage's do.
	With(UpstreamImage, "registry.k8s.io/etcd:3.6.5-0")
