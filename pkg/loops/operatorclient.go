package loops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	applyoperatorv1 "github.com/openshift/client-go/operator/applyconfigurations/operator/v1"
	"github.com/openshift/library-go/pkg/apiserver/jsonpatch"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	jsonpatchlib "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// OperatorClient is an in-memory v1helpers.StaticPodOperatorClient for one operator resource
// (e.g. operator.openshift.io/v1 KubeAPIServer "cluster"). library-go's fakes panic on spec updates, keep the
// observed config without its raw bytes (so observers never settle) and drop node statuses on apply; this one
// behaves like the API server for what the loops use:
//   - every write is JSON round-tripped, so RawExtension.Raw is always filled;
//   - resourceVersion is checked on updates and bumped only on real changes;
//   - applies merge: conditions by type (keeping lastTransitionTime when the status is unchanged), node statuses
//     by node name, generations by group/resource/namespace/name, scalars when set;
//   - every real change is recorded in the cluster journal like any other write.
type OperatorClient struct {
	cluster  *Cluster
	GVK      schema.GroupVersionKind
	Resource string // plural, e.g. "kubeapiservers"

	// KindSpec holds spec fields of the operator kind beyond StaticPodOperatorSpec (e.g. KubeControllerManager's
	// useMoreSecureServiceCA): not read by the loops, exported with the resource. Set before the loops run.
	KindSpec map[string]interface{}

	mu     sync.Mutex
	meta   metav1.ObjectMeta
	spec   operatorv1.StaticPodOperatorSpec
	status operatorv1.StaticPodOperatorStatus
	rv     int
	inf    cache.SharedIndexInformer
	// specJSON and statusJSON cache the JSON of spec and status (see stored), so that a write that changes
	// nothing is found without JSON round trips; nil: not known, or not usable.
	specJSON, statusJSON []byte
	// specMap and statusMap cache the same as generic JSON objects, which apply merges into (see stored); each is
	// made by the first apply that needs it after a change (specObject, statusObject, once specMapKnown and
	// statusMapKnown are set): most changes are never applied to, and making one costs four JSON round trips.
	specMap, statusMap           map[string]interface{}
	specMapKnown, statusMapKnown bool
}

var _ v1helpers.StaticPodOperatorClient = (*OperatorClient)(nil)

// StaticPodOperator is the operator client interface the loops use.
type StaticPodOperator = v1helpers.StaticPodOperatorClient

// NewOperatorClient registers an operator resource named "cluster" of the given kind in the cluster.
func (c *Cluster) NewOperatorClient(kind, resource string, spec operatorv1.StaticPodOperatorSpec, status operatorv1.StaticPodOperatorStatus) *OperatorClient {
	oc := &OperatorClient{
		cluster:  c,
		GVK:      operatorv1.GroupVersion.WithKind(kind),
		Resource: resource,
		meta:     metav1.ObjectMeta{Name: "cluster", Generation: 1},
		rv:       1,
	}
	oc.meta.UID = uidFor(resource, "", oc.meta.Name, 0)
	oc.meta.CreationTimestamp = metav1.NewTime(time.Now().Truncate(time.Second))
	roundTrip(&spec, &oc.spec)
	roundTrip(&status, &oc.status)
	oc.stored()
	oc.meta.ResourceVersion = "1"
	// A never-started informer: controllers register handlers on it and nothing else.
	oc.inf = cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &operatorv1.KubeAPIServerList{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}, &operatorv1.KubeAPIServer{}, 0, cache.Indexers{})
	c.mu.Lock()
	c.operators[resource] = oc
	c.mu.Unlock()
	return oc
}

// OperatorClients returns every operator client of the cluster, by resource name.
func (c *Cluster) OperatorClients() map[string]*OperatorClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*OperatorClient{}
	for k, v := range c.operators {
		out[k] = v
	}
	return out
}

func roundTrip(in, out interface{}) {
	b, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("operator client: marshal %T: %v", in, err))
	}
	v := reflect.ValueOf(out).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := json.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("operator client: unmarshal %T: %v", out, err))
	}
}

func (o *OperatorClient) Informer() cache.SharedIndexInformer { return o.inf }

func (o *OperatorClient) GetObjectMeta() (*metav1.ObjectMeta, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.meta.DeepCopy()
	return m, nil
}

func (o *OperatorClient) GetOperatorState() (*operatorv1.OperatorSpec, *operatorv1.OperatorStatus, string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	spec := o.spec.OperatorSpec.DeepCopy()
	status := o.status.OperatorStatus.DeepCopy()
	return spec, status, o.meta.ResourceVersion, nil
}

