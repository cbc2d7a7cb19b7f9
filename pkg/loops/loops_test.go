package loops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	applyoperatorv1 "github.com/openshift/client-go/operator/applyconfigurations/operator/v1"
	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/configobserver"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

func newTestCluster(t *testing.T) *Cluster {
	t.Helper()
	c, err := NewCluster([]string{"ns-a", "ns-b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cm(ns, name, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": v}}
}

func TestListerSeesWriteAtOnce(t *testing.T) {
	ctx := context.Background()
	c := newTestCluster(t)
	lister := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister()
	all := c.KubeFactory().Core().V1().ConfigMaps().Lister()

	if _, err := c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", "x", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := lister.ConfigMaps("ns-a").Get("x")
	if err != nil {
		t.Fatalf("lister did not see the create: %v", err)
	}
	if got.UID == "" || got.CreationTimestamp.IsZero() {
		t.Errorf("create was not stamped with uid and creationTimestamp: %+v", got.ObjectMeta)
	}
	if _, err := all.ConfigMaps("ns-a").Get("x"); err != nil {
		t.Fatalf("all-namespaces lister did not see the create: %v", err)
	}
	// The ns-b factory must not list ns-a objects.
	if l, _ := c.KubeInformers.InformersFor("ns-b").Core().V1().ConfigMaps().Lister().List(labelsEverything()); len(l) != 0 {
		t.Errorf("ns-b lister lists %d objects of ns-a", len(l))
	}

	got = got.DeepCopy()
	got.Data["k"] = "2"
	if _, err := c.Kube.CoreV1().ConfigMaps("ns-a").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if g, _ := lister.ConfigMaps("ns-a").Get("x"); g.Data["k"] != "2" {
		t.Errorf("lister did not see the update: %v", g.Data)
	}
	if err := c.Kube.CoreV1().ConfigMaps("ns-a").Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := lister.ConfigMaps("ns-a").Get("x"); !apierrors.IsNotFound(err) {
		t.Errorf("lister still sees a deleted object: %v", err)
	}
	if n := len(c.Journal()); n != 3 {
		t.Errorf("journal has %d writes, want 3 (create, update, delete): %v", n, c.Journal())
	}
}

