// Package loops is the render engine: one in-memory cluster of fake clients whose informer indexers are fed
// synchronously by client reactors, in-memory operator clients, and a runner that drives control loops in a fixed
// order until a whole pass writes nothing.
//
// Informers are never started. Every write that reaches a fake clientset goes through a reactor prepended in front
// of the default one: it applies the write to the tracker itself, re-reads the stored object and puts a copy into
// every informer indexer that could list it. A lister therefore sees a write as soon as the client call returns,
// which is what library-go's controllers assume (they read through listers and write through clients).
package loops

import (
	"crypto/sha1"
	"fmt"
	"sort"
	"sync"
	"time"

	configfake "github.com/openshift/client-go/config/clientset/versioned/fake"
	configscheme "github.com/openshift/client-go/config/clientset/versioned/scheme"
	configinformers "github.com/openshift/client-go/config/informers/externalversions"
	operatorfake "github.com/openshift/client-go/operator/clientset/versioned/fake"
	operatorscheme "github.com/openshift/client-go/operator/clientset/versioned/scheme"
	operatorinformers "github.com/openshift/client-go/operator/informers/externalversions"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Cluster is the in-memory cluster every loop of a render runs against.
type Cluster struct {
	Kube     *kubefake.Clientset
	Config   *configfake.Clientset
	Operator *operatorfake.Clientset
	Dynamic  *dynamicfake.FakeDynamicClient

	// KubeInformers holds one never-started informer factory per namespace the loops use, plus the
	// all-namespaces factory "".
	KubeInformers     v1helpers.KubeInformersForNamespaces
	ConfigInformers   configinformers.SharedInformerFactory
	OperatorInformers operatorinformers.SharedInformerFactory

	// Recorder receives the events the loops emit (kept in memory).
	Recorder events.Recorder
	// Clock is the clock handed to loops.
	Clock clock.PassiveClock

	mu        sync.Mutex
	journal   []Write
	current   string // loop being run; writes are attributed to it
	pass      int
	phase     string
	uidSerial int
	operators map[string]*OperatorClient
	dynGVRs   map[schema.GroupVersionResource]string
	// flight holds the concurrent loops in flight, by loop name (turn.go).
	flight map[string]*flight
	// exclusive: the loop that has the turn is not concurrent; it may write any object, and a write to what an
	// in-flight loop watches makes that loop stale.
	exclusive bool
	// declared is what the loop that has the turn declared with Loop.Watches: it may write nothing else (nil:
	// anything).
	declared map[Object]bool
	// published holds the writes of settled objects concurrent loops keep for their turn, by object (turn.go).
	published map[Object]publishedWrite
	// versions holds, by object (its resource as the journal names it), the number of writes the journal held
	// after the object's last write (Version); watchVersions the same by object as footprints and Reads name
	// it (the resource without its group, as markStale does).
	versions, watchVersions map[Object]int
	// membership is the number of writes the journal held after the last write that made an object exist or
	// stop existing (Membership).
	membership int
}

// publishedWrite is the last write of an object a loop keeps for its turn, published when it settled it.
type publishedWrite struct {
	writer string
	order  int // the writer's place in its pass
	obj    runtime.Object
}

// flight is one concurrent loop in flight: what it may write in its turn, what it read before its turn, whether
// its turn came, and whether another loop wrote what it read before that.
type flight struct {
	footprint, watch map[Object]bool
	granted, stale   bool
	// readFrom names, for each object the loop read as published by a loop ahead, that loop: its turn making the
	// write does not make this loop stale.
	readFrom map[Object]string
	order    int // the loop's place in its pass
}

// Write is one change to the cluster: which loop made it, in which phase and pass.
type Write struct {
	Phase     string
	Pass      int
	Loop      string
	Verb      string // create, update, delete
	Resource  string // "secrets", "configmaps.v1", "kubeapiservers.operator.openshift.io/status"
	Namespace string
	Name      string
}

func (w Write) String() string {
	obj := w.Name
	if w.Namespace != "" {
		obj = w.Namespace + "/" + w.Name
	}
	return fmt.Sprintf("%-8s pass %-2d %-58s %-7s %s %s", w.Phase, w.Pass, w.Loop, w.Verb, w.Resource, obj)
}

// NewCluster builds the fakes, seeded with objects (typed kube, config.openshift.io or operator.openshift.io
// objects, routed by their Go type), and informer factories for the given namespaces. dynamicKinds maps every
// GVR a loop may create through the dynamic client to its list kind (e.g. ServiceMonitorList).
func NewCluster(namespaces []string, dynamicKinds map[schema.GroupVersionResource]string, seeds ...runtime.Object) (*Cluster, error) {
	var kubeSeeds, configSeeds, operatorSeeds []runtime.Object
	for _, o := range seeds {
		o = o.DeepCopyObject()
		stampCreate(o, "seed", 0)
		switch {
		case isInScheme(kubescheme.Scheme, o):
			kubeSeeds = append(kubeSeeds, o)
		case isInScheme(configscheme.Scheme, o):
			configSeeds = append(configSeeds, o)
		case isInScheme(operatorscheme.Scheme, o):
			operatorSeeds = append(operatorSeeds, o)
		default:
			return nil, fmt.Errorf("seed %T: not a kube, config or operator type", o)
		}
	}
	c := &Cluster{
		Kube:          kubefake.NewSimpleClientset(kubeSeeds...),
		Config:        configfake.NewSimpleClientset(configSeeds...),
		Operator:      operatorfake.NewSimpleClientset(operatorSeeds...),
		Clock:         clock.RealClock{},
		operators:     map[string]*OperatorClient{},
		dynGVRs:       map[schema.GroupVersionResource]string{},
		versions:      map[Object]int{},
		watchVersions: map[Object]int{},
		phase:         "seed",
		current:       "seed",
	}
	for gvr, k := range dynamicKinds {
		c.dynGVRs[gvr] = k
	}
	c.Dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), dynamicKinds)
	c.Recorder = events.NewInMemoryRecorder("render-static", clock.RealClock{})

	nsSet := map[string]bool{"": true}
	for _, ns := range namespaces {
		nsSet[ns] = true
	}
	var all []string
	for ns := range nsSet {
		all = append(all, ns)
	}
	sort.Strings(all)
	c.KubeInformers = v1helpers.NewKubeInformersForNamespaces(c.Kube, all...)
	c.ConfigInformers = configinformers.NewSharedInformerFactory(c.Config, 0)
	c.OperatorInformers = operatorinformers.NewSharedInformerFactory(c.Operator, 0)

	kube, config, operator := cachedIndexers(c.kubeIndexers), cachedIndexers(c.configIndexers), cachedIndexers(c.operatorIndexers)
	c.Kube.Fake.PrependReactor("*", "*", c.reactor(c.Kube.Tracker(), kube))
	c.Config.Fake.PrependReactor("*", "*", c.reactor(c.Config.Tracker(), config))
	c.Operator.Fake.PrependReactor("*", "*", c.reactor(c.Operator.Tracker(), operator))
	c.Dynamic.Fake.PrependReactor("*", "*", c.reactor(c.Dynamic.Tracker(), nil))

	// Seeds went into the trackers through the constructors, not through the reactors: prime the indexers.
	for _, o := range kubeSeeds {
		c.feed(kube, o, false)
	}
	for _, o := range configSeeds {
		c.feed(config, o, false)
	}
	for _, o := range operatorSeeds {
		c.feed(operator, o, false)
	}
	return c, nil
}