func (o *OperatorClient) GetOperatorStateWithQuorum(context.Context) (*operatorv1.OperatorSpec, *operatorv1.OperatorStatus, string, error) {
	return o.GetOperatorState()
}

func (o *OperatorClient) GetStaticPodOperatorState() (*operatorv1.StaticPodOperatorSpec, *operatorv1.StaticPodOperatorStatus, string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.spec.DeepCopy(), o.status.DeepCopy(), o.meta.ResourceVersion, nil
}

func (o *OperatorClient) GetStaticPodOperatorStateWithQuorum(context.Context) (*operatorv1.StaticPodOperatorSpec, *operatorv1.StaticPodOperatorStatus, string, error) {
	return o.GetStaticPodOperatorState()
}

func (o *OperatorClient) conflict(rv string) error {
	if rv != o.meta.ResourceVersion {
		return apierrors.NewConflict(schema.GroupResource{Group: o.GVK.Group, Resource: o.Resource}, o.meta.Name,
			fmt.Errorf("resourceVersion %q is not the current %q", rv, o.meta.ResourceVersion))
	}
	return nil
}

// stored caches the JSON of the stored spec and status, once they changed; the caller holds the lock. A cached
// JSON is kept only if it survives a round trip unchanged: then a spec (or status) whose JSON equals it would be
// stored as an equal one (commit's comparison is JSON(round trip(new)) against JSON(current)), so sameAsStored finds
// what commit would find without the round trips.
//
// The generic objects are kept only if storing one (what apply does: marshal it, unmarshal that into a zero
// value, commit) gives the cached JSON again: then an apply whose merge gives the cached object changes nothing.
func (o *OperatorClient) stored() {
	o.specJSON = stableJSON(marshalOrNil(&o.spec), &operatorv1.StaticPodOperatorSpec{})
	o.statusJSON = stableJSON(marshalOrNil(&o.status), &operatorv1.StaticPodOperatorStatus{})
	o.specMap, o.statusMap, o.specMapKnown, o.statusMapKnown = nil, nil, false, false
}

// specObject is the cached generic object of the stored spec (see stored; nil: not usable); the caller holds the
// lock.
func (o *OperatorClient) specObject() map[string]interface{} {
	if !o.specMapKnown {
		o.specMap, o.specMapKnown = stableMap(o.specJSON, &operatorv1.StaticPodOperatorSpec{}), true
	}
	return o.specMap
}

// statusObject is specObject for the status.
func (o *OperatorClient) statusObject() map[string]interface{} {
	if !o.statusMapKnown {
		o.statusMap, o.statusMapKnown = stableMap(o.statusJSON, &operatorv1.StaticPodOperatorStatus{}), true
	}
	return o.statusMap
}

// stableMap is cached (a stableJSON) as a generic object, if marshalling that and unmarshalling it into scratch
// (a zero value of the cached type) gives a value whose JSON is cached; else nil.
func stableMap(cached []byte, scratch interface{}) map[string]interface{} {
	if cached == nil {
		return nil
	}
	var m map[string]interface{}
	if err := json.Unmarshal(cached, &m); err != nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil || json.Unmarshal(b, scratch) != nil {
		return nil
	}
	if again, err := json.Marshal(scratch); err != nil || !bytes.Equal(again, cached) {
		return nil
	}
	return m
}

// stableJSON is b, a value's JSON, if unmarshalling it into scratch (a zero value of the value's type) and
// marshalling that gives the same bytes, else nil (also when b is nil: marshalling the value failed).
func stableJSON(b []byte, scratch interface{}) []byte {
	if b == nil {
		return nil
	}
	if err := json.Unmarshal(b, scratch); err != nil {
		return nil
	}
	again, err := json.Marshal(scratch)
	if err != nil || !bytes.Equal(again, b) {
		return nil
	}
	return b
}

