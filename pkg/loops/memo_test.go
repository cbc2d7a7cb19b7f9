package loops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"runtime/pprof"
	"sync"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	applyoperatorv1 "github.com/openshift/client-go/operator/applyconfigurations/operator/v1"
	"github.com/openshift/library-go/pkg/apiserver/jsonpatch"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// roundTripEqual is how commit decides a write changes nothing, without the cached JSON: the JSON of the round
// tripped new spec and status against the JSON of the stored ones.
func roundTripEqual(o *OperatorClient, spec *operatorv1.StaticPodOperatorSpec, status *operatorv1.StaticPodOperatorStatus) bool {
	var ns operatorv1.StaticPodOperatorSpec
	var nst operatorv1.StaticPodOperatorStatus
	roundTrip(spec, &ns)
	roundTrip(status, &nst)
	return jsonEqual(&ns, &o.spec) && jsonEqual(&nst, &o.status)
}

// unchanged is what commit finds without a round trip: both sides are the stored ones (sameAsStored).
func unchanged(o *OperatorClient, spec *operatorv1.StaticPodOperatorSpec, status *operatorv1.StaticPodOperatorStatus) bool {
	_, specSame := sameAsStored(spec, &o.spec, o.specJSON)
	_, statusSame := sameAsStored(status, &o.status, o.statusJSON)
	return specSame && statusSame
}

// checkCache fails unless the cached JSON is the JSON of what is stored.
func checkCache(t *testing.T, o *OperatorClient, step string, unstableObjects bool) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	spec, _ := json.Marshal(&o.spec)
	status, _ := json.Marshal(&o.status)
	if o.specJSON == nil || o.statusJSON == nil {
		t.Fatalf("%s: no cached JSON (spec %v, status %v)", step, o.specJSON != nil, o.statusJSON != nil)
	}
	if !bytes.Equal(spec, o.specJSON) || !bytes.Equal(status, o.statusJSON) {
		t.Fatalf("%s: cached JSON is not the stored spec and status", step)
	}
	for _, c := range []struct {
		m    map[string]interface{}
		json []byte
	}{{o.specObject(), spec}, {o.statusObject(), status}} {
		var want map[string]interface{}
		_ = json.Unmarshal(c.json, &want)
		if c.m == nil && !unstableObjects {
			t.Fatalf("%s: no cached object", step)
		}
		if c.m != nil && !reflect.DeepEqual(c.m, want) {
			t.Fatalf("%s: cached object is not the stored JSON", step)
		}
	}
}

