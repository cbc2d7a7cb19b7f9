package loops

import (
	"context"
	"fmt"
	"sync"

	operatorv1 "github.com/openshift/api/operator/v1"
	applyoperatorv1 "github.com/openshift/client-go/operator/applyconfigurations/operator/v1"
	"github.com/openshift/library-go/pkg/apiserver/jsonpatch"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Concurrent loops.
//
// Most of a render's CPU is RSA key generation inside library-go's cert-rotation controllers, one controller (one
// row of a component's certificate table) after another. A loop marked Concurrent may start before the loops
// ahead of it in its pass have finished, so that its keys are made while they run, without changing anything a
// sequential run would observe:
//
//   - Its turn comes once every loop ahead of it in the pass has finished. Every write it makes, and every access
//     to an operator resource (shared by a component's loops), waits for its turn: its clients are wrapped with
//     Turn.CoreV1 and Turn.StaticPodOperator. The cluster therefore sees the writes of the fixed order, in the
//     fixed order, made by one loop at a time: the journal, the UIDs (their serials), the resourceVersions and the
//     order of an operator resource's conditions are those of a sequential run.
//   - Before its turn it reads only what it watches: its footprint (the objects it may write) and its inputs
//     (Reads: objects it only reads, e.g. where serving names come from).
//   - The runner starts it once no concurrent loop ahead of it that is still in flight may write what it
//     watches (footprints are declared, so this is known before it starts; a loop that shares only objects it
//     settles, see Settles, stops counting when it settled them) and one of Parallelism slots is free:
//     a slot is held while a loop computes before its turn (its keys), given back when it has to wait for its
//     turn, and a free slot goes to the loop whose turn has come, else to the loop that makes the most keys
//     (MakesKeys), else to the earliest, so that no long chain of keys is left for the end (runner.go, slots).
//     Loops that are not concurrent do not hold it back: they run alone, in their turn, and may write anything.
//   - Whatever a loop ahead of it writes after it started, the cluster checks against what it watches: if it
//     wrote a watched object, the loop is stale, and when its turn comes its first wait for the turn abandons the
//     run (a panic the runner recovers: nothing was written, keys made are dropped) and the runner runs it again
//     from the start, in its turn, as a sequential run would.
//
// The reactor checks the contract: while a concurrent loop has the turn, a write to any object outside its
// footprint fails, which also catches a write made before the loop's turn (it would be attributed to the loop
// that has the turn).

// Object names one object of a footprint.
type Object struct{ Resource, Namespace, Name string }

func (o Object) String() string { return o.Resource + " " + o.Namespace + "/" + o.Name }

// Secret and ConfigMap name footprint objects.
func Secret(ns, name string) Object { return Object{Resource: "secrets", Namespace: ns, Name: name} }
func ConfigMap(ns, name string) Object {
	return Object{Resource: "configmaps", Namespace: ns, Name: name}
}

// Turn orders one concurrent loop's writes after every loop ahead of it in its pass. One Turn belongs to one
// loop; outside a concurrent run (a sequential runner, a loop called directly) Wait returns at once.
type Turn struct {
	mu      sync.Mutex
	ready   <-chan struct{} // closed when every loop ahead has finished; nil: the turn is there
	granted bool
	onGrant func() (stale bool)
	// onBlock runs once, when the loop first has to wait for its turn (it stops computing).
	onBlock func()
	// settle tells the runner the loop has settled the objects it declared with Settles (Settle), with the
	// writes it keeps for its turn; unpublish runs once those are made or dropped (abandoned: dropped).
	settle    func(pending []pendingWrite)
	unpublish func(abandoned bool)
	// abandon: the loop was stale when its turn came; every Wait of this run panics with errStale.
	abandon bool
	// deferWrites (DeferWrites): creates and updates made before the turn are kept in pending, by object, and
	// made when the turn comes.
	deferWrites bool
	pending     []pendingWrite
	flushed     int // deferred writes made at the turn in this run
}

// pendingWrite is a create or update a loop made before its turn, made for it when the turn comes: sent is the
// object as the loop sent it.
type pendingWrite struct {
	obj  Object
	sent runtime.Object
	make func() error
}

// flushError is the panic value with which Wait reports a pending write that failed when it was made.
type flushError struct{ err error }

func (e *flushError) Error() string { return "making a write deferred to the turn: " + e.err.Error() }

// errStale is the panic value with which Wait abandons the run of a stale loop (see above).
var errStale = &struct{ string }{"loops: stale concurrent run abandoned"}

// NewTurn returns a turn for one loop (see Loop.Concurrent).
func NewTurn() *Turn { return &Turn{granted: true} }

// Wait blocks until the loop's turn. The first Wait of a run takes the turn (the cluster attributes writes to
// the loop from then on): if the loop is stale by then, Wait abandons the run; otherwise it makes the writes the
// loop deferred, in the order the loop made them.
func (t *Turn) Wait() {
	if t == nil {
		return
	}
	t.mu.Lock()
	ready, onBlock := t.ready, t.onBlock
	t.onBlock = nil
	t.mu.Unlock()
	if ready != nil {
		select {
		case <-ready:
		default:
			if onBlock != nil {
				onBlock()
			}
			<-ready
		}
	}
	t.mu.Lock()
	var flush []pendingWrite
	var unpublish func(abandoned bool)
	if !t.granted {
		t.granted = true
		if t.onGrant != nil && t.onGrant() {
			t.abandon = true
		}
		flush, t.pending = t.pending, nil
		unpublish = t.unpublish
	}
	abandon := t.abandon
	t.mu.Unlock()
	if abandon {
		if unpublish != nil {
			unpublish(true)
		}
		panic(errStale)
	}
	if unpublish != nil {
		defer unpublish(false)
	}
	for _, w := range flush {
		if err := w.make(); err != nil {
			panic(&flushError{fmt.Errorf("%s: %w", w.obj, err)})
		}
		t.mu.Lock()
		t.flushed++
		t.mu.Unlock()
	}
}

// DeferWrites makes the turn's clients keep the creates and updates of secrets and config maps a loop makes
// before its turn and make them when the turn comes (Wait), so that the loop computes on (a cert-rotation row
// makes its target's key after writing its signer) instead of waiting. The loop sees its writes succeed with the
// object it sent; it must not read back an object it wrote through a lister before its turn (reads through the
// turn's clients wait for the turn when the object has a deferred write). Returns t.
func (t *Turn) DeferWrites() *Turn {
	t.deferWrites = true
	return t
}

// deferWrite keeps a write of o for the turn and says whether it did: only for a turn that defers writes, whose
// loop is in flight and cannot take its turn yet.
func (t *Turn) deferWrite(o Object, sent runtime.Object, make func() error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.deferWrites || t.granted || t.ready == nil {
		return false
	}
	select {
	case <-t.ready:
		return false // the turn is there: take it and write now
	default:
	}
	t.pending = append(t.pending, pendingWrite{obj: o, sent: sent, make: make})
	return true
}

// hasPending says whether an object of resource in ns (named name; "" for any) has a deferred write.
func (t *Turn) hasPending(resource, ns, name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.pending {
		if w.obj.Resource == resource && w.obj.Namespace == ns && (name == "" || w.obj.Name == name) {
			return true
		}
	}
	return false
}

// arm prepares the turn for one run of its loop: ready is closed when the loops ahead have finished, onGrant runs
// once when the loop takes its turn and says whether the loop is stale, onBlock once if the loop has to wait.
func (t *Turn) arm(ready <-chan struct{}, onGrant func() (stale bool), onBlock func(), settle func([]pendingWrite), unpublish func(bool)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ready, t.granted, t.onGrant, t.onBlock, t.settle, t.abandon = ready, false, onGrant, onBlock, settle, false
	t.unpublish, t.pending, t.flushed = unpublish, nil, 0
}

// deferredWrites says how many writes of the current run were deferred to the turn and made then.
func (t *Turn) deferredWrites() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.flushed
}

