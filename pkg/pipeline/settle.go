package pipeline

import (
	"context"
	"fmt"
	goruntime "runtime"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/emulate"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/node"
	"github.com/render-static/render-static/pkg/state"
	"github.com/render-static/render-static/pkg/staticpod"
)

// Settled is the state of a render after its loops settled.
type Settled struct {
	Inputs     *clusterconfig.Inputs
	Cluster    *loops.Cluster
	Admin      *certs.Admin
	Components []Component
	// Node is the node side (kubelet, first-boot apply), built into the node's files by Export.
	Node *node.Node
	// Revisions is each component's latest revision after the revision phase (0: no revision yet);
	// PreviousRevisions before the converge phase (the saved state's; 0 for a new cluster).
	Revisions, PreviousRevisions map[string]int
	Result                       *loops.Result
	Loops                        int
	// KeygenTime is key generation outside the loops; LoopsTime is the loops (which generate most keys).
	KeygenTime, LoopsTime time.Duration
	// From is the saved state the render continued (nil: a new cluster).
	From *state.State
	// previousIgn is the aio.ign beside From, parsed and validated while the loops ran (nil: none).
	previousIgn *future[*export.PreviousIgnition]
	// ahead are the manifests of From's objects, made while the loops ran (nil: none).
	ahead *aheadManifests
}

