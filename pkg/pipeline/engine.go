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
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/node"
	"github.com/render-static/render-static/pkg/state"
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
	// Revisions is each component's latest revision after the revision phase (0: no revision yet);
	// PreviousRevisions before the converge phase (the saved state's; 0 for a new cluster).
	Revisions, PreviousRevisions map[string]int
	Result                       *loops.Result
	Loops                        int
	// KeygenTime is key generation outside the loops; LoopsTime is the loops (which generate most keys).
	KeygenTime, LoopsTime time.Duration
	// From is the saved state the engine continued (nil: a new cluster).
	From *state.State
	// previousIgn waits for the aio.ign beside From, parsed while the loops ran (nil: parse it when needed).
	previousIgn func() *export.PreviousIgnition
	// ahead are the manifests of From's objects, made while the loops ran (nil: none).
	ahead *aheadManifests
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
	return RunEngineFrom(ctx, in, nil, nil)
}

// EngineHooks run around the converge phase: renew marks certificates due before it and takes its marks back
// after it (pkg/renew).
type EngineHooks struct {
	BeforeConverge, AfterConverge func(ctx context.Context, c *loops.Cluster) error
}

// RunEngineFrom is RunEngine continuing from a saved state (nil: a new cluster). With a state, the cluster starts
// with every saved object and operator resource, the admin credential and service-account keys are the saved
// ones, and only the installer's objects derived from the inputs are taken afresh (pkg/state): the loops then
// change only what an input change touches.
func RunEngineFrom(ctx context.Context, in *clusterconfig.Inputs, st *state.State, hooks *EngineHooks) (*Engine, error) {
	return RunEngineWith(ctx, in, st, hooks, EngineOptions{})
}

// EngineOptions say how the engine runs, never what it renders.
type EngineOptions struct {
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

// RunEngineWith is RunEngineFrom with options.
func RunEngineWith(ctx context.Context, in *clusterconfig.Inputs, st *state.State, hooks *EngineHooks, opts EngineOptions) (*Engine, error) {
	if err := CheckCryptoMode(in.InstallConfig); err != nil {
		return nil, err
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = DefaultParallelism()
	}
	// What Export needs that the loops do not change is read and parsed while they run: the CRDs
	// (export.PrefetchCRDs) and the aio.ign beside the state, whose encodings Ignition keeps, validated (an
	// identical new aio.ign then needs no validation of its own, export.PreviousIgnition.Validate).
	go export.PrefetchCRDs(in.InstallConfig.FeatureSet)
	var previousIgn func() *export.PreviousIgnition
	if st != nil {
		var prev *export.PreviousIgnition
		done := make(chan struct{})
		go func() {
			defer close(done)
			prev = export.ParseValidatePreviousIgnition(previousIgnition(st))
		}()
		previousIgn = func() *export.PreviousIgnition { <-done; return prev }
	}
	// And the manifests of the saved objects, which a re-render's loops leave nearly all as they are.
	ahead := manifestsAhead(st)
	succeeded := false
	defer func() {
		if !succeeded {
			ahead.halt() // Export stops it once it needs the cores
		}
	}()
	t := time.Now()
	fresh, err := clusterconfig.Objects(in)
	if err != nil {
		return nil, err
	}
	var admin *certs.Admin
	// issued is closed once admin is there: with a saved state at once, otherwise once the admin client
	// certificate is issued, which runs while the loops do (the cluster needs only the signer's bundle).
	issued := make(chan struct{})
	var adminErr error
	var seeds []runtime.Object
	var dynamic []*unstructured.Unstructured
	if st != nil {
		admin = st.Admin()
		close(issued)
		if seeds, dynamic, err = st.Seeds(fresh); err != nil {
			return nil, err
		}
	} else {
		// The installer's service-account token key pair, made on another core while the admin signer is.
		var saKeys []runtime.Object
		var saErr error
		saDone := make(chan struct{})
		go func() {
			defer close(saDone)
			saKeys, saErr = clusterconfig.ServiceAccountKeySeeds()
		}()
		signer, err := certs.NewAdminSigner(in.Lifetimes)
		<-saDone
		if err != nil {
			return nil, err
		}
		if saErr != nil {
			return nil, saErr
		}
		go func() {
			defer close(issued)
			admin, adminErr = signer.Issue()
		}()
		defer func() { <-issued }() // an engine that fails early still waits for it
		seeds = append(fresh, runtime.Object(signer.ClientCAConfigMap()))
		seeds = append(seeds, saKeys...)
	}
	keygen := time.Since(t)
	c, err := loops.NewCluster(components.Namespaces(), clusterconfig.DynamicKinds, seeds...)
	if err != nil {
		return nil, err
	}
	if err := seedDynamic(ctx, c, dynamic); err != nil {
		return nil, err
	}
	comps := components.Build(c, in)

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
	// The node side runs after every component (node.go).
	nodeSide, err := newNodeSide(c, in, st)
	if err != nil {
		return nil, err
	}
	if st != nil {
		for name, oc := range c.OperatorClients() {
			if saved, ok := st.Operators[name]; ok {
				if err := oc.RestoreState(saved); err != nil {
					return nil, err
				}
			}
		}
	}
	prevRevs, err := latestRevisions(comps)
	if err != nil {
		return nil, err
	}
	converge.Loops = append(converge.Loops, nodeSide.Loops()...)
	defer func() {
		for _, l := range append(converge.Loops, revision.Loops...) {
			l.Close()
		}
	}()

	r := &loops.Runner{Cluster: c, MaxPasses: 10, Parallelism: opts.Parallelism, RunUnchanged: opts.RunUnchanged}
	t = time.Now()
	if hooks != nil && hooks.BeforeConverge != nil {
		if err := hooks.BeforeConverge(ctx, c); err != nil {
			return nil, err
		}
	}
	for _, phase := range []loops.Phase{converge, revision} {
		if len(phase.Loops) == 0 {
			continue
		}
		if err := r.Run(ctx, phase); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		if phase.Name == converge.Name && hooks != nil && hooks.AfterConverge != nil {
			if err := hooks.AfterConverge(ctx, c); err != nil {
				return nil, err
			}
		}
	}
	if err := r.CheckDegraded(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	revs, err := latestRevisions(comps)
	if err != nil {
		return nil, err
	}
	<-issued
	if adminErr != nil {
		return nil, adminErr
	}
	succeeded = true
	return &Engine{
		Inputs: in, Cluster: c, Admin: admin, Components: comps, Node: nodeSide, Revisions: revs, PreviousRevisions: prevRevs,
		Result: r.Result(), Loops: len(converge.Loops) + len(revision.Loops),
		KeygenTime: keygen, LoopsTime: time.Since(t), From: st, previousIgn: previousIgn, ahead: ahead,
	}, nil
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
