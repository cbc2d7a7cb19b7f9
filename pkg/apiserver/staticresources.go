package apiserver

import (
	"context"
	"io/fs"
	"path"
	"sort"

	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/staticresourcecontroller"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/loops"
)

// staticResourcesDir holds kube-apiserver's static resources (our own YAML): namespace, service, kubeconfig
// configmaps, the localhost-recovery client (service account, token secret, binding), check-endpoints RBAC,
// network policy and service monitor.
const staticResourcesDir = "kube-apiserver/static"

// StaticResourceFiles lists the static resources, by their path below manifests/, in apply order (sorted, with
// the namespace first).
func StaticResourceFiles() ([]string, error) {
	entries, err := fs.ReadDir(manifests.FS, staticResourcesDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && path.Ext(e.Name()) == ".yaml" && e.Name() != "ns.yaml" {
			out = append(out, path.Join(staticResourcesDir, e.Name()))
		}
	}
	sort.Strings(out)
	return append([]string{path.Join(staticResourcesDir, "ns.yaml")}, out...), nil
}

// staticResourcesLoop is library-go's static resource controller over our manifests, with the kube and
// dynamic clients (custom resources such as the ServiceMonitor).
func (k *Component) staticResourcesLoop() loops.Loop {
	files, err := StaticResourceFiles()
	if err != nil {
		return loops.Loop{Name: "static-resources", Sync: func(context.Context) error { return err }}
	}
	clients := resourceapply.NewKubeClientHolder(k.cluster.Kube).WithDynamicClient(k.cluster.Dynamic)
	ctrl := staticresourcecontroller.NewStaticResourceController("KubeAPIServerStaticResources", manifests.Read, files,
		clients, k.op, k.recorder).AddKubeInformers(k.cluster.KubeInformers)
	return loops.ControllerLoop("static-resources", ctrl, k.recorder)
}