func TestSeedsAreListedAndConfigFakeIsFed(t *testing.T) {
	ctx := context.Background()
	c, err := NewCluster([]string{"ns-a"}, nil, cm("ns-a", "seeded", "v"), &configv1.Network{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister().ConfigMaps("ns-a").Get("seeded"); err != nil {
		t.Errorf("seeded configmap not listed: %v", err)
	}
	netLister := c.ConfigInformers.Config().V1().Networks().Lister()
	if _, err := netLister.Get("cluster"); err != nil {
		t.Errorf("seeded network not listed: %v", err)
	}
	if _, err := c.Config.ConfigV1().APIServers().Create(ctx, &configv1.APIServer{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConfigInformers.Config().V1().APIServers().Lister().Get("cluster"); err != nil {
		t.Errorf("config lister did not see the create: %v", err)
	}
}

func TestNoOpUpdateIsNotAWrite(t *testing.T) {
	ctx := context.Background()
	c := newTestCluster(t)
	o, err := c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", "x", "1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(c.Journal())
	if _, err := c.Kube.CoreV1().ConfigMaps("ns-a").Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(c.Journal()) != n {
		t.Errorf("an update that changed nothing was journaled")
	}
}

func TestDynamicWritesAreJournaled(t *testing.T) {
	ctx := context.Background()
	gvr := serviceMonitorGVR
	c, err := NewCluster(nil, map[schemaGVR]string{gvr: "ServiceMonitorList"})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("monitoring.coreos.com/v1")
	u.SetKind("ServiceMonitor")
	u.SetNamespace("ns-a")
	u.SetName("sm")
	if _, err := c.Dynamic.Resource(gvr).Namespace("ns-a").Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := c.Journal()
	if len(j) != 1 || j[0].Resource != "servicemonitors.monitoring.coreos.com" {
		t.Errorf("journal = %v", j)
	}
}

// counterLoop writes a configmap until it holds the value limit; limit < 0 never settles.
func counterLoop(c *Cluster, name string, limit int) Loop {
	return Loop{Name: name, Sync: func(ctx context.Context) error {
		l := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister()
		cur, err := l.ConfigMaps("ns-a").Get(name)
		if apierrors.IsNotFound(err) {
			_, err = c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", name, "0"), metav1.CreateOptions{})
			return err
		}
		var n int
		fmt.Sscan(cur.Data["k"], &n)
		if limit >= 0 && n >= limit {
			return nil
		}
		next := cur.DeepCopy()
		next.Data["k"] = fmt.Sprint(n + 1)
		_, err = c.Kube.CoreV1().ConfigMaps("ns-a").Update(ctx, next, metav1.UpdateOptions{})
		return err
	}}
}

func TestRunnerReachesFixpoint(t *testing.T) {
	c := newTestCluster(t)
	r := &Runner{Cluster: c, MaxPasses: 10}
	if err := r.Run(context.Background(), Phase{Name: "converge", Loops: []Loop{counterLoop(c, "a", 2), counterLoop(c, "b", 0)}}); err != nil {
		t.Fatal(err)
	}
	res := r.Result()
	// pass 1: create a, create b; pass 2: a=1; pass 3: a=2; pass 4: nothing.
	if got := res.TotalPasses(); got != 4 {
		t.Errorf("passes = %d, want 4\n%s", got, res.Trace())
	}
	last := res.Passes[len(res.Passes)-1]
	if last.Writes != 0 || last.Errors != 0 {
		t.Errorf("last pass %+v is not a fixpoint", last)
	}
	if !strings.Contains(res.Trace(), "(fixpoint)") || !strings.Contains(res.Trace(), "converge pass 1  a") {
		t.Errorf("trace does not show who wrote what and the fixpoint:\n%s", res.Trace())
	}
}

func TestRunnerReportsLoopThatNeverSettles(t *testing.T) {
	c := newTestCluster(t)
	r := &Runner{Cluster: c, MaxPasses: 5}
	failing := Loop{Name: "sometimes-fails", Sync: func(context.Context) error { return errors.New("still waiting") }}
	err := r.Run(context.Background(), Phase{Name: "converge", Loops: []Loop{counterLoop(c, "settles", 1), counterLoop(c, "spinner", -1), failing}})
	var nc *NotConvergedError
	if !errors.As(err, &nc) {
		t.Fatalf("err = %v, want NotConvergedError", err)
	}
	if nc.Passes != 5 || len(nc.Writing) != 1 || nc.Writing[0] != "spinner" {
		t.Errorf("got %+v, want the bound hit with only 'spinner' still writing", nc)
	}
	if nc.Errors["sometimes-fails"] != "still waiting" {
		t.Errorf("last errors = %v", nc.Errors)
	}
	if !strings.Contains(err.Error(), "spinner") || !strings.Contains(err.Error(), "still waiting") {
		t.Errorf("message does not name the loop and its error: %v", err)
	}
}

func TestRunnerStopsWhenFailingLoopsMakeNoProgress(t *testing.T) {
	c := newTestCluster(t)
	r := &Runner{Cluster: c, MaxPasses: 10}
	stuck := Loop{Name: "stuck", Sync: func(context.Context) error { return errors.New("input missing") }}
	err := r.Run(context.Background(), Phase{Name: "converge", Loops: []Loop{stuck}})
	var nc *NotConvergedError
	if !errors.As(err, &nc) || nc.Passes != 1 || nc.Errors["stuck"] != "input missing" {
		t.Fatalf("err = %v", err)
	}
}

func TestRunnerTurnsPanicIntoError(t *testing.T) {
	c := newTestCluster(t)
	r := &Runner{Cluster: c, MaxPasses: 3}
	boom := Loop{Name: "boom", Sync: func(context.Context) error { panic("bad") }}
	err := r.Run(context.Background(), Phase{Name: "converge", Loops: []Loop{boom}})
	if err == nil || !strings.Contains(err.Error(), "boom: panic: bad") {
		t.Fatalf("err = %v", err)
	}
}

// TestRunnerRejectsDuplicateLoopNames: a phase repeating a loop name (or with an unnamed loop) fails before any
// loop runs, with an error naming the phase, the name and the loops' positions.
func TestRunnerRejectsDuplicateLoopNames(t *testing.T) {
	c := newTestCluster(t)
	r := &Runner{Cluster: c, MaxPasses: 3}
	ran := 0
	count := func(name string) Loop {
		return Loop{Name: name, Sync: func(context.Context) error { ran++; return nil }}
	}
	err := r.Run(context.Background(), Phase{Name: "converge", Loops: []Loop{count("a"), count("b"), count("a")}})
	if err == nil || !strings.Contains(err.Error(), `phase converge: duplicate loop names: "a" (loops 0 and 2)`) {
		t.Errorf("duplicate names: err = %v", err)
	}
	err = r.Run(context.Background(), Phase{Name: "revision", Loops: []Loop{count("a"), count("")}})
	if err == nil || !strings.Contains(err.Error(), "phase revision: loop 1 has no name") {
		t.Errorf("unnamed loop: err = %v", err)
	}
	if ran != 0 {
		t.Errorf("%d loops ran in rejected phases", ran)
	}
	if len(c.Journal()) != 0 || len(r.Result().Passes) != 0 {
		t.Errorf("a rejected phase left passes %v and writes %v", r.Result().Passes, c.Journal())
	}
	// The same names in different phases are fine.
	for _, ph := range []string{"converge", "revision"} {
		if err := r.Run(context.Background(), Phase{Name: ph, Loops: []Loop{count("a"), count("b")}}); err != nil {
			t.Errorf("phase %s: %v", ph, err)
		}
	}
	if ran != 4 {
		t.Errorf("%d syncs, want 4", ran)
	}
}

func TestLoopName(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{LoopName("target-config", "etcd"), "target-config/etcd"},
		{LoopName("target-config", "etcd", "scripts"), "target-config/etcd/scripts"},
		{LoopName("revision", "kube-apiserver", "installer"), "revision/kube-apiserver/installer"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
	for _, bad := range [][]string{{"", "etcd"}, {"kind", ""}, {"kind", "etcd", ""}, {"kind", "a/b"}, {"kind", "etcd", "x", "y"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("LoopName%q did not panic", bad)
				}
			}()
			LoopName(bad[0], bad[1], bad[2:]...)
		}()
	}
}

func TestOperatorClientSemantics(t *testing.T) {
	ctx := context.Background()
	c := newTestCluster(t)
	oc := c.NewOperatorClient("KubeAPIServer", "kubeapiservers",
		operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
		operatorv1.StaticPodOperatorStatus{NodeStatuses: []operatorv1.NodeStatus{{NodeName: "n1"}}})

	// Observed config is stored with its raw bytes, so the config observer settles.
	spec, _, rv, _ := oc.GetOperatorState()
	spec.ObservedConfig.Object = &unstructured.Unstructured{Object: map[string]interface{}{"a": "b"}}
	if _, _, err := oc.UpdateOperatorSpec(ctx, rv, spec); err != nil {
		t.Fatal(err)
	}
	spec, _, rv2, _ := oc.GetOperatorState()
	if string(spec.ObservedConfig.Raw) != `{"a":"b"}` || rv2 == rv {
		t.Errorf("observedConfig raw = %q rv %s→%s", spec.ObservedConfig.Raw, rv, rv2)
	}
	// Stale resourceVersion is a conflict.
	if _, _, err := oc.UpdateOperatorSpec(ctx, rv, spec); !apierrors.IsConflict(err) {
		t.Errorf("stale update: err = %v, want conflict", err)
	}
	// Same content again: no write, no new resourceVersion.
	n := len(c.Journal())
	if _, _, err := oc.UpdateOperatorSpec(ctx, rv2, spec); err != nil {
		t.Fatal(err)
	}
	if _, _, rv3, _ := oc.GetOperatorState(); rv3 != rv2 || len(c.Journal()) != n {
		t.Errorf("no-op spec update bumped rv or was journaled")
	}

	// Status apply keeps node statuses and merges conditions by type.
	if err := oc.ApplyOperatorStatus(ctx, "x", applyoperatorv1.OperatorStatus().WithLatestAvailableRevision(1).
		WithConditions(applyoperatorv1.OperatorCondition().WithType("FooDegraded").WithStatus(operatorv1.ConditionFalse))); err != nil {
		t.Fatal(err)
	}
	if err := oc.ApplyOperatorStatus(ctx, "y", applyoperatorv1.OperatorStatus().
		WithConditions(applyoperatorv1.OperatorCondition().WithType("BarDegraded").WithStatus(operatorv1.ConditionTrue).WithMessage("broken"))); err != nil {
		t.Fatal(err)
	}
	_, st, _, _ := oc.GetStaticPodOperatorState()
	if len(st.NodeStatuses) != 1 || st.LatestAvailableRevision != 1 || len(st.Conditions) != 2 {
		t.Fatalf("status after applies = %+v", st)
	}
	if st.Conditions[0].LastTransitionTime.IsZero() {
		t.Errorf("condition without lastTransitionTime")
	}
	if err := oc.ApplyStaticPodOperatorStatus(ctx, "z", applyoperatorv1.StaticPodOperatorStatus().
		WithNodeStatuses(applyoperatorv1.NodeStatus().WithNodeName("n1").WithCurrentRevision(1))); err != nil {
		t.Fatal(err)
	}
	_, st, _, _ = oc.GetStaticPodOperatorState()
	if len(st.NodeStatuses) != 1 || st.NodeStatuses[0].CurrentRevision != 1 {
		t.Errorf("node status merge = %+v", st.NodeStatuses)
	}

	// library-go's helper path (UpdateStaticPodStatus → UpdateStaticPodOperatorStatus) works too.
	if _, _, err := v1helpers.UpdateStaticPodStatus(ctx, oc, v1helpers.UpdateStaticPodConditionFn(operatorv1.OperatorCondition{Type: "BazAvailable", Status: operatorv1.ConditionTrue})); err != nil {
		t.Fatal(err)
	}

	r := &Runner{Cluster: c}
	err := r.CheckDegraded()
	if err == nil || !strings.Contains(err.Error(), "BarDegraded=True") || strings.Contains(err.Error(), "FooDegraded") {
		t.Errorf("CheckDegraded = %v", err)
	}
}

// TestRealLibraryGoLoopsSettle runs two real library-go loops (resource sync, and a config observer writing the
// operator's observed config) through the runner: they must settle, which is what the reactor-fed listers and
// the in-memory operator client are for.
func TestRealLibraryGoLoopsSettle(t *testing.T) {
	ctx := context.Background()
	c := newTestCluster(t)
	oc := c.NewOperatorClient("KubeAPIServer", "kubeapiservers",
		operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
		operatorv1.StaticPodOperatorStatus{})
	rec := events.NewInMemoryRecorder("test", clockReal())
	sync := resourcesynccontroller.NewResourceSyncController("test", oc, c.KubeInformers, c.Kube.CoreV1(), c.Kube.CoreV1(), rec)
	if err := sync.SyncConfigMap(resourcesynccontroller.ResourceLocation{Namespace: "ns-b", Name: "copy"}, resourcesynccontroller.ResourceLocation{Namespace: "ns-a", Name: "src"}); err != nil {
		t.Fatal(err)
	}
	lister := c.KubeInformers.InformersFor("ns-b").Core().V1().ConfigMaps().Lister()
	observer := configobserver.NewConfigObserver("test", oc, rec, testListers{sync: sync},
		nil,
		func(genericListers configobserver.Listers, _ events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
			got, err := lister.ConfigMaps("ns-b").Get("copy")
			if err != nil {
				return existing, nil
			}
			return map[string]interface{}{"copied": got.Data["k"]}, nil
		})
	if _, err := c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", "src", "v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Cluster: c}
	loops := []Loop{ControllerLoop("observe", observer, rec), ControllerLoop("sync", sync, rec)}
	defer func() {
		for _, l := range loops {
			l.Close()
		}
	}()
	if err := r.Run(ctx, Phase{Name: "converge", Loops: loops}); err != nil {
		t.Fatalf("%v\n%s", err, r.Result().Trace())
	}
	spec, _, _, _ := oc.GetOperatorState()
	if !strings.Contains(string(spec.ObservedConfig.Raw), `"copied":"v1"`) {
		t.Errorf("observed config = %s\n%s", spec.ObservedConfig.Raw, r.Result().Trace())
	}
	if err := r.CheckDegraded(); err != nil {
		t.Error(err)
	}
}

type testListers struct {
	sync resourcesynccontroller.ResourceSyncer
}

func (l testListers) ResourceSyncer() resourcesynccontroller.ResourceSyncer { return l.sync }
func (l testListers) PreRunHasSynced() []cache.InformerSynced               { return nil }

type schemaGVR = schema.GroupVersionResource

var serviceMonitorGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}

func labelsEverything() labels.Selector { return labels.Everything() }

func clockReal() clock.PassiveClock { return clock.RealClock{} }

// TestWritesShareNothingWithTheCaller: the object a caller passes to a write is left as it was (the stamps go
// on the stored object), and the object a write returns is the caller's: changing it changes neither the store
// nor what the listers hold. Comparing an update with the stored object ignores the resourceVersion without
// losing it: the stored object keeps the one the update sent, and an update changing nothing else is no write.
func TestWritesShareNothingWithTheCaller(t *testing.T) {
	ctx := context.Background()
	c := newTestCluster(t)
	client := c.Kube.CoreV1().ConfigMaps("ns-a")
	lister := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister().ConfigMaps("ns-a")
	all := c.KubeFactory().Core().V1().ConfigMaps().Lister().ConfigMaps("ns-a")
	sent := cm("ns-a", "x", "1")
	created, err := client.Create(ctx, sent, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sent.UID != "" || !sent.CreationTimestamp.IsZero() || created.UID == "" {
		t.Fatalf("create stamped the caller's object (%q) or not the stored one (%q)", sent.UID, created.UID)
	}
	created.Data["k"] = "changed by the caller"
	upd := created.DeepCopy()
	upd.Data["k"] = "2"
	upd.ResourceVersion = "7"
	updated, err := client.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ResourceVersion != "7" {
		t.Errorf("the updated object has resourceVersion %q, want the one sent", updated.ResourceVersion)
	}
	updated.Data["k"] = "changed by the caller"
	for name, get := range map[string]func(string) (*corev1.ConfigMap, error){"namespace lister": lister.Get, "all-namespaces lister": all.Get,
		"client": func(n string) (*corev1.ConfigMap, error) { return client.Get(ctx, n, metav1.GetOptions{}) }} {
		if got, err := get("x"); err != nil || got.Data["k"] != "2" {
			t.Errorf("%s holds %v (%v), want the update's data", name, got, err)
		}
	}
	stored, _ := client.Get(ctx, "x", metav1.GetOptions{})
	noop := stored.DeepCopy()
	noop.ResourceVersion = "8"
	n := len(c.Journal())
	if _, err := client.Update(ctx, noop, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(c.Journal()) != n {
		t.Errorf("an update changing only the resourceVersion was journaled")
	}
}

// syncerFunc is a Syncer made of a function.
type syncerFunc func(ctx context.Context, syncCtx factory.SyncContext) error

func (f syncerFunc) Sync(ctx context.Context, syncCtx factory.SyncContext) error {
	return f(ctx, syncCtx)
}

// TestControllerLoopSyncContext: the SyncContext a ControllerLoop hands its controller is the one pass after pass,
// has factory.NewSyncContext's empty queue key, a working queue when asked for one, and closes whether or not the
// queue was made.
func TestControllerLoopSyncContext(t *testing.T) {
	for _, useQueue := range []bool{false, true} {
		var seen []factory.SyncContext
		l := ControllerLoop("ctrl", syncerFunc(func(_ context.Context, sc factory.SyncContext) error {
			seen = append(seen, sc)
			if sc.QueueKey() != "" || sc.Recorder() == nil {
				t.Errorf("queue key %q, recorder %v", sc.QueueKey(), sc.Recorder())
			}
			if useQueue {
				sc.Queue().Add("key")
				if sc.Queue().Len() != 1 {
					t.Errorf("the queue holds %d keys after one add", sc.Queue().Len())
				}
				sc.Queue().Forget("key")
			}
			return nil
		}), events.NewInMemoryRecorder("test", clockReal()))
		for i := 0; i < 2; i++ {
			if err := l.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if len(seen) != 2 || seen[0] != seen[1] {
			t.Errorf("the sync context changed between passes")
		}
		l.Close()
		if useQueue && !seen[0].Queue().ShuttingDown() {
			t.Errorf("Close left the queue running")
		}
	}
}
