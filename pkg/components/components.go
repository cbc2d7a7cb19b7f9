// Package components is the registry: the one list of the control-plane components a render runs, in the order
// their loops run within a pass. Everything that needs the list derives from it: the pipeline's engine (which
// components, which namespaces), the default images (--images), conformance (--component), the CLI's flag help
// and the e2e tests. Adding a component is one package (embedding pkg/operator's Base, declaring its name,
// namespaces, images, inputs and constructor) and one line here.
package components

import (
	"fmt"
	"sort"

	"github.com/render-static/render-static/pkg/apiserver"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/controllermanager"
	"github.com/render-static/render-static/pkg/etcd"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/node"
	"github.com/render-static/render-static/pkg/operator"
	"github.com/render-static/render-static/pkg/scheduler"
)

// Registry lists the components in the order their loops run within a pass: producers before consumers (etcd's
// certificates before kube-apiserver's revision inputs; kube-apiserver's client certificates before
// kube-controller-manager's and kube-scheduler's). The node side (pkg/node) is not a component: it runs after
// every component in one explicit step of the pipeline.
var Registry = []operator.Registration{
	operator.Register(etcd.ComponentName, etcd.Namespaces, etcd.Images, etcd.UpstreamImage, etcd.Inputs, etcd.New),
	operator.Register(apiserver.ComponentName, apiserver.Namespaces, apiserver.Images, apiserver.UpstreamImage, apiserver.Inputs, apiserver.New),
	operator.Register(controllermanager.ComponentName, controllermanager.Namespaces, controllermanager.Images, controllermanager.UpstreamImage, controllermanager.Inputs, controllermanager.New),
	operator.Register(scheduler.ComponentName, scheduler.Namespaces, scheduler.Images, scheduler.UpstreamImage, scheduler.Inputs, scheduler.New),
}

// ServingCA is the API server's serving CA bundle, which a client of the API trusts (the render's admin
// kubeconfig): the pipeline reaches it through the registry, never by naming a component.
var ServingCA = apiserver.ServingCA

// Names are the components' names, in registry order.
func Names() []string {
	out := make([]string, 0, len(Registry))
	for _, r := range Registry {
		out = append(out, r.Name)
	}
	return out
}

// Namespaces is every namespace any component's loops list, with the installer's (clusterconfig.Namespaces).
func Namespaces() []string {
	set := map[string]bool{}
	var out []string
	for _, r := range Registry {
		for _, ns := range append(append([]string(nil), r.Namespaces...), clusterconfig.Namespaces...) {
			if !set[ns] {
				set[ns] = true
				out = append(out, ns)
			}
		}
	}
	return out
}

// DefaultImages are the default pull specs of every image a render's pods run: each component's, the node
// side's (node.Images) and the add-ons' of the openshift flavor (clusterconfig.AddOnImages: DefaultImagesFor gives
// a flavor's). Two declarations of one image must agree.
func DefaultImages() clusterconfig.Images {
	out := clusterconfig.Images{}
	decl := map[string]string{}
	add := func(who string, images clusterconfig.Images) {
		for name, spec := range images {
			if prev, ok := out[name]; ok && prev != spec {
				panic(fmt.Sprintf("image %s: %s declares %s, %s declares %s", name, decl[name], prev, who, spec))
			}
			out[name], decl[name] = spec, who
		}
	}
	for _, r := range Registry {
		add(r.Name, r.Images)
	}
	add("node", node.Images)
	add("add-ons", clusterconfig.AddOnImages(clusterconfig.FlavorOpenShift))
	return out
}

// DefaultImagesFor are DefaultImages with the add-ons' defaults of the flavor (their one key serves both flavors).
func DefaultImagesFor(f clusterconfig.Flavor) clusterconfig.Images {
	out := DefaultImages()
	for k, v := range clusterconfig.AddOnImages(f) {
		out[k] = v
	}
	return out
}

// ImageNames are the names of DefaultImages, sorted.
func ImageNames() []string {
	names := DefaultImages().Names()
	sort.Strings(names)
	return names
}

// UpstreamImages are the images the --flavor upstream pods run, in registry order.
func UpstreamImages() []string {
	out := make([]string, 0, len(Registry))
	for _, r := range Registry {
		out = append(out, r.UpstreamImage)
	}
	return out
}

// Build constructs every registered component on the cluster, in registry order.
func Build(c *loops.Cluster, in *clusterconfig.Inputs) []operator.Component {
	out := make([]operator.Component, 0, len(Registry))
	for _, r := range Registry {
		out = append(out, r.New(c, in))
	}
	return out
}

// PulledImages are the keys of DefaultImages of every image a render's nodes pull, for the flavor, with the
// built-in pod network's images when podNetwork: the control-plane node's static pods, the pause image CRI-O
// runs every sandbox with (node.Images' pod: the workers pull it too) and the add-ons (kube-proxy on every node,
// CoreDNS wherever it is scheduled). An update (renew's, the worker command's) runs the same images. The openshift
// flavor also pulls the tools image: the kube-controller-manager's recycler pods run it, and the first-boot apply and
// aio-update run oc from it on a host with neither oc nor kubectl. The upstream flavor's pods run none of the
// operators' images, and its release (an ImageStream by its keys) has no tools: its hosts' oc or kubectl applies.
func PulledImages(f clusterconfig.Flavor, podNetwork bool) []string {
	upstream := map[string]bool{}
	for _, r := range Registry {
		upstream[r.UpstreamImage] = true
	}
	addOns := clusterconfig.AddOnImages(f)
	var out []string
	for _, name := range ImageNames() {
		_, addOn := addOns[name]
		switch {
		case addOn:
			if podNetwork {
				out = append(out, name)
			}
		case name == "pod":
			out = append(out, name)
		case f == clusterconfig.FlavorUpstream:
			if upstream[name] {
				out = append(out, name)
			}
		case !upstream[name]:
			out = append(out, name)
		}
	}
	return out
}