// TestOperatorClientUnchangedAgreesWithRoundTrip: whenever the cached-JSON check says a write changes nothing,
// the round trip commit made before says so too, and it finds every change, over the writes the loops make
// (same values again, changed ones, observed config with differently spaced raw bytes, conditions, node
// statuses, a restored state).
func TestOperatorClientUnchangedAgreesWithRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := newTestCluster(t)
	oc := c.NewOperatorClient("KubeAPIServer", "kubeapiservers",
		operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
		operatorv1.StaticPodOperatorStatus{NodeStatuses: []operatorv1.NodeStatus{{NodeName: "n1"}}})
	checkCache(t, oc, "new", false)

	candidates := func() []struct {
		name   string
		spec   *operatorv1.StaticPodOperatorSpec
		status *operatorv1.StaticPodOperatorStatus
	} {
		spec, status, _, _ := oc.GetStaticPodOperatorState()
		spaced := spec.DeepCopy()
		if len(spaced.ObservedConfig.Raw) > 0 {
			var v interface{}
			_ = json.Unmarshal(spaced.ObservedConfig.Raw, &v)
			spaced.ObservedConfig.Raw, _ = json.MarshalIndent(v, "", "   ")
		}
		logLevel := spec.DeepCopy()
		logLevel.LogLevel = operatorv1.Debug
		rev := status.DeepCopy()
		rev.LatestAvailableRevision++
		node := status.DeepCopy()
		node.NodeStatuses = append(node.NodeStatuses, operatorv1.NodeStatus{NodeName: "n2"})
		cond := status.DeepCopy()
		for i := range cond.Conditions {
			cond.Conditions[i].Message += "!"
		}
		return []struct {
			name   string
			spec   *operatorv1.StaticPodOperatorSpec
			status *operatorv1.StaticPodOperatorStatus
		}{
			{"same", spec, status},
			{"spaced raw", spaced, status},
			{"log level", logLevel, status},
			{"revision", spec, rev},
			{"node", spec, node},
			{"condition message", spec, cond},
		}
	}
	unstable := false
	check := func(step string) {
		t.Helper()
		checkCache(t, oc, step, unstable)
		for _, cand := range candidates() {
			oc.mu.Lock()
			fast, slow := unchanged(oc, cand.spec, cand.status), roundTripEqual(oc, cand.spec, cand.status)
			oc.mu.Unlock()
			if fast && !slow {
				t.Errorf("%s, %s: unchanged says no change, the round trip finds one", step, cand.name)
			}
			if fast != slow && cand.name != "spaced raw" {
				t.Errorf("%s, %s: unchanged = %v, round trip = %v", step, cand.name, fast, slow)
			}
		}
	}
	check("new")

	spec, _, rv, _ := oc.GetOperatorState()
	spec.ObservedConfig = runtime.RawExtension{Raw: []byte(`{"a": {"c": null}, "b": [1, 2.5, "x"]}`)}
	if _, _, err := oc.UpdateOperatorSpec(ctx, rv, spec); err != nil {
		t.Fatal(err)
	}
	check("observed config")

	cond := func(typ string, s operatorv1.ConditionStatus) *applyoperatorv1.OperatorStatusApplyConfiguration {
		return applyoperatorv1.OperatorStatus().WithConditions(applyoperatorv1.OperatorCondition().WithType(typ).WithStatus(s))
	}
	for i, a := range []*applyoperatorv1.OperatorStatusApplyConfiguration{
		cond("FooDegraded", operatorv1.ConditionFalse), cond("FooDegraded", operatorv1.ConditionFalse),
		cond("BarAvailable", operatorv1.ConditionTrue), cond("FooDegraded", operatorv1.ConditionTrue),
		cond("FooDegraded", operatorv1.ConditionTrue),
	} {
		n := len(c.Journal())
		_, before, _, _ := oc.GetStaticPodOperatorState()
		if err := oc.ApplyOperatorStatus(ctx, "m", a); err != nil {
			t.Fatal(err)
		}
		_, after, _, _ := oc.GetStaticPodOperatorState()
		b1, _ := json.Marshal(before)
		b2, _ := json.Marshal(after)
		if wrote := len(c.Journal()) > n; wrote != !bytes.Equal(b1, b2) {
			t.Errorf("apply %d: journaled %v, status changed %v", i, wrote, !bytes.Equal(b1, b2))
		}
		check("apply")
	}
	if err := oc.ApplyStaticPodOperatorStatus(ctx, "m", applyoperatorv1.StaticPodOperatorStatus().
		WithNodeStatuses(applyoperatorv1.NodeStatus().WithNodeName("n1").WithCurrentRevision(3))); err != nil {
		t.Fatal(err)
	}
	check("node status")
	if err := oc.ApplyOperatorSpec(ctx, "m", applyoperatorv1.OperatorSpec().WithLogLevel(operatorv1.Trace)); err != nil {
		t.Fatal(err)
	}
	check("spec apply")
	p := jsonpatch.New().WithTest("/status/nodeStatuses/0/nodeName", "n1")
	n := len(c.Journal())
	if err := oc.PatchStaticOperatorStatus(ctx, p); err != nil {
		t.Fatal(err)
	}
	if len(c.Journal()) != n {
		t.Errorf("a patch that changed nothing was journaled")
	}
	check("patch")

	// Raw bytes whose keys are not sorted do not survive the merge into a generic object: apply merges afresh.
	spec, _, rv, _ = oc.GetOperatorState()
	spec.ObservedConfig = runtime.RawExtension{Raw: []byte(`{"b": 1, "a": 2}`)}
	if _, _, err := oc.UpdateOperatorSpec(ctx, rv, spec); err != nil {
		t.Fatal(err)
	}
	if oc.specObject() != nil {
		t.Errorf("a spec whose observed config is not sorted has a cached object")
	}
	unstable = true
	check("unsorted observed config")
	if err := oc.ApplyOperatorSpec(ctx, "m", applyoperatorv1.OperatorSpec().WithLogLevel(operatorv1.Trace)); err != nil {
		t.Fatal(err)
	}
	check("spec apply, unsorted")
	unstable = false
	spec, _, rv, _ = oc.GetOperatorState()
	spec.ObservedConfig = runtime.RawExtension{Raw: []byte(`{"a":2,"b":1}`)}
	if _, _, err := oc.UpdateOperatorSpec(ctx, rv, spec); err != nil {
		t.Fatal(err)
	}
	check("sorted again")

	saved, err := oc.SaveState()
	if err != nil {
		t.Fatal(err)
	}
	other := c.NewOperatorClient("KubeScheduler", "kubeschedulers", operatorv1.StaticPodOperatorSpec{}, operatorv1.StaticPodOperatorStatus{})
	if err := other.RestoreState(saved); err != nil {
		t.Fatal(err)
	}
	oc = other
	check("restored")
	n = len(c.Journal())
	if err := oc.ApplyOperatorStatus(ctx, "m", cond("FooDegraded", operatorv1.ConditionTrue)); err != nil {
		t.Fatal(err)
	}
	if len(c.Journal()) != n {
		t.Errorf("re-applying a restored condition was journaled")
	}
}