func isInScheme(s *runtime.Scheme, o runtime.Object) bool {
	kinds, _, err := s.ObjectKinds(o)
	return err == nil && len(kinds) > 0
}

// Namespaces returns the namespaces that have their own informer factory.
func (c *Cluster) Namespaces() []string {
	return sets(c.KubeInformers.Namespaces().UnsortedList())
}

func sets(in []string) []string {
	sort.Strings(in)
	return in
}

// indexersFor returns the indexers that must see an object of gvr in namespace ns.
type indexerFunc func(gvr schema.GroupVersionResource, ns string) ([]cache.Indexer, error)

// cachedIndexers is f with its answers kept by resource and namespace. The informer factories make one informer
// per resource (and namespace) on first use and hand out that one afterwards, and the cluster's namespaces are
// fixed when it is made, so the answer for a resource and namespace never changes; asking the factories again
// on every write cost ~10 ms of a render. Errors are not kept.
func cachedIndexers(f indexerFunc) indexerFunc {
	type key struct {
		gvr schema.GroupVersionResource
		ns  string
	}
	var mu sync.Mutex
	known := map[key][]cache.Indexer{}
	return func(gvr schema.GroupVersionResource, ns string) ([]cache.Indexer, error) {
		mu.Lock()
		defer mu.Unlock()
		k := key{gvr, ns}
		if out, ok := known[k]; ok {
			return out, nil
		}
		out, err := f(gvr, ns)
		if err != nil {
			return nil, err
		}
		known[k] = out
		return out, nil
	}
}