// Settle says that this run of the loop will not write the objects it declared with Settles any more: loops
// behind it that share only those objects with it may start now rather than when it finished. Writes of them it
// keeps for its turn (DeferWrites) are published: loops behind read them through Published until the turn makes
// them. It is a hint for speed only: if the run writes one after all, or is abandoned, those loops are stale and
// run again in their turn.
func (t *Turn) Settle() {
	if t == nil {
		return
	}
	t.mu.Lock()
	settle := t.settle
	pending := append([]pendingWrite(nil), t.pending...)
	t.mu.Unlock()
	if settle != nil {
		settle(pending)
	}
}

// resume lets the run that replaces an abandoned one wait for nothing: the turn is already the loop's.
func (t *Turn) resume() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.abandon = false
}

// disarm returns the turn to its idle state, where Wait returns at once.
func (t *Turn) disarm() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ready, t.granted, t.onGrant, t.onBlock, t.settle, t.abandon = nil, true, nil, nil, nil, false
	t.unpublish, t.pending = nil, nil
}

// Concurrent marks the loop as one that may run while earlier loops of its pass still run (see above): turn is
// the one its clients wait for, footprint every object it may write in its turn (and reads before it). Each
// concurrent loop needs its own Turn.
func (l Loop) Concurrent(turn *Turn, footprint ...Object) Loop {
	if turn == nil || len(footprint) == 0 {
		panic(fmt.Sprintf("loops: %s: a concurrent loop needs a turn and a footprint", l.Name))
	}
	l.turn = turn
	l.footprint = map[Object]bool{}
	l.watch = map[Object]bool{}
	for _, o := range footprint {
		l.footprint[o] = true
		l.watch[o] = true
	}
	return l
}