// commit stores new spec/status if they differ from the current ones; the caller holds the lock. Each side is
// stored as the API server stores it: its JSON round trip. A side passed as the stored value itself (an update
// or apply of the other side) is left as it is, with its cached JSON and generic object: most commits change the
// status alone, and the spec holds the observed config, the largest JSON of the resource.
func (o *OperatorClient) commit(verb, sub string, spec *operatorv1.StaticPodOperatorSpec, status *operatorv1.StaticPodOperatorStatus) {
	var ns operatorv1.StaticPodOperatorSpec
	var nst operatorv1.StaticPodOperatorStatus
	specJSON, specSame := storedForm(spec, &ns, &o.spec, o.specJSON)
	statusJSON, statusSame := storedForm(status, &nst, &o.status, o.statusJSON)
	if specSame && statusSame {
		return
	}
	managementChanged := false
	if !specSame {
		o.meta.Generation++
		managementChanged = ns.ManagementState != o.spec.ManagementState
		o.spec = ns
		o.specJSON = specJSON
		o.specMap, o.specMapKnown = nil, false
	}
	if !statusSame {
		o.status = nst
		o.statusJSON = statusJSON
		o.statusMap, o.statusMapKnown = nil, false
	}
	o.rv++
	o.meta.ResourceVersion = strconv.Itoa(o.rv)
	o.cluster.record(verb, schema.GroupVersionResource{Group: o.GVK.Group, Version: o.GVK.Version, Resource: o.Resource + "/" + sub}, "", o.meta.Name)
	if managementChanged {
		o.cluster.touch(o.ManagementState())
	}
}

// ManagementState names the operator's spec.managementState as an object a loop may watch (Loop.Watches): it
// changes with every write that changes that field and with nothing else, where the spec's other fields (the
// observed config) change often.
func (o *OperatorClient) ManagementState() Object {
	return Object{Resource: o.Resource + "/spec", Name: o.meta.Name + "#managementState"}
}

// sameAsStored says, without a round trip, whether storing v leaves the stored value cur as it is: v is cur
// itself, or v's JSON is cur's cached JSON (cached; nil: not known, then false). The cache is stable
// (stableJSON): the round trip of v would give the cached bytes again. b is v's JSON when it was marshalled.
//
// A v deeply equal to cur has cur's JSON, the cached one, without marshalling it (a status update that sets
// conditions as they are: about one commit in six of a render).
func sameAsStored(v, cur interface{}, cached []byte) (b []byte, same bool) {
	if v == cur || (cached != nil && reflect.DeepEqual(v, cur)) {
		return nil, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("operator client: marshal %T: %v", v, err))
	}
	return b, cached != nil && bytes.Equal(b, cached)
}

// storedForm says whether storing v leaves the stored value cur (whose cached JSON is cached) as it is; when it
// does not, out (a zero value) is set to v's JSON round trip, what storing v stores, and out's JSON is returned
// if it is stable (stableJSON: the cache to keep), else nil.
func storedForm(v, out, cur interface{}, cached []byte) ([]byte, bool) {
	b, same := sameAsStored(v, cur, cached)
	if same {
		return nil, true
	}
	if err := json.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("operator client: unmarshal %T: %v", out, err))
	}
	outJSON := marshalOrNil(out)
	if cached == nil {
		cached = marshalOrNil(cur)
	}
	if outJSON != nil && bytes.Equal(cached, outJSON) {
		return nil, true
	}
	if !bytes.Equal(outJSON, b) {
		// out's JSON is not v's: whether a round trip of it gives it again takes one more.
		return stableJSON(outJSON, reflect.New(reflect.TypeOf(out).Elem()).Interface()), false
	}
	// out is b unmarshalled and outJSON is b: unmarshalling outJSON gives out again, marshalling that outJSON.
	return outJSON, false
}

func jsonEqual(a, b interface{}) bool {
	return bytes.Equal(marshalOrNil(a), marshalOrNil(b))
}

// marshalOrNil is v's JSON, or nil if marshalling fails.
func marshalOrNil(v interface{}) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func (o *OperatorClient) UpdateOperatorSpec(_ context.Context, rv string, in *operatorv1.OperatorSpec) (*operatorv1.OperatorSpec, string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.conflict(rv); err != nil {
		return nil, "", err
	}
	spec := o.spec.DeepCopy()
	spec.OperatorSpec = *in.DeepCopy()
	o.commit("update", "spec", spec, &o.status)
	return o.spec.OperatorSpec.DeepCopy(), o.meta.ResourceVersion, nil
}

func (o *OperatorClient) UpdateOperatorStatus(_ context.Context, rv string, in *operatorv1.OperatorStatus) (*operatorv1.OperatorStatus, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.conflict(rv); err != nil {
		return nil, err
	}
	status := o.status.DeepCopy()
	status.OperatorStatus = *in.DeepCopy()
	o.commit("update", "status", &o.spec, status)
	return o.status.OperatorStatus.DeepCopy(), nil
}

func (o *OperatorClient) UpdateStaticPodOperatorSpec(_ context.Context, rv string, in *operatorv1.StaticPodOperatorSpec) (*operatorv1.StaticPodOperatorSpec, string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.conflict(rv); err != nil {
		return nil, "", err
	}
	o.commit("update", "spec", in, &o.status)
	return o.spec.DeepCopy(), o.meta.ResourceVersion, nil
}