func (c *Cluster) kubeIndexers(gvr schema.GroupVersionResource, ns string) ([]cache.Indexer, error) {
	var out []cache.Indexer
	for _, fns := range c.Namespaces() {
		if ns != "" && fns != "" && fns != ns {
			continue
		}
		inf, err := c.KubeInformers.InformersFor(fns).ForResource(gvr)
		if err != nil {
			return nil, err
		}
		out = append(out, inf.Informer().GetIndexer())
	}
	return out, nil
}

func (c *Cluster) configIndexers(gvr schema.GroupVersionResource, _ string) ([]cache.Indexer, error) {
	inf, err := c.ConfigInformers.ForResource(gvr)
	if err != nil {
		return nil, err
	}
	return []cache.Indexer{inf.Informer().GetIndexer()}, nil
}

func (c *Cluster) operatorIndexers(gvr schema.GroupVersionResource, _ string) ([]cache.Indexer, error) {
	inf, err := c.OperatorInformers.ForResource(gvr)
	if err != nil {
		return nil, err
	}
	return []cache.Indexer{inf.Informer().GetIndexer()}, nil
}

// schemeFor returns the scheme of the clientset an object belongs to.
func schemeFor(o runtime.Object) *runtime.Scheme {
	for _, s := range []*runtime.Scheme{kubescheme.Scheme, configscheme.Scheme, operatorscheme.Scheme} {
		if isInScheme(s, o) {
			return s
		}
	}
	return kubescheme.Scheme
}