// Reads adds objects a concurrent loop reads before its turn but never writes (its inputs): a loop ahead of it
// that writes one makes it stale.
func (l Loop) Reads(inputs ...Object) Loop {
	if l.turn == nil {
		panic(fmt.Sprintf("loops: %s: Reads applies to a concurrent loop", l.Name))
	}
	watch := map[Object]bool{}
	for o := range l.watch {
		watch[o] = true
	}
	for _, o := range inputs {
		watch[o] = true
	}
	l.watch = watch
	return l
}

// Settles declares objects of a concurrent loop's footprint that each run writes only before it calls
// Turn.Settle (a cert-rotation row: its signer and CA bundle, before it turns to its target).
func (l Loop) Settles(objs ...Object) Loop {
	l.settles = l.ofFootprint("settles", objs)
	return l
}

// MakesKeys declares objects of a concurrent loop's footprint that hold a private key the loop generates when it
// makes them (a cert-rotation row: its signer and its target). It changes only which loop computes first
// (slots): a loop that makes keys no loop ahead of it makes gets a slot before one that makes fewer.
func (l Loop) MakesKeys(objs ...Object) Loop {
	l.keys = l.ofFootprint("makes keys in", objs)
	return l
}

// ofFootprint is objs as a set, each of which must be in the loop's footprint (what says what the declaration is).
func (l Loop) ofFootprint(what string, objs []Object) map[Object]bool {
	set := map[Object]bool{}
	for _, o := range objs {
		if !l.footprint[o] {
			panic(fmt.Sprintf("loops: %s: %s %s, which is not in its footprint", l.Name, what, o))
		}
		set[o] = true
	}
	return set
}

// IsConcurrent says whether the loop was marked Concurrent.
func (l Loop) IsConcurrent() bool { return l.turn != nil }

// mayChange says whether loop a, running ahead of l, may write something l watches, and if so whether all of
// it is among what a settles: l must not start before a finished, or settled.
func (l Loop) mayChange(a Loop) (may, settles bool) {
	settles = true
	for k := range a.footprint {
		if l.watch[k] {
			may = true
			settles = settles && a.settles[k]
		}
	}
	return may, may && settles
}

// CoreV1 wraps a core/v1 client so that writes of secrets and config maps wait for the turn; reads do not wait.
// Other resources are not wrapped: a concurrent loop writes only secrets and config maps of its footprint.
func (t *Turn) CoreV1(c corev1client.CoreV1Interface) corev1client.CoreV1Interface {
	return turnCoreV1{CoreV1Interface: c, t: t}
}

type turnCoreV1 struct {
	corev1client.CoreV1Interface
	t *Turn
}

func (c turnCoreV1) Secrets(ns string) corev1client.SecretInterface {
	s := c.CoreV1Interface.Secrets(ns)
	return turnSecrets{secretRest{s}, turnClient[*corev1.Secret, *corev1.SecretList, *applycorev1.SecretApplyConfiguration]{w: s, t: c.t, resource: "secrets", ns: ns}}
}

func (c turnCoreV1) ConfigMaps(ns string) corev1client.ConfigMapInterface {
	cm := c.CoreV1Interface.ConfigMaps(ns)
	return turnConfigMaps{configMapRest{cm}, turnClient[*corev1.ConfigMap, *corev1.ConfigMapList, *applycorev1.ConfigMapApplyConfiguration]{w: cm, t: c.t, resource: "configmaps", ns: ns}}
}

