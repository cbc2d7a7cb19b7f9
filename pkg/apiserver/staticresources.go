package apiserver

import (
	"context"

	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

// staticResourcesDir holds kube-apiserver's static resources (our own YAML): namespace, service, kubeconfig
// configmaps, the localhost-recovery client (service account, token secret, binding), check-endpoints RBAC,
// network policy and service monitor.
const staticResourcesDir = "kube-apiserver/static"

// StaticResourceFiles lists the static resources, by their path below manifests/, in apply order (sorted, with
// the namespace first).
func StaticResourceFiles() ([]string, error) {
	return operator.StaticFiles(staticResourcesDir, "ns.yaml")
}

// staticResourcesLoop is library-go's static resource controller over our manifests, with the kube and
// dynamic clients (custom resources such as the ServiceMonitor).
func (k *Component) staticResourcesLoop() loops.Loop {
	files, err := StaticResourceFiles()
	if err != nil {
		return loops.Loop{Name: "static-resources", Sync: func(context.Context) error { return err }}
	}
	ctrl := operator.StaticResourceController(k.Cluster, "KubeAPIServerStaticResources", files, k.Op, k.Recorder).
		AddKubeInformers(k.Cluster.KubeInformers)
	return operator.UnchangedStaticResources(loops.ControllerLoop("static-resources", ctrl, k.Recorder), files, k.Op)
}