func gvrOf(s *runtime.Scheme, o runtime.Object) (schema.GroupVersionResource, error) {
	kinds, _, err := s.ObjectKinds(o)
	if err != nil || len(kinds) == 0 {
		return schema.GroupVersionResource{}, fmt.Errorf("unknown kind %T: %v", o, err)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(kinds[0])
	return gvr, nil
}

// feed puts o (or its deletion) into every indexer that lists it. Objects of kinds no informer factory knows
// (e.g. unstructured objects of the dynamic fake) are skipped: nothing can list them through an informer.
func (c *Cluster) feed(indexers indexerFunc, o runtime.Object, deleted bool) {
	if indexers == nil {
		return
	}
	gvr, err := gvrOf(schemeFor(o), o)
	if err != nil {
		return
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return
	}
	idx, err := indexers(gvr, m.GetNamespace())
	if err != nil {
		return
	}
	for _, i := range idx {
		if deleted {
			_ = i.Delete(o)
		} else {
			_ = i.Update(o.DeepCopyObject())
		}
	}
}

// reactor handles every write to a fake itself, so that it can stamp metadata, detect no-op updates, record the
// write in the journal and feed the informer indexers before the client call returns.
func (c *Cluster) reactor(tracker clienttesting.ObjectTracker, indexers indexerFunc) clienttesting.ReactionFunc {
	defaultReaction := clienttesting.ObjectReaction(tracker)
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		verb := action.GetVerb()
		switch verb {
		case "create", "update", "patch", "delete":
		default:
			return defaultReaction(action)
		}
		gvr := action.GetResource()
		ns := action.GetNamespace()
		name := actionName(action)
		if err := c.checkTurn(Object{Resource: gvr.Resource, Namespace: ns, Name: name}); err != nil {
			return true, nil, err
		}

		// The tracker's Get returns a copy, and the action is the fake's own copy of the caller's (Fake.Invokes):
		// both are the reactor's to change.
		var before runtime.Object
		if name != "" {
			if o, err := tracker.Get(gvr, ns, name); err == nil {
				before = o
			}
		}
		if verb == "create" {
			ca, ok := action.(clienttesting.CreateActionImpl)
			if ok {
				obj := ca.Object
				c.mu.Lock()
				c.uidSerial++
				serial := c.uidSerial
				c.mu.Unlock()
				stampCreate(obj, gvr.String(), serial)
				ca.Object = obj
				action = ca
				if m, err := meta.Accessor(obj); err == nil {
					name = m.GetName()
				}
			}
		}
		handled, ret, err := defaultReaction(action)
		if err != nil || !handled {
			return handled, ret, err
		}
		if verb == "delete" {
			if before != nil {
				c.record(verb, gvr, ns, name)
				c.memberChanged()
				c.feed(indexers, before, true)
				c.markStale(Object{Resource: gvr.Resource, Namespace: ns, Name: name})
			}
			return true, ret, nil
		}
		after, gerr := tracker.Get(gvr, ns, name)
		if gerr != nil {
			return true, ret, nil
		}
		if verb != "create" && before != nil && sameObject(before, after) {
			return true, ret, nil // a no-op update is not a write
		}
		c.record(verb, gvr, ns, name)
		if verb == "create" || before == nil {
			c.memberChanged() // the object did not exist before this write
		}
		c.feed(indexers, after, false) // the indexers get copies: after is the caller's
		c.markStale(Object{Resource: gvr.Resource, Namespace: ns, Name: name})
		return true, after, nil
	}
}

func actionName(a clienttesting.Action) string {
	switch x := a.(type) {
	case clienttesting.UpdateActionImpl:
		if m, err := meta.Accessor(x.Object); err == nil {
			return m.GetName()
		}
	case clienttesting.PatchActionImpl:
		return x.Name
	case clienttesting.DeleteActionImpl:
		return x.Name
	case clienttesting.CreateActionImpl:
		if m, err := meta.Accessor(x.Object); err == nil {
			return m.GetName()
		}
	}
	return ""
}

// sameObject compares two stored versions, ignoring what the store itself changes (resourceVersion, managed
// fields). Both are the caller's own copies: before may be changed, after is left as it was.
func sameObject(before, after runtime.Object) bool {
	if m, err := meta.Accessor(before); err == nil {
		m.SetResourceVersion("")
		m.SetManagedFields(nil)
	}
	m, err := meta.Accessor(after)
	if err != nil {
		return equality.Semantic.DeepEqual(before, after)
	}
	rv, fields := m.GetResourceVersion(), m.GetManagedFields()
	m.SetResourceVersion("")
	m.SetManagedFields(nil)
	same := equality.Semantic.DeepEqual(before, after)
	m.SetResourceVersion(rv)
	m.SetManagedFields(fields)
	return same
}

// stampCreate sets what an API server sets on create and the fakes do not: a UID and a creation timestamp.
// UIDs are derived from the object's identity and a serial, so a render is reproducible up to key material.
func stampCreate(o runtime.Object, gvr string, serial int) {
	m, err := meta.Accessor(o)
	if err != nil {
		return
	}
	if m.GetUID() == "" {
		m.SetUID(uidFor(gvr, m.GetNamespace(), m.GetName(), serial))
	}
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		m.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	}
}