// turnSecrets and turnConfigMaps read and write through turnClient, whose methods, being shallower, are the ones
// promoted; the rest (watches) goes to the client, one level down.
type (
	turnSecrets struct {
		secretRest
		turnClient[*corev1.Secret, *corev1.SecretList, *applycorev1.SecretApplyConfiguration]
	}
	secretRest     struct{ corev1client.SecretInterface }
	turnConfigMaps struct {
		configMapRest
		turnClient[*corev1.ConfigMap, *corev1.ConfigMapList, *applycorev1.ConfigMapApplyConfiguration]
	}
	configMapRest struct {
		corev1client.ConfigMapInterface
	}
)

var (
	_ corev1client.SecretInterface    = turnSecrets{}
	_ corev1client.ConfigMapInterface = turnConfigMaps{}
)

// client is the read and write half of a typed client of objects T, lists L and apply configurations A.
type client[T, L, A any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Create(ctx context.Context, o T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, o T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, list metav1.ListOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (T, error)
	Apply(ctx context.Context, cfg A, opts metav1.ApplyOptions) (T, error)
}

// turnClient makes every write of w wait for the turn, or keeps creates and updates for it (DeferWrites); a read
// of an object with a deferred write first waits for the turn, which makes the write.
type turnClient[T, L, A any] struct {
	w            client[T, L, A]
	t            *Turn
	resource, ns string
}

func (s turnClient[T, L, A]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	s.flushFor(name)
	return s.w.Get(ctx, name, opts)
}

func (s turnClient[T, L, A]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	s.flushFor("")
	return s.w.List(ctx, opts)
}

// flushFor waits for the turn if the object name (any object for "") has a deferred write.
func (s turnClient[T, L, A]) flushFor(name string) {
	if s.t.hasPending(s.resource, s.ns, name) {
		s.t.Wait()
	}
}

// deferred keeps the write of o (made by write on a copy) for the turn when the turn defers writes, and returns
// what the loop sees: the object it sent.
func (s turnClient[T, L, A]) deferred(o T, write func(T) error) (T, bool) {
	ro, ok := any(o).(runtime.Object)
	if !ok {
		return o, false
	}
	m, err := meta.Accessor(ro)
	if err != nil || m.GetName() == "" {
		return o, false
	}
	sent := ro.DeepCopyObject()
	obj := Object{Resource: s.resource, Namespace: s.ns, Name: m.GetName()}
	if !s.t.deferWrite(obj, sent, func() error { return write(sent.DeepCopyObject().(T)) }) {
		return o, false
	}
	return ro.DeepCopyObject().(T), true
}

func (s turnClient[T, L, A]) Create(ctx context.Context, o T, opts metav1.CreateOptions) (T, error) {
	if seen, ok := s.deferred(o, func(o T) error { _, err := s.w.Create(ctx, o, opts); return err }); ok {
		return seen, nil
	}
	s.t.Wait()
	return s.w.Create(ctx, o, opts)
}

func (s turnClient[T, L, A]) Update(ctx context.Context, o T, opts metav1.UpdateOptions) (T, error) {
	if seen, ok := s.deferred(o, func(o T) error { _, err := s.w.Update(ctx, o, opts); return err }); ok {
		return seen, nil
	}
	s.t.Wait()
	return s.w.Update(ctx, o, opts)
}

func (s turnClient[T, L, A]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	s.t.Wait()
	return s.w.Delete(ctx, name, opts)
}

func (s turnClient[T, L, A]) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, list metav1.ListOptions) error {
	s.t.Wait()
	return s.w.DeleteCollection(ctx, opts, list)
}