func (o *OperatorClient) UpdateStaticPodOperatorStatus(_ context.Context, rv string, in *operatorv1.StaticPodOperatorStatus) (*operatorv1.StaticPodOperatorStatus, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.conflict(rv); err != nil {
		return nil, err
	}
	o.commit("update", "status", &o.spec, in)
	return o.status.DeepCopy(), nil
}

// apply merges an apply configuration (as JSON) into the current spec or status.
func (o *OperatorClient) apply(sub string, cfg interface{}) error {
	if cfg == nil || reflect.ValueOf(cfg).IsNil() {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var target interface{} = &o.status
	var cachedMap map[string]interface{}
	if sub == "spec" {
		target, cachedMap = &o.spec, o.specObject()
	} else {
		cachedMap = o.statusObject()
	}
	var curMap map[string]interface{}
	var err error
	if cachedMap != nil {
		curMap = runtime.DeepCopyJSON(cachedMap) // the merge and the stamping may change what they share
	} else {
		curMap, err = jsonObject(target)
	}
	if err != nil {
		return err
	}
	patchMap, err := jsonObject(cfg)
	if err != nil {
		return err
	}
	merged := mergeJSON(curMap, patchMap)
	stampConditionTimes(curMap, merged)
	if cachedMap != nil && reflect.DeepEqual(merged, cachedMap) {
		return nil // stored, it would be what is stored (stableMap): commit would find no change
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return err
	}
	// The half not applied is passed as the stored one itself (commit only reads it).
	spec, status := &o.spec, &o.status
	if sub == "spec" {
		spec = &operatorv1.StaticPodOperatorSpec{}
		err = json.Unmarshal(b, spec)
	} else {
		status = &operatorv1.StaticPodOperatorStatus{}
		err = json.Unmarshal(b, status)
	}
	if err != nil {
		return err
	}
	o.commit("apply", sub, spec, status)
	return nil
}

// jsonObject is v's JSON as a generic object.
func jsonObject(v interface{}) (map[string]interface{}, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]interface{}
	err = json.Unmarshal(b, &m)
	return m, err
}

// listKeys names the fields that identify an element of each list the operator resources hold: server-side
// apply merges such lists by key instead of replacing them.
var listKeys = map[string][]string{
	"conditions":   {"type"},
	"nodeStatuses": {"nodeName"},
	"generations":  {"group", "resource", "namespace", "name"},
}

func mergeJSON(cur, patch map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range cur {
		out[k] = v
	}
	for k, pv := range patch {
		cv, exists := out[k]
		switch p := pv.(type) {
		case map[string]interface{}:
			if c, ok := cv.(map[string]interface{}); ok && exists && k != "observedConfig" && k != "unsupportedConfigOverrides" {
				out[k] = mergeJSON(c, p)
			} else {
				out[k] = p
			}
		case []interface{}:
			keys, keyed := listKeys[k]
			c, ok := cv.([]interface{})
			if !keyed || !ok {
				out[k] = p
				continue
			}
			out[k] = mergeList(c, p, keys)
		default:
			out[k] = pv
		}
	}
	return out
}

func mergeList(cur, patch []interface{}, keys []string) []interface{} {
	keyOf := func(e interface{}) string {
		m, _ := e.(map[string]interface{})
		s := ""
		for _, k := range keys {
			s += fmt.Sprintf("%v\x00", m[k])
		}
		return s
	}
	out := append([]interface{}(nil), cur...)
	for _, pe := range patch {
		pm, _ := pe.(map[string]interface{})
		found := false
		for i, ce := range out {
			if keyOf(ce) == keyOf(pe) {
				cm, _ := ce.(map[string]interface{})
				out[i] = mergeJSON(cm, pm)
				found = true
				break
			}
		}
		if !found {
			out = append(out, pe)
		}
	}
	return out
}

// stampConditionTimes keeps a condition's lastTransitionTime when its status did not change and sets it to now
// when a condition is new or changed status without saying when.
func stampConditionTimes(before, after map[string]interface{}) {
	prev := map[string]map[string]interface{}{}
	if l, ok := before["conditions"].([]interface{}); ok {
		for _, e := range l {
			if m, ok := e.(map[string]interface{}); ok {
				prev[fmt.Sprint(m["type"])] = m
			}
		}
	}
	l, ok := after["conditions"].([]interface{})
	if !ok {
		return
	}
	now := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	for _, e := range l {
		m, ok := e.(map[string]interface{})
		if !ok {
			continue
		}
		p := prev[fmt.Sprint(m["type"])]
		switch {
		case p != nil && p["status"] == m["status"] && p["lastTransitionTime"] != nil:
			m["lastTransitionTime"] = p["lastTransitionTime"]
		case m["lastTransitionTime"] == nil:
			m["lastTransitionTime"] = now
		}
	}
}