// TestVersionChangesWithEveryWrite: an object's version is 0 until it is written, changes with every create,
// update and delete, and not with an update that changes nothing or with writes of other objects.
func TestVersionChangesWithEveryWrite(t *testing.T) {
	ctx := context.Background()
	c, err := NewCluster([]string{"ns-a"}, nil, cm("ns-a", "seed", "1"))
	if err != nil {
		t.Fatal(err)
	}
	v := func(name string) int { return c.Version("configmaps", "ns-a", name) }
	if v("seed") != 0 || v("x") != 0 {
		t.Fatalf("versions before any write: seed %d, x %d", v("seed"), v("x"))
	}
	cms := c.Kube.CoreV1().ConfigMaps("ns-a")
	o, err := cms.Create(ctx, cm("ns-a", "x", "1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := v("x")
	if created == 0 || v("seed") != 0 {
		t.Fatalf("after create: x %d, seed %d", created, v("seed"))
	}
	if _, err := cms.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v("x") != created {
		t.Errorf("a no-op update changed the version")
	}
	o.Data["k"] = "2"
	if _, err := cms.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	updated := v("x")
	if updated == created {
		t.Errorf("an update did not change the version")
	}
	s, _ := c.Kube.CoreV1().ConfigMaps("ns-a").Get(ctx, "seed", metav1.GetOptions{})
	s.Data["k"] = "2"
	if _, err := cms.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v("seed") == 0 || v("x") != updated {
		t.Errorf("after updating the seed: seed %d, x %d (was %d)", v("seed"), v("x"), updated)
	}
	if err := cms.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if v("x") == updated {
		t.Errorf("a delete did not change the version")
	}
	if got := c.Version("secrets", "ns-a", "x"); got != 0 {
		t.Errorf("a secret of the configmap's name has version %d", got)
	}
}

// TestMembershipChangesWithCreateAndDelete: Membership is 0 until an object is created, changes with every create
// and delete, in every fake, and not with updates.
func TestMembershipChangesWithCreateAndDelete(t *testing.T) {
	ctx := context.Background()
	c, err := NewCluster([]string{"ns-a"}, nil, cm("ns-a", "seed", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Membership() != 0 {
		t.Fatalf("membership before any write: %d", c.Membership())
	}
	cms := c.Kube.CoreV1().ConfigMaps("ns-a")
	last := 0
	step := func(what string, wantChange bool) {
		t.Helper()
		if changed := c.Membership() != last; changed != wantChange {
			t.Fatalf("%s: membership changed = %v, want %v", what, changed, wantChange)
		}
		last = c.Membership()
	}
	o, err := cms.Create(ctx, cm("ns-a", "x", "1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	step("create", true)
	o.Data["k"] = "2"
	if _, err := cms.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	step("update", false)
	if _, err := cms.Create(ctx, cm("ns-a", "x", "1"), metav1.CreateOptions{}); err == nil {
		t.Fatal("a second create of x succeeded")
	}
	step("failed create", false)
	if err := cms.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	step("delete", true)
	if err := cms.Delete(ctx, "x", metav1.DeleteOptions{}); err == nil {
		t.Fatal("a second delete of x succeeded")
	}
	step("failed delete", false)
	if err := cms.Delete(ctx, "seed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	step("delete of a seed", true)
	if _, err := c.Operator.OperatorV1().KubeAPIServers().Create(ctx, &operatorv1.KubeAPIServer{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	step("create in the operator fake", true)
}

// TestMemo: Same holds only for the versions kept, until they are forgotten.
func TestMemo(t *testing.T) {
	var m Memo
	if m.Same(nil) || m.Same([]int{0}) {
		t.Fatalf("the zero Memo holds versions")
	}
	m.Keep([]int{0, 3})
	if !m.Same([]int{0, 3}) || m.Same([]int{0, 4}) || m.Same([]int{0}) || m.Same([]int{0, 3, 1}) {
		t.Errorf("Same after Keep([0 3]) is wrong")
	}
	m.Forget()
	if m.Same([]int{0, 3}) {
		t.Errorf("Same after Forget")
	}
}

// TestRunnerDropsRecordedActions: the fakes' record of every call does not outlive a pass.
func TestRunnerDropsRecordedActions(t *testing.T) {
	c := newTestCluster(t)
	n := 0
	loop := Loop{Name: "writer", Sync: func(ctx context.Context) error {
		n++
		_, err := c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", fmt.Sprintf("x%d", n), "1"), metav1.CreateOptions{})
		if n > 2 {
			return nil
		}
		return err
	}}
	r := &Runner{Cluster: c, MaxPasses: 2}
	_ = r.Run(context.Background(), Phase{Name: "p", Loops: []Loop{loop}})
	if n != 2 {
		t.Fatalf("ran %d passes, want 2", n)
	}
	if got := len(c.Kube.Actions()); got != 0 {
		t.Errorf("%d actions recorded after the passes", got)
	}
	if len(c.Journal()) != 2 {
		t.Errorf("journal holds %d writes, want 2", len(c.Journal()))
	}
}

// TestLoopsRunWithProfilerLabels: a loop's sync runs with the profiler labels phase, pass and loop, in both
// runner modes and for concurrent loops, so that CPU profiles split by loop and pass.
func TestLoopsRunWithProfilerLabels(t *testing.T) {
	for _, par := range []int{1, 2} {
		c := newTestCluster(t)
		got := map[string]string{}
		var mu sync.Mutex
		record := func(name string) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				phase, _ := pprof.Label(ctx, "phase")
				pass, _ := pprof.Label(ctx, "pass")
				loop, _ := pprof.Label(ctx, "loop")
				mu.Lock()
				defer mu.Unlock()
				got[name+"@"+pass] = phase + "/" + pass + "/" + loop
				return nil
			}
		}
		conc := Loop{Name: "conc", Sync: record("conc")}.Concurrent(NewTurn(), ConfigMap("ns-a", "x"))
		r := &Runner{Cluster: c, MaxPasses: 2, Parallelism: par}
		if err := r.Run(context.Background(), Phase{Name: "p", Loops: []Loop{{Name: "alone", Sync: record("alone")}, conc}}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"alone@1": "p/1/alone", "conc@1": "p/1/conc"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parallelism %d: labels %v, want %v", par, got, want)
		}
	}
}

// TestOperatorClientCommitStoresRoundTrip checks commit, which round-trips only the side a write passes anew,
// against the rule it stands for (every write stores the JSON round trip of spec and status; a write whose round
// trips have the JSON of what is stored changes nothing; the resourceVersion and the journal move with every
// change, the generation with every change of the spec), over random sequences of updates, applies and patches
// that change the spec, the status, both or neither.
func TestOperatorClientCommitStoresRoundTrip(t *testing.T) {
	ctx := context.Background()
	raws := [][]byte{nil, []byte(`{"a":1}`), []byte(`{"a": 1}`), []byte(`{"b":{"c":[1,2]},"a":"x"}`), []byte(`{"a":2.5}`)}
	levels := []operatorv1.LogLevel{"", operatorv1.Normal, operatorv1.Debug}
	conds := []operatorv1.ConditionStatus{operatorv1.ConditionTrue, operatorv1.ConditionFalse}
	for seed := int64(0); seed < 40; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		c := newTestCluster(t)
		oc := c.NewOperatorClient("KubeAPIServer", "kubeapiservers",
			operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
			operatorv1.StaticPodOperatorStatus{NodeStatuses: []operatorv1.NodeStatus{{NodeName: "n1"}}})
		for step := 0; step < 30; step++ {
			spec, status, rv, _ := oc.GetStaticPodOperatorState()
			oc.mu.Lock()
			beforeSpec, beforeStatus, gen := marshalOrNil(&oc.spec), marshalOrNil(&oc.status), oc.meta.Generation
			oc.mu.Unlock()
			journal := len(c.Journal())
			var wantSpec, wantStatus []byte // the round trip of what an update passes; nil: not an update
			op := rnd.Intn(6)
			if rnd.Intn(2) == 0 {
				spec.ObservedConfig = runtime.RawExtension{Raw: raws[rnd.Intn(len(raws))]}
			}
			if rnd.Intn(2) == 0 {
				spec.LogLevel = levels[rnd.Intn(len(levels))]
			}
			if rnd.Intn(2) == 0 {
				status.LatestAvailableRevision = int32(rnd.Intn(3))
			}
			if rnd.Intn(2) == 0 {
				status.Conditions = []operatorv1.OperatorCondition{{Type: "FooDegraded", Status: conds[rnd.Intn(2)]}}
			}
			var err error
			switch op {
			case 0:
				_, _, err = oc.UpdateStaticPodOperatorSpec(ctx, rv, spec)
				wantSpec = roundTripJSON(spec, &operatorv1.StaticPodOperatorSpec{})
			case 1:
				_, err = oc.UpdateStaticPodOperatorStatus(ctx, rv, status)
				wantStatus = roundTripJSON(status, &operatorv1.StaticPodOperatorStatus{})
			case 2:
				_, _, err = oc.UpdateOperatorSpec(ctx, rv, &spec.OperatorSpec)
				wantSpec = roundTripJSON(spec, &operatorv1.StaticPodOperatorSpec{})
			case 3:
				_, err = oc.UpdateOperatorStatus(ctx, rv, &status.OperatorStatus)
				wantStatus = roundTripJSON(status, &operatorv1.StaticPodOperatorStatus{})
			case 4:
				err = oc.ApplyOperatorStatus(ctx, "m", applyoperatorv1.OperatorStatus().WithConditions(
					applyoperatorv1.OperatorCondition().WithType("BarAvailable").WithStatus(conds[rnd.Intn(2)])))
			case 5:
				err = oc.PatchStaticOperatorStatus(ctx, jsonpatch.New().WithTest("/status/nodeStatuses/0/nodeName", "n1"))
			}
			if err != nil {
				t.Fatalf("seed %d step %d op %d: %v", seed, step, op, err)
			}
			oc.mu.Lock()
			afterSpec, afterStatus, afterGen := marshalOrNil(&oc.spec), marshalOrNil(&oc.status), oc.meta.Generation
			oc.mu.Unlock()
			where := fmt.Sprintf("seed %d step %d op %d", seed, step, op)
			if wantSpec != nil && !bytes.Equal(afterSpec, wantSpec) {
				t.Fatalf("%s: stored spec %s, want the round trip %s", where, afterSpec, wantSpec)
			}
			if wantStatus != nil && !bytes.Equal(afterStatus, wantStatus) {
				t.Fatalf("%s: stored status %s, want the round trip %s", where, afterStatus, wantStatus)
			}
			specChanged, statusChanged := !bytes.Equal(beforeSpec, afterSpec), !bytes.Equal(beforeStatus, afterStatus)
			if (wantSpec == nil && op != 2 && op != 0 && specChanged) || (wantStatus == nil && (op == 0 || op == 2) && statusChanged) {
				t.Fatalf("%s: a write of one side changed the other", where)
			}
			if wrote := len(c.Journal()) > journal; wrote != (specChanged || statusChanged) {
				t.Fatalf("%s: journaled %v, changed spec %v status %v", where, wrote, specChanged, statusChanged)
			}
			if (afterGen != gen) != specChanged {
				t.Fatalf("%s: generation %d -> %d, spec changed %v", where, gen, afterGen, specChanged)
			}
			checkCache(t, oc, where, true)
		}
	}
}

// roundTripJSON is the JSON of v's JSON round trip into out (a zero value).
func roundTripJSON(v, out interface{}) []byte {
	roundTrip(v, out)
	return marshalOrNil(out)
}