func (s turnClient[T, L, A]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (T, error) {
	s.t.Wait()
	return s.w.Patch(ctx, name, pt, data, opts, sub...)
}

func (s turnClient[T, L, A]) Apply(ctx context.Context, cfg A, opts metav1.ApplyOptions) (T, error) {
	s.t.Wait()
	return s.w.Apply(ctx, cfg, opts)
}

// StaticPodOperator wraps an operator client so that every read and write of the operator resource waits for
// the turn: the resource is shared by every loop of a component, so even a read is ordered.
func (t *Turn) StaticPodOperator(op v1helpers.StaticPodOperatorClient) v1helpers.StaticPodOperatorClient {
	return turnOperator{StaticPodOperatorClient: op, t: t}
}

// turnOperator embeds the client for Informer (a never-started informer, not shared state) and overrides every
// method that reads or writes the resource.
type turnOperator struct {
	v1helpers.StaticPodOperatorClient
	t *Turn
}

// inTurn waits for the turn and returns the client: every method below goes through it.
func (o turnOperator) inTurn() v1helpers.StaticPodOperatorClient {
	o.t.Wait()
	return o.StaticPodOperatorClient
}

func (o turnOperator) GetObjectMeta() (*metav1.ObjectMeta, error) {
	return o.inTurn().GetObjectMeta()
}

func (o turnOperator) GetOperatorState() (*operatorv1.OperatorSpec, *operatorv1.OperatorStatus, string, error) {
	return o.inTurn().GetOperatorState()
}

func (o turnOperator) GetOperatorStateWithQuorum(ctx context.Context) (*operatorv1.OperatorSpec, *operatorv1.OperatorStatus, string, error) {
	return o.inTurn().GetOperatorStateWithQuorum(ctx)
}

func (o turnOperator) UpdateOperatorSpec(ctx context.Context, rv string, in *operatorv1.OperatorSpec) (*operatorv1.OperatorSpec, string, error) {
	return o.inTurn().UpdateOperatorSpec(ctx, rv, in)
}

func (o turnOperator) UpdateOperatorStatus(ctx context.Context, rv string, in *operatorv1.OperatorStatus) (*operatorv1.OperatorStatus, error) {
	return o.inTurn().UpdateOperatorStatus(ctx, rv, in)
}

func (o turnOperator) ApplyOperatorSpec(ctx context.Context, mgr string, cfg *applyoperatorv1.OperatorSpecApplyConfiguration) error {
	return o.inTurn().ApplyOperatorSpec(ctx, mgr, cfg)
}

func (o turnOperator) ApplyOperatorStatus(ctx context.Context, mgr string, cfg *applyoperatorv1.OperatorStatusApplyConfiguration) error {
	return o.inTurn().ApplyOperatorStatus(ctx, mgr, cfg)
}

func (o turnOperator) PatchOperatorStatus(ctx context.Context, p *jsonpatch.PatchSet) error {
	return o.inTurn().PatchOperatorStatus(ctx, p)
}

func (o turnOperator) GetStaticPodOperatorState() (*operatorv1.StaticPodOperatorSpec, *operatorv1.StaticPodOperatorStatus, string, error) {
	return o.inTurn().GetStaticPodOperatorState()
}

func (o turnOperator) GetStaticPodOperatorStateWithQuorum(ctx context.Context) (*operatorv1.StaticPodOperatorSpec, *operatorv1.StaticPodOperatorStatus, string, error) {
	return o.inTurn().GetStaticPodOperatorStateWithQuorum(ctx)
}

func (o turnOperator) UpdateStaticPodOperatorStatus(ctx context.Context, rv string, in *operatorv1.StaticPodOperatorStatus) (*operatorv1.StaticPodOperatorStatus, error) {
	return o.inTurn().UpdateStaticPodOperatorStatus(ctx, rv, in)
}

func (o turnOperator) UpdateStaticPodOperatorSpec(ctx context.Context, rv string, in *operatorv1.StaticPodOperatorSpec) (*operatorv1.StaticPodOperatorSpec, string, error) {
	return o.inTurn().UpdateStaticPodOperatorSpec(ctx, rv, in)
}

func (o turnOperator) ApplyStaticPodOperatorSpec(ctx context.Context, mgr string, cfg *applyoperatorv1.StaticPodOperatorSpecApplyConfiguration) error {
	return o.inTurn().ApplyStaticPodOperatorSpec(ctx, mgr, cfg)
}

func (o turnOperator) ApplyStaticPodOperatorStatus(ctx context.Context, mgr string, cfg *applyoperatorv1.StaticPodOperatorStatusApplyConfiguration) error {
	return o.inTurn().ApplyStaticPodOperatorStatus(ctx, mgr, cfg)
}

func (o turnOperator) PatchStaticOperatorStatus(ctx context.Context, p *jsonpatch.PatchSet) error {
	return o.inTurn().PatchStaticOperatorStatus(ctx, p)
}
