package rendertest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/staticpod"
)

// A component rendered on its own, without the pipeline: what a component package's tests of its loops use
// (etcd's, kube-apiserver's), with the same node, infrastructure name, lifetimes and images as the pipeline's
// renders.

// StandaloneInputs are the inputs and seed objects of one component's render: the install-config at config with
// node IPs ips ("": its "# node-ip:" comment), node NodeName, infrastructure name InfraID, the default lifetimes
// and images, the flavor.
func StandaloneInputs(config, ips string, flavor clusterconfig.Flavor) (*clusterconfig.Inputs, []runtime.Object, error) {
	if ips == "" {
		var err error
		if ips, err = NodeIPs(config); err != nil {
			return nil, nil, err
		}
	}
	addrs, err := installconfig.ParseNodeIPs(ips)
	if err != nil {
		return nil, nil, fmt.Errorf("node IPs %q: %v", ips, err)
	}
	ic, err := installconfig.Load(config, addrs)
	if err != nil {
		return nil, nil, fmt.Errorf("install-config %s: %v", config, err)
	}
	lt, err := certs.NewLifetimes(certs.DefaultLeafValidity)
	if err != nil {
		return nil, nil, err
	}
	images, err := clusterconfig.LoadImages("", components.DefaultImages())
	if err != nil {
		return nil, nil, err
	}
	in := &clusterconfig.Inputs{InstallConfig: ic, NodeName: NodeName, NodeIPs: addrs, InfraID: InfraID, Lifetimes: lt,
		Images: images, Flavor: flavor}
	seeds, err := clusterconfig.Objects(in)
	if err != nil {
		return nil, nil, err
	}
	return in, seeds, nil
}

// StandaloneComponent is what Standalone runs: a component package's Component.
type StandaloneComponent interface {
	Converge() []loops.Loop
	Revision() ([]loops.Loop, error)
	Operator() *loops.OperatorClient
	StaticPod() staticpod.StaticPod
}

// Standalone runs a component as the engine does (converge phase: the loops before it, emulations, and its own
// to a fixpoint; revision phase: its revision loops), checks no loop left it Degraded, and lays out its latest
// revision as the installer does for node NodeName.
func Standalone(ctx context.Context, c *loops.Cluster, comp StandaloneComponent, before []loops.Loop) (*loops.Runner, int, *export.Tree, error) {
	rev, err := comp.Revision()
	if err != nil {
		return nil, 0, nil, err
	}
	phases := []loops.Phase{{Name: "converge", Loops: append(append([]loops.Loop(nil), before...), comp.Converge()...)}, {Name: "revision", Loops: rev}}
	defer func() {
		for _, p := range phases {
			for _, l := range p.Loops {
				l.Close()
			}
		}
	}()
	runner := &loops.Runner{Cluster: c, MaxPasses: 10}
	for _, p := range phases {
		if err := runner.Run(ctx, p); err != nil {
			return runner, 0, nil, fmt.Errorf("%s: %v\n%s", p.Name, err, runner.Result().Trace())
		}
	}
	if err := runner.CheckDegraded(); err != nil {
		return runner, 0, nil, err
	}
	n, err := staticpod.LatestRevision(comp.Operator())
	if err != nil {
		return runner, 0, nil, err
	}
	tree, err := export.Install(ctx, c.Kube, comp.StaticPod(), n, NodeName)
	if err != nil {
		return runner, n, nil, fmt.Errorf("install: %v", err)
	}
	return runner, n, tree, nil
}

// Contents is the contents of the file p of files (keyed as the caller keys them), or fails the test.
func Contents(t testing.TB, files map[string]export.File, p string) []byte {
	t.Helper()
	f, ok := files[p]
	if !ok {
		t.Fatalf("the render has no %s", p)
	}
	return f.Contents
}

// Once computes a value once per key and process: later calls return the same value, or the same error.
type Once[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*onceEntry[V]
}

type onceEntry[V any] struct {
	once sync.Once
	v    V
	err  error
}

// Get returns the value for k, computing it with f the first time.
func (o *Once[K, V]) Get(k K, f func() (V, error)) (V, error) {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[K]*onceEntry[V]{}
	}
	e, ok := o.m[k]
	if !ok {
		e = &onceEntry[V]{}
		o.m[k] = e
	}
	o.mu.Unlock()
	e.once.Do(func() { e.v, e.err = f() })
	return e.v, e.err
}

// Values are the values computed so far (those without an error).
func (o *Once[K, V]) Values() []V {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []V
	for _, e := range o.m {
		if e.err == nil {
			out = append(out, e.v)
		}
	}
	return out
}