func (o *OperatorClient) ApplyOperatorSpec(_ context.Context, _ string, cfg *applyoperatorv1.OperatorSpecApplyConfiguration) error {
	return o.apply("spec", cfg)
}

func (o *OperatorClient) ApplyOperatorStatus(_ context.Context, _ string, cfg *applyoperatorv1.OperatorStatusApplyConfiguration) error {
	return o.apply("status", cfg)
}

func (o *OperatorClient) ApplyStaticPodOperatorSpec(_ context.Context, _ string, cfg *applyoperatorv1.StaticPodOperatorSpecApplyConfiguration) error {
	return o.apply("spec", cfg)
}

func (o *OperatorClient) ApplyStaticPodOperatorStatus(_ context.Context, _ string, cfg *applyoperatorv1.StaticPodOperatorStatusApplyConfiguration) error {
	return o.apply("status", cfg)
}

func (o *OperatorClient) PatchOperatorStatus(ctx context.Context, p *jsonpatch.PatchSet) error {
	return o.PatchStaticOperatorStatus(ctx, p)
}

// PatchStaticOperatorStatus applies a JSON patch to the status (paths are relative to /status).
func (o *OperatorClient) PatchStaticOperatorStatus(_ context.Context, p *jsonpatch.PatchSet) error {
	if p == nil || p.IsEmpty() {
		return nil
	}
	raw, err := p.Marshal()
	if err != nil {
		return err
	}
	patch, err := jsonpatchlib.DecodePatch(raw)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	doc, err := json.Marshal(map[string]interface{}{"status": &o.status})
	if err != nil {
		return err
	}
	out, err := patch.Apply(doc)
	if err != nil {
		return apierrors.NewInvalid(o.GVK.GroupKind(), o.meta.Name, nil)
	}
	var wrapped struct {
		Status operatorv1.StaticPodOperatorStatus `json:"status"`
	}
	if err := json.Unmarshal(out, &wrapped); err != nil {
		return err
	}
	o.commit("patch", "status", &o.spec, &wrapped.Status)
	return nil
}

// Object returns the operator resource as the API would serve it, for export.
func (o *OperatorClient) Object() map[string]interface{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	spec, _ := jsonObject(&o.spec)
	status, _ := jsonObject(&o.status)
	for k, v := range o.KindSpec {
		spec[k] = v
	}
	return map[string]interface{}{
		"apiVersion": o.GVK.GroupVersion().String(),
		"kind":       o.GVK.Kind,
		"metadata":   map[string]interface{}{"name": o.meta.Name},
		"spec":       spec,
		"status":     status,
	}
}

// DegradedConditions returns the conditions named *Degraded whose status is True.
func (o *OperatorClient) DegradedConditions() []operatorv1.OperatorCondition {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []operatorv1.OperatorCondition
	for _, c := range o.status.Conditions {
		if len(c.Type) >= len("Degraded") && c.Type[len(c.Type)-len("Degraded"):] == "Degraded" && c.Status == operatorv1.ConditionTrue {
			out = append(out, c)
		}
	}
	return out
}

// operatorState is an operator client's saved form (pkg/state): what a later run needs to continue from it.
type operatorState struct {
	Metadata metav1.ObjectMeta                  `json:"metadata"`
	Spec     operatorv1.StaticPodOperatorSpec   `json:"spec"`
	Status   operatorv1.StaticPodOperatorStatus `json:"status"`
}

// SaveState returns the operator resource's metadata, spec and status as JSON, for a later run's Restore.
func (o *OperatorClient) SaveState() ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return json.Marshal(operatorState{Metadata: o.meta, Spec: o.spec, Status: o.status})
}

// RestoreState sets the operator resource to a state SaveState returned (before any loop runs). The kind's own
// spec fields (KindSpec) stay as the component set them.
func (o *OperatorClient) RestoreState(data []byte) error {
	var st operatorState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("operator %s state: %w", o.Resource, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.meta, o.spec, o.status = st.Metadata, st.Spec, st.Status
	o.stored()
	if n, err := strconv.Atoi(st.Metadata.ResourceVersion); err == nil {
		o.rv = n
	}
	return nil
}