// uidFor derives a UUID-shaped UID from an object's identity and a serial.
func uidFor(gvr, ns, name string, serial int) types.UID {
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/%s/%s/%d", gvr, ns, name, serial)))
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
}

func (c *Cluster) record(verb string, gvr schema.GroupVersionResource, ns, name string) {
	res := gvr.Resource
	if gvr.Group != "" {
		res += "." + gvr.Group
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.journal = append(c.journal, Write{Phase: c.phase, Pass: c.pass, Loop: c.current, Verb: verb, Resource: res, Namespace: ns, Name: name})
	c.versions[Object{Resource: res, Namespace: ns, Name: name}] = len(c.journal)
	c.watchVersions[Object{Resource: gvr.Resource, Namespace: ns, Name: name}] = len(c.journal)
}

// touch marks o, a part of an object the journal does not name by itself (OperatorClient.ManagementState), as
// written by the last write recorded.
func (c *Cluster) touch(o Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchVersions[o] = len(c.journal)
}

// Version is what a memo of a loop keys on to know an object did not change: it changes with every write of the
// object (create, update, delete: every write the journal records) and with nothing else; 0 for an object not
// written since the cluster was built (a seed, or absent). Like a resourceVersion, which the fakes do not keep.
// resource is named as in the journal: "secrets", "configmaps", "infrastructures.config.openshift.io".
func (c *Cluster) Version(resource, namespace, name string) int {
	return c.Versions(Object{Resource: resource, Namespace: namespace, Name: name})[0]
}

// memberChanged notes that the last write recorded made an object exist or stop existing.
func (c *Cluster) memberChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.membership = len(c.journal)
}

// Membership is what a memo keys on to know the cluster holds the same objects (by resource, namespace and name)
// as before, whatever their contents: it changes with every write that makes an object of the fakes (kube,
// config, operator, dynamic) exist or stop existing (a create, a delete, or any write of an object that was not
// there), and with nothing else; 0 until the first. Operator clients (OperatorClient) are not objects of the
// fakes.
func (c *Cluster) Membership() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.membership
}

// Journal returns every write so far, in order.
func (c *Cluster) Journal() []Write {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Write(nil), c.journal...)
}

func (c *Cluster) writeCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.journal)
}

func (c *Cluster) setCurrent(phase string, pass int, loop string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.phase, c.pass, c.current, c.exclusive, c.declared = phase, pass, loop, false, nil
}

// declare holds the loop that has the turn, when it is not concurrent, to the objects it declared with Watches.
func (c *Cluster) declare(l Loop) {
	if l.turn != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.declared = l.watch
}

// setExclusive gives the turn to a loop that is not concurrent (runner.go): it runs alone in its turn and may
// write anything, while concurrent loops behind it may already be in flight.
func (c *Cluster) setExclusive(phase string, pass int, loop string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.phase, c.pass, c.current, c.exclusive, c.declared = phase, pass, loop, true, nil
}

// grant gives the turn to a concurrent loop in flight and says whether it is stale: whether a loop ahead of it
// wrote an object it watches after it started.
func (c *Cluster) grant(phase string, pass int, loop string) (stale bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.phase, c.pass, c.current, c.exclusive, c.declared = phase, pass, loop, false, nil
	f := c.flight[loop]
	if f == nil {
		return false
	}
	f.granted = true
	return f.stale
}

// enterFlight and leaveFlight register a concurrent loop while it runs: footprint is what it may write in its
// turn, watch what it reads before its turn (its footprint and its inputs).
func (c *Cluster) enterFlight(loop string, order int, footprint, watch map[Object]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flight == nil {
		c.flight = map[string]*flight{}
	}
	c.flight[loop] = &flight{footprint: footprint, watch: watch, readFrom: map[Object]string{}, order: order}
}

