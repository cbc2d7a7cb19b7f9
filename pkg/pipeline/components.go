package pipeline

import (
	"github.com/render-static/render-static/pkg/apiserver"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/controllermanager"
	"github.com/render-static/render-static/pkg/etcd"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/scheduler"
	"github.com/render-static/render-static/pkg/staticpod"
)

// Component is one control-plane component of a render. Its package declares its loops in order, as data, plus
// its static pod (the revisioned and cert-dir resources its installer lays out).
type Component interface {
	Name() string
	// Converge returns the loops that run to a fixpoint together with every other component's loops.
	Converge() []loops.Loop
	// Revision returns the loops of the revision phase (library-go's revision controller), run once every
	// converge loop settled, so that exactly revision 1 is made. Nil when the component has none yet.
	Revision() ([]loops.Loop, error)
	// StaticPod is what the installer lays out on the node; with no revision loops only its cert directory.
	StaticPod() staticpod.StaticPod
	// Operator is the component's operator resource.
	Operator() *loops.OperatorClient
}

// registration is a component package's entry: the namespaces its loops list (known before the cluster is
// built) and its constructor.
type registration struct {
	namespaces []string
	build      func(c *loops.Cluster, in *clusterconfig.Inputs) Component
}

// registry lists the components in the order their loops run within a pass: producers before consumers (etcd's
// certificates before kube-apiserver's revision inputs; kube-apiserver's client certificates before
// kube-controller-manager's and kube-scheduler's).
var registry = []registration{
	{etcd.Namespaces, func(c *loops.Cluster, in *clusterconfig.Inputs) Component { return etcd.New(c, in) }},
	{apiserver.Namespaces, func(c *loops.Cluster, in *clusterconfig.Inputs) Component { return apiserver.New(c, in) }},
	{controllermanager.Namespaces, func(c *loops.Cluster, in *clusterconfig.Inputs) Component { return controllermanager.New(c, in) }},
	{scheduler.Namespaces, func(c *loops.Cluster, in *clusterconfig.Inputs) Component { return scheduler.New(c, in) }},
}

// namespaces is every namespace any component's loops list.
func namespaces() []string {
	set := map[string]bool{}
	var out []string
	for _, r := range registry {
		for _, ns := range append(r.namespaces, clusterconfig.Namespaces...) {
			if !set[ns] {
				set[ns] = true
				out = append(out, ns)
			}
		}
	}
	return out
}
