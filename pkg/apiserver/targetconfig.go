package apiserver

import (
	"context"

	"github.com/openshift/library-go/pkg/operator/certrotation"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/loops"
)

// A combined CA bundle of the target config: the destination and the bundles it is the union of (missing inputs
// are skipped, as in the operator).
type combinedBundle struct {
	Dest   certs.Location
	Inputs []certs.Location
}

// combinedBundles are the bundles kube-apiserver's target-config controller builds.
var combinedBundles = []combinedBundle{
	// Every client CA kube-apiserver trusts.
	{Dest: loc(TargetNamespace, "client-ca"), Inputs: []certs.Location{
		loc(ConfigNamespace, "admin-kubeconfig-client-ca"),
		loc(ManagedNamespace, "csr-controller-ca"),
		loc(OperatorNamespace, "kube-apiserver-to-kubelet-client-ca"),
		loc(OperatorNamespace, "kube-control-plane-signer-ca"),
		loc(TargetNamespace, "user-client-ca"),
		loc(ManagedNamespace, "kubelet-bootstrap-kubeconfig"),
		loc(OperatorNamespace, "node-system-admin-ca"),
	}},
	// Every CA that signs a kube-apiserver serving certificate.
	{Dest: loc(TargetNamespace, "kube-apiserver-server-ca"), Inputs: ServingCABundles},
}

// bundleLoops returns one "target-config/<name>" loop per combined bundle.
func (k *Component) bundleLoops() []loops.Loop {
	lister := k.cluster.KubeInformers.ConfigMapLister()
	var out []loops.Loop
	for _, b := range combinedBundles {
		b := b
		out = append(out, loops.Loop{Name: "target-config/" + b.Dest.Name, Sync: func(ctx context.Context) error {
			var in []resourcesynccontroller.ResourceLocation
			for _, l := range b.Inputs {
				in = append(in, resourcesynccontroller.ResourceLocation{Namespace: l.Namespace, Name: l.Name})
			}
			cm, err := resourcesynccontroller.CombineCABundleConfigMaps(
				resourcesynccontroller.ResourceLocation{Namespace: b.Dest.Namespace, Name: b.Dest.Name},
				lister, certrotation.AdditionalAnnotations{JiraComponent: jira}, in...)
			if err != nil {
				return err
			}
			_, _, err = resourceapply.ApplyConfigMap(ctx, k.cluster.Kube.CoreV1(), k.recorder, cm)
			return err
		}})
	}
	return out
}