func (c *Cluster) leaveFlight(loop string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.flight, loop)
	if c.current == loop {
		c.current = "" // between turns: nobody may write
	}
}

// checkTurn fails a write while concurrent loops are in flight unless the loop that has the turn may make it: a
// concurrent loop only within its footprint (a write outside it, or one made before the loop's turn, would break
// the fixed order), a loop that is not concurrent anywhere (markStale then makes the loops that read the object
// early run again in their turn).
func (c *Cluster) checkTurn(o Object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.declared != nil && !c.declared[o] {
		return fmt.Errorf("engine: %s writes %s, which it does not declare it watches (loops.Loop.Watches)", c.current, o)
	}
	if len(c.flight) == 0 || c.exclusive {
		return nil
	}
	if f := c.flight[c.current]; f == nil || !f.footprint[o] {
		holder := c.current
		if holder == "" {
			holder = "no loop (between turns)"
		}
		return fmt.Errorf("engine: write of %s while concurrent loops run and %s has the turn: not in its footprint, or made before the writer's turn", o, holder)
	}
	return nil
}

// markStale marks every concurrent loop in flight that has not had its turn and watches o: what it read of o
// before its turn is no longer what it would read in its turn. The reactor calls it once the write reached the
// tracker and the indexers: a loop that enters flight later reads the new object.
func (c *Cluster) markStale(o Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, f := range c.flight {
		if name != c.current && !f.granted && f.watch[o] && (c.current == "" || f.readFrom[o] != c.current) {
			f.stale = true
		}
	}
}

// publish makes the last of writer's kept writes of each object it settles readable through Published.
func (c *Cluster) publish(writer string, pending []pendingWrite, settles map[Object]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	order := 0
	if f := c.flight[writer]; f != nil {
		order = f.order
	}
	for _, w := range pending {
		if !settles[w.obj] || w.sent == nil {
			continue
		}
		if c.published == nil {
			c.published = map[Object]publishedWrite{}
		}
		c.published[w.obj] = publishedWrite{writer: writer, order: order, obj: w.sent}
	}
}

// unpublish drops writer's published writes once its turn made them, or dropped them (abandoned: every loop that
// read one is stale).
func (c *Cluster) unpublish(writer string, abandoned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for o, p := range c.published {
		if p.writer != writer {
			continue
		}
		delete(c.published, o)
		if !abandoned {
			continue
		}
		for _, f := range c.flight {
			if !f.granted && f.readFrom[o] == writer {
				f.stale = true
			}
		}
	}
}

// Published returns a copy of the object a loop ahead keeps for its turn and published (Turn.Settle), for the
// concurrent loop reader in flight, and records that reader read it. A lister that reader reads through must ask
// it first: the object is what the reader would read in its turn.
func (c *Cluster) Published(reader string, o Object) (runtime.Object, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.published[o]
	f := c.flight[reader]
	if !ok || f == nil || f.granted || p.order >= f.order {
		return nil, false // only a loop ahead of the reader, before the reader's turn
	}
	f.readFrom[o] = p.writer
	return p.obj.DeepCopyObject(), true
}

// clearActions drops the actions the fakes record (a deep copy of every call, which nothing reads): kept for a
// whole render, they are live heap every garbage collection walks.
func (c *Cluster) clearActions() {
	c.Kube.ClearActions()
	c.Config.ClearActions()
	c.Operator.ClearActions()
	c.Dynamic.ClearActions()
}

// DynamicResources lists the GVRs the dynamic fake was told about.
func (c *Cluster) DynamicResources() map[schema.GroupVersionResource]string {
	out := map[schema.GroupVersionResource]string{}
	for k, v := range c.dynGVRs {
		out[k] = v
	}
	return out
}

// KubeFactory is the all-namespaces kube informer factory.
func (c *Cluster) KubeFactory() informers.SharedInformerFactory {
	return c.KubeInformers.InformersFor("")
}
