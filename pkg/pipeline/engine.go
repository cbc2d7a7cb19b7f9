package pipeline

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/node"
	"github.com/render-static/render-static/pkg/staticpod"
)

// Engine is the state of a render after its loops settled.
type Engine struct {
	Inputs     *clusterconfig.Inputs
	Cluster    *loops.Cluster
	Admin      *certs.Admin
	Components []Component
	// Node is the node side (kubelet, first-boot apply), built into the node's files by Export.
	Node *node.Node
	// Revisions is each component's latest revision after the revision phase (0: no revision yet).
	Revisions map[string]int
	Result    *loops.Result
	Loops     int
	// KeygenTime is key generation outside the loops; LoopsTime is the loops (which generate most keys).
	KeygenTime, LoopsTime time.Duration
}

// Component returns the named component, or nil.
func (e *Engine) Component(name string) Component {
	for _, c := range e.Components {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// RunEngine seeds the cluster and drives the loops in two phases:
//
//	converge: the emulations, then every component's loops in registry order, repeated to a fixpoint;
//	revision: every component's revision controller, to a fixpoint (it makes revision 1 and then nothing).
//
// A phase that does not settle, or a *Degraded=True condition left at the end, fails the render.
func RunEngine(ctx context.Context, in *clusterconfig.Inputs) (*Engine, error) {
	t := time.Now()
	admin, err := certs.NewAdmin(in.Lifetimes)
	if err != nil {
		return nil, err
	}
	keygen := time.Since(t)
	seeds, err := clusterconfig.Objects(in)
	if err != nil {
		return nil, err
	}
	seeds = append(seeds, runtime.Object(admin.ClientCAConfigMap()))
	saKeys, err := clusterconfig.ServiceAccountKeySeeds() // the installer's service-account token key pair
	if err != nil {
		return nil, err
	}
	seeds = append(seeds, saKeys...)
	c, err := loops.NewCluster(namespaces(), clusterconfig.DynamicKinds, seeds...)
	if err != nil {
		return nil, err
	}
	var comps []Component
	for _, r := range registry {
		comps = append(comps, r.build(c, in))
	}

	converge := loops.Phase{Name: "converge", Loops: clusterconfig.Emulations(c, in)}
	revision := loops.Phase{Name: "revision"}
	for _, comp := range comps {
		converge.Loops = append(converge.Loops, comp.Converge()...)
		rev, err := comp.Revision()
		if err != nil {
			return nil, err
		}
		revision.Loops = append(revision.Loops, rev...)
	}
	// The node side (pkg/node) runs after every component: it signs the kubelet's first client certificate with
	// kube-controller-manager's CSR signer.
	nodeSide := node.New(c, in)
	converge.Loops = append(converge.Loops, nodeSide.Loops()...)
	defer func() {
		for _, l := range append(converge.Loops, revision.Loops...) {
			l.Close()
		}
	}()

	r := &loops.Runner{Cluster: c, MaxPasses: 10}
	t = time.Now()
	for _, phase := range []loops.Phase{converge, revision} {
		if len(phase.Loops) == 0 {
			continue
		}
		if err := r.Run(ctx, phase); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	if err := r.CheckDegraded(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	revs := map[string]int{}
	for _, comp := range comps {
		rev, err := staticpod.LatestRevision(comp.Operator())
		if err != nil {
			return nil, err
		}
		revs[comp.Name()] = rev
	}
	return &Engine{
		Inputs: in, Cluster: c, Admin: admin, Components: comps, Node: nodeSide, Revisions: revs,
		Result: r.Result(), Loops: len(converge.Loops) + len(revision.Loops),
		KeygenTime: keygen, LoopsTime: time.Since(t),
	}, nil
}