// Component returns the named component, or nil.
func (e *Settled) Component(name string) Component {
	for _, c := range e.Components {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// Settle seeds the cluster and drives the loops in two phases:
//
//	converge: the emulations, then every component's loops in registry order, repeated to a fixpoint;
//	revision: every component's revision controller, to a fixpoint (it makes revision 1 and then nothing).
//
// A phase that does not settle, or a *Degraded=True condition left at the end, fails the render.
func Settle(ctx context.Context, in *clusterconfig.Inputs) (*Settled, error) {
	return SettleFrom(ctx, in, nil, nil)
}

// SettleHooks run around the converge phase: renew marks certificates due before it and takes its marks back
// after it (pkg/renew).
type SettleHooks struct {
	BeforeConverge, AfterConverge func(ctx context.Context, c *loops.Cluster) error
}

// SettleFrom is Settle continuing from a saved state (nil: a new cluster). With a state, the cluster starts
// with every saved object and operator resource, the admin credential and service-account keys are the saved
// ones, and only the installer's objects derived from the inputs are taken afresh (pkg/state): the loops then
// change only what an input change touches.
func SettleFrom(ctx context.Context, in *clusterconfig.Inputs, st *state.State, hooks *SettleHooks) (*Settled, error) {
	return SettleWith(ctx, in, st, hooks, SettleOptions{})
}

// SettleOptions say how the loops run, never what they render.
type SettleOptions struct {
	// Parallelism bounds the concurrent loops of a pass computing before their turn at once (loops.Runner): 1
	// runs every loop after the one ahead of it finished; more lets the cert-rotation loops make their keys while
	// the loops ahead of them run, with the same writes in the same order. 0 means DefaultParallelism.
	Parallelism int
	// RunUnchanged runs every loop in every pass, also the cert-rotation rows nothing they read changed for
	// (loops.Runner.RunUnchanged): the tests' reference for the skipping.
	RunUnchanged bool
}

// DefaultParallelism is one loop computing ahead of its turn per core Go uses (a loop waiting for its turn gives
// its slot back, and the loop that has the turn computes too).
func DefaultParallelism() int { return goruntime.GOMAXPROCS(0) }

// SettleWith is SettleFrom with options. Its steps: seed the cluster (seed), build it with every component's
// loops in registry order and the node side after them (assemble), converge to a fixpoint and make the revisions
// (converge). Meanwhile, what the export needs that the loops do not change is prepared (futures, future.go).
func SettleWith(ctx context.Context, in *clusterconfig.Inputs, st *state.State, hooks *SettleHooks, opts SettleOptions) (*Settled, error) {
	if err := CheckCryptoMode(in.InstallConfig); err != nil {
		return nil, err
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = DefaultParallelism()
	}
	// While the loops run: the CRDs (export.PrefetchCRDs); the aio.ign beside the state, parsed and validated (an
	// identical new aio.ign then needs no marshalling nor validation of its own, PreviousIgnition.Validate);
	// the manifests of the saved objects, which a re-render's loops leave nearly all as they are.
	go export.PrefetchCRDs(in.InstallConfig.FeatureSet)
	var previousIgn *future[*export.PreviousIgnition]
	if st != nil {
		previousIgn = goFuture(func() (*export.PreviousIgnition, error) {
			return export.ParseValidatePreviousIgnition(previousIgnition(st)), nil
		})
	}
	ahead := manifestsAhead(st)
	succeeded := false
	defer func() {
		if !succeeded {
			ahead.halt() // Export stops it once it needs the cores
		}
	}()

	t := time.Now()
	sd, err := seed(in, st)
	if err != nil {
		return nil, err
	}
	defer sd.admin.Wait() // a settle that fails early still waits for what it started
	keygen := time.Since(t)
	a, err := assemble(ctx, in, st, sd)
	if err != nil {
		return nil, err
	}
	defer a.close()
	t = time.Now()
	result, err := a.converge(ctx, hooks, opts)
	if err != nil {
		return nil, err
	}
	revs, err := latestRevisions(a.comps)
	if err != nil {
		return nil, err
	}
	admin, err := sd.admin.Get()
	if err != nil {
		return nil, err
	}
	succeeded = true
	return &Settled{
		Inputs: in, Cluster: a.cluster, Admin: admin, Components: a.comps, Node: a.node, Revisions: revs, PreviousRevisions: a.savedRevs,
		Result: result, Loops: len(a.converging.Loops) + len(a.revising.Loops),
		KeygenTime: keygen, LoopsTime: time.Since(t), From: st, previousIgn: previousIgn, ahead: ahead,
	}, nil
}

// seeds are what the cluster starts with.
type seeds struct {
	typed   []runtime.Object
	dynamic []*unstructured.Unstructured
	// admin is the cluster-admin credential: the saved one, or issued while the loops run (the cluster needs only
	// its signer's bundle).
	admin *future[*certs.Admin]
}

// seed is what the cluster starts with: the installer's objects derived from the inputs (clusterconfig.Objects);
// with a saved state every saved object, those replaced by their fresh copies (state.Seeds); for a new cluster the
// admin client CA and the service-account token key pair, made on two cores.
func seed(in *clusterconfig.Inputs, st *state.State) (*seeds, error) {
	fresh, err := clusterconfig.Objects(in)
	if err != nil {
		return nil, err
	}
	if st != nil {
		typed, dynamic, err := st.Seeds(fresh)
		if err != nil {
			return nil, err
		}
		return &seeds{typed: typed, dynamic: dynamic, admin: ready(st.Admin(), nil)}, nil
	}
	saKeys := goFuture(clusterconfig.ServiceAccountKeySeeds)
	signer, err := certs.NewAdminSigner(in.Lifetimes)
	keys, saErr := saKeys.Get()
	if err != nil {
		return nil, err
	}
	if saErr != nil {
		return nil, saErr
	}
	typed := append(append(fresh, runtime.Object(signer.ClientCAConfigMap())), keys...)
	return &seeds{typed: typed, admin: goFuture(signer.Issue)}, nil
}

// assembly is the cluster with its loops: every component's in registry order (pkg/components), the node side's
// after them (node.go), in the phases they run in.
type assembly struct {
	cluster              *loops.Cluster
	comps                []Component
	node                 *node.Node
	converging, revising loops.Phase
	// savedRevs are the components' revisions before the loops run (the saved state's; 0 for a new cluster).
	savedRevs map[string]int
}

// assemble builds the cluster from the seeds, the components and the node side, and restores the saved operator
// resources.
func assemble(ctx context.Context, in *clusterconfig.Inputs, st *state.State, sd *seeds) (*assembly, error) {
	c, err := loops.NewCluster(components.Namespaces(), clusterconfig.DynamicKinds, sd.typed...)
	if err != nil {
		return nil, err
	}
	if err := seedDynamic(ctx, c, sd.dynamic); err != nil {
		return nil, err
	}
	a := &assembly{cluster: c, comps: components.Build(c, in),
		converging: loops.Phase{Name: "converge", Loops: emulate.Emulations(c, in)}, revising: loops.Phase{Name: "revision"}}
	for _, comp := range a.comps {
		a.converging.Loops = append(a.converging.Loops, comp.Converge()...)
		rev, err := comp.Revision()
		if err != nil {
			return nil, err
		}
		a.revising.Loops = append(a.revising.Loops, rev...)
	}
	if a.node, err = newNodeSide(c, in, st); err != nil {
		return nil, err
	}
	a.converging.Loops = append(a.converging.Loops, a.node.Loops()...)
	a.converging.Loops = append(a.converging.Loops, emulate.Namespaces(c))
	if st != nil {
		for name, oc := range c.OperatorClients() {
			if saved, ok := st.Operators[name]; ok {
				if err := oc.RestoreState(saved); err != nil {
					return nil, err
				}
			}
		}
	}
	if a.savedRevs, err = latestRevisions(a.comps); err != nil {
		return nil, err
	}
	return a, nil
}

// close closes every loop.
func (a *assembly) close() {
	for _, l := range append(a.converging.Loops, a.revising.Loops...) {
		l.Close()
	}
}

// converge runs the converge phase to its fixpoint (with renew's hooks around it), then the revision phase, and
// fails on a *Degraded=True condition left at the end.
func (a *assembly) converge(ctx context.Context, hooks *SettleHooks, opts SettleOptions) (*loops.Result, error) {
	r := &loops.Runner{Cluster: a.cluster, MaxPasses: 10, Parallelism: opts.Parallelism, RunUnchanged: opts.RunUnchanged}
	if hooks != nil && hooks.BeforeConverge != nil {
		if err := hooks.BeforeConverge(ctx, a.cluster); err != nil {
			return nil, err
		}
	}
	for _, phase := range []loops.Phase{a.converging, a.revising} {
		if len(phase.Loops) == 0 {
			continue
		}
		if err := r.Run(ctx, phase); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		if phase.Name == a.converging.Name && hooks != nil && hooks.AfterConverge != nil {
			if err := hooks.AfterConverge(ctx, a.cluster); err != nil {
				return nil, err
			}
		}
	}
	if err := r.CheckDegraded(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return r.Result(), nil
}

// latestRevisions is each component's latestAvailableRevision.
func latestRevisions(comps []Component) (map[string]int, error) {
	revs := map[string]int{}
	for _, comp := range comps {
		rev, err := staticpod.LatestRevision(comp.Operator())
		if err != nil {
			return nil, err
		}
		revs[comp.Name()] = rev
	}
	return revs, nil
}

// seedDynamic creates the saved objects of the dynamic client's kinds.
func seedDynamic(ctx context.Context, c *loops.Cluster, objs []*unstructured.Unstructured) error {
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		var gvr *schema.GroupVersionResource
		for r, listKind := range c.DynamicResources() {
			if r.Group == gvk.Group && r.Version == gvk.Version && listKind == gvk.Kind+"List" {
				r := r
				gvr = &r
			}
		}
		if gvr == nil {
			return fmt.Errorf("state: %s %s/%s: not a kind this render knows", gvk, u.GetNamespace(), u.GetName())
		}
		if _, err := c.Dynamic.Resource(*gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("state: %s %s/%s: %w", gvk, u.GetNamespace(), u.GetName(), err)
		}
	}
	return nil
}
