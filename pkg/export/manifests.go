package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	configscheme "github.com/openshift/client-go/config/clientset/versioned/scheme"
	operatorscheme "github.com/openshift/client-go/operator/clientset/versioned/scheme"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"

	"github.com/render-static/render-static/pkg/codec"
	"github.com/render-static/render-static/pkg/loops"
)

// Manifest is one exported object.
type Manifest struct {
	// File is the manifest's file name: <order>_<namespace or "cluster">_<kind>.<group>_<name>.yaml, so that a
	// lexical order is an apply order (namespaces, then CRDs, then everything else).
	File      string
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
	Object    map[string]interface{}
	YAML      []byte
	// Compact, when set, is the manifest as compact JSON: what the node's first-boot apply reads instead of YAML
	// (NodeBytes). Only CRDs have it (CRDs), and nothing changes a CRD's manifest after it is made.
	Compact []byte
}

// NodeBytes is the manifest's file on the node (/opt/openshift/manifests, which the first-boot apply creates and
// then removes): its compact JSON when it has one, else its YAML. JSON is YAML, and oc and kubectl read either.
// A CRD is stored so, and without its schemas' descriptions (withoutSchemaDescriptions: the same validation, no
// `kubectl explain` text), because openshift/api's CRDs are deep, documented schemas: their YAML indentation was a
// quarter of aio.ign's file bytes once escaped (a space is "%20" in a data URL, "%2520" in live.ign, which carries
// aio.ign as one), their descriptions a sixth, and prose is what xz's measure of live.ign spends most on. Together
// the bundled example's live.ign is 1.5 MB smaller (2.1 MB), xz's measure of it a third cheaper and its embed
// ~53 KB smaller (docs/speed.md). The other manifests stay YAML on the node: as JSON they would save xz little
// more, and cost embed bytes (their YAML shares its compression with the installer layout's YAML).
func (m Manifest) NodeBytes() []byte {
	if m.Compact != nil {
		return m.Compact
	}
	return m.YAML
}

// HeldBy says whether the node file b holds the manifest as it was exported: its NodeBytes; its YAML, which an
// earlier render-static wrote on the node for every manifest (the CRDs included); or, for a manifest with a node
// form, its whole object as compact JSON, the CRDs' node form before their descriptions were left out. All three
// admit the same objects, so a re-render that finds any of them on the node updates nothing.
func (m Manifest) HeldBy(b []byte) bool {
	if bytes.Equal(b, m.NodeBytes()) || bytes.Equal(b, m.YAML) {
		return true
	}
	if m.Compact == nil || len(b) == 0 || b[0] != '{' {
		return false
	}
	whole, err := codec.MarshalObjectJSON(m.Object)
	return err == nil && bytes.Equal(b, whole)
}

// Secret says whether the manifest carries secret material.
func (m Manifest) Secret() bool { return m.GVK.Group == "" && m.GVK.Kind == "Secret" }

// Manifests exports every object the cluster's fakes hold, and every operator resource, as manifests that can be
// created on a fresh cluster: apiVersion and kind set; uid, resourceVersion, generation, creationTimestamp,
// managedFields and ownerReferences stripped (owners get new UIDs on a new cluster, and garbage collection
// would delete dependents whose owner UID does not match). Sorted by file name.
func Manifests(c *loops.Cluster) ([]Manifest, error) {
	objs, err := Objects(c)
	if err != nil {
		return nil, err
	}
	return manifestsOf(c, objs)
}

// ManifestsOf is Manifests of the objects Objects(c) returned (which it only reads), for a caller that needs
// them for something else as well.
func ManifestsOf(c *loops.Cluster, objs []runtime.Object) ([]Manifest, error) {
	return manifestsOf(c, objs)
}

// ManifestsAndWholeOf is ManifestsOf, and the YAML of objects whole, by object: codec.MarshalYAML(codec.ObjectMap(o)) with
// nothing stripped (what the state saves, pkg/state), made with the manifest from the same encodings. A
// mapping's entries are written one after another, each from its own key and value, so an object's YAML is the
// YAML of each top-level key alone, in key order; only metadata differs between an object whole and its
// manifest, so the other keys (data, spec, the bulk) are encoded once for both. An object some key of which is
// not plain letters (whose place in go-yaml's key order this does not model), or whose apiVersion and kind are
// not those of its type, is left out of the map (the state encodes it itself).
// reuse, when not nil, gives an object's manifest made ahead (see ManifestsReusing); such an object is left out
// of the map.
func ManifestsAndWholeOf(c *loops.Cluster, objs []runtime.Object, reuse func(o runtime.Object) (Manifest, bool)) ([]Manifest, map[runtime.Object][]byte, error) {
	return manifestsAndWhole(c, objs, true, reuse)
}

// ManifestsReusing is ManifestsOf taking an object's manifest from reuse when it gives one (ok): reuse must give
// exactly what ToManifest gives for that object, e.g. a manifest made ahead from an equal object. reuse runs on
// several goroutines at once.
func ManifestsReusing(c *loops.Cluster, objs []runtime.Object, reuse func(o runtime.Object) (Manifest, bool)) ([]Manifest, error) {
	return manifestsReusing(c, objs, reuse)
}

// ToManifest is one object's manifest, as Manifests exports it (the object is only read).
func ToManifest(o runtime.Object) (Manifest, error) { return toManifest(o) }

// Objects is every object the cluster's fakes hold (typed kube, config and operator objects with their kind set,
// and the dynamic client's unstructured objects), as they are: nothing stripped. Operator clients are not
// included (see loops.OperatorClient).
func Objects(c *loops.Cluster) ([]runtime.Object, error) {
	var objs []runtime.Object
	for _, src := range []struct {
		tracker clienttesting.ObjectTracker
		scheme  *runtime.Scheme
	}{
		{c.Kube.Tracker(), kubescheme.Scheme},
		{c.Config.Tracker(), configscheme.Scheme},
		{c.Operator.Tracker(), operatorscheme.Scheme},
	} {
		got, err := listAll(src.tracker, src.scheme)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	for gvr := range c.DynamicResources() {
		l, err := c.Dynamic.Resource(gvr).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr, err)
		}
		for i := range l.Items {
			objs = append(objs, &l.Items[i])
		}
	}
	return objs, nil
}

// Identity is what an object is: its kind, namespace and name.
type Identity struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// Identities is the kind, namespace and name of every object Objects returns, for loops that need to know what
// the cluster holds without exporting it (Manifests marshals every object).
func Identities(c *loops.Cluster) ([]Identity, error) {
	objs, err := Objects(c)
	if err != nil {
		return nil, err
	}
	out := make([]Identity, 0, len(objs))
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, err
		}
		out = append(out, Identity{GVK: o.GetObjectKind().GroupVersionKind(), Namespace: m.GetNamespace(), Name: m.GetName()})
	}
	return out, nil
}

func manifestsOf(c *loops.Cluster, objs []runtime.Object) ([]Manifest, error) {
	return manifestsReusing(c, objs, nil)
}

func manifestsReusing(c *loops.Cluster, objs []runtime.Object, reuse func(o runtime.Object) (Manifest, bool)) ([]Manifest, error) {
	m, _, err := manifestsAndWhole(c, objs, false, reuse)
	return m, err
}

// manifestsAndWhole makes the manifests, taking an object's from reuse when it gives one, and with wantWhole the
// YAML of the objects whole that it made by parts (ManifestsAndWholeOf).
func manifestsAndWhole(c *loops.Cluster, objs []runtime.Object, wantWhole bool, reuse func(o runtime.Object) (Manifest, bool)) ([]Manifest, map[runtime.Object][]byte, error) {
	var ops []map[string]interface{}
	for _, oc := range c.OperatorClients() {
		ops = append(ops, oc.Object())
	}
	out := make([]Manifest, len(objs)+len(ops))
	whole := make([][]byte, len(objs))
	err := Parallel(len(out), func(i int) (err error) {
		if i < len(objs) {
			if reuse != nil {
				if m, ok := reuse(objs[i]); ok {
					out[i] = m
					return nil
				}
			}
			out[i], whole[i], err = toManifestWhole(objs[i], wantWhole)
		} else {
			out[i], err = fromMap(ops[i-len(objs)])
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var byObject map[runtime.Object][]byte
	if wantWhole {
		byObject = make(map[runtime.Object][]byte, len(objs))
		for i, o := range objs {
			if whole[i] != nil {
				byObject[o] = whole[i]
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	for i := 1; i < len(out); i++ {
		if out[i].File == out[i-1].File {
			return nil, nil, fmt.Errorf("two objects export to %s", out[i].File)
		}
	}
	return out, byObject, nil
}

// sortedKinds are the scheme's kinds sorted by their String(), made once per scheme (and again if the scheme
// learns kinds): a render lists every kind of three schemes of ~1,000 kinds.
func sortedKinds(s *runtime.Scheme, types map[schema.GroupVersionKind]reflect.Type) []schema.GroupVersionKind {
	if c, ok := kindsByScheme.Load(s); ok && len(c.([]schema.GroupVersionKind)) == len(types) {
		return c.([]schema.GroupVersionKind)
	}
	type named struct {
		gvk  schema.GroupVersionKind
		name string
	}
	all := make([]named, 0, len(types))
	for gvk := range types {
		all = append(all, named{gvk, gvk.String()})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	gvks := make([]schema.GroupVersionKind, len(all))
	for i, n := range all {
		gvks[i] = n.gvk
	}
	kindsByScheme.Store(s, gvks)
	return gvks
}

var kindsByScheme sync.Map // *runtime.Scheme → []schema.GroupVersionKind, sorted

// listAll lists every object of every kind a tracker's scheme knows. The tracker has no "list everything", so the
// scheme's types are walked; a kind without a list type cannot be stored and is skipped.
func listAll(tracker clienttesting.ObjectTracker, s *runtime.Scheme) ([]runtime.Object, error) {
	var out []runtime.Object
	seen := map[schema.GroupVersionResource]bool{}
	types := s.AllKnownTypes()
	gvks := sortedKinds(s, types)
	for _, gvk := range gvks {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") ||
			gvk.Kind == "WatchEvent" || gvk.Kind == "Status" || gvk.Kind == "APIVersions" || gvk.Kind == "APIGroup" ||
			gvk.Kind == "APIGroupList" || gvk.Kind == "APIResourceList" {
			continue
		}
		if _, ok := types[gvk.GroupVersion().WithKind(gvk.Kind+"List")]; !ok {
			continue
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		if seen[gvr] {
			continue
		}
		seen[gvr] = true
		l, err := tracker.List(gvr, gvk, "")
		if err != nil {
			continue // not a kind this tracker stores
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, it := range items { // the tracker lists copies
			it.GetObjectKind().SetGroupVersionKind(gvk)
			out = append(out, it)
		}
	}
	return out, nil
}

func toManifest(o runtime.Object) (Manifest, error) {
	m, _, err := toManifestWhole(o, false)
	return m, err
}

// toManifestWhole is toManifest and, when wantWhole and the object allows it (see ManifestsAndWholeOf), o's YAML
// whole.
func toManifestWhole(o runtime.Object, wantWhole bool) (Manifest, []byte, error) {
	u, err := codec.ObjectMap(o)
	if err != nil {
		return Manifest{}, nil, err
	}
	if !wantWhole {
		m, err := fromMap(u)
		return m, nil, err
	}
	apiVersion, kind := o.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
	if u["apiVersion"] != apiVersion || u["kind"] != kind {
		m, err := fromMap(u)
		return m, nil, err
	}
	return fromMapWhole(u)
}

// kindOrder puts what other objects need first.
func kindOrder(gk schema.GroupKind) string {
	switch {
	case gk.Group == "" && gk.Kind == "Namespace":
		return "00"
	case gk.Group == "apiextensions.k8s.io" && gk.Kind == "CustomResourceDefinition":
		return "01"
	case gk.Group == "" && gk.Kind == "ServiceAccount", gk.Group == "rbac.authorization.k8s.io":
		return "02"
	default:
		return "05"
	}
}

func fromMap(u map[string]interface{}) (Manifest, error) {
	m, _, err := fromMapParts(u, nil)
	return m, err
}

// fromMapWhole is fromMap, and u's YAML as it was (nothing stripped) when u's keys allow encoding it by parts.
func fromMapWhole(u map[string]interface{}) (Manifest, []byte, error) {
	parts, err := encodeParts(u)
	if err != nil || parts == nil {
		m, err2 := fromMap(u)
		return m, nil, errors.Join(err, err2)
	}
	return fromMapParts(u, parts)
}

// fromMapParts is fromMap; with parts (u's encoding by top-level key, encodeParts), the manifest is made from
// them and the YAML of u whole is returned as well.
func fromMapParts(u map[string]interface{}, parts *yamlParts) (Manifest, []byte, error) {
	obj := &unstructured.Unstructured{Object: u}
	gvk := obj.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return Manifest{}, nil, fmt.Errorf("object %s/%s has no apiVersion/kind", obj.GetNamespace(), obj.GetName())
	}
	var whole []byte
	if parts != nil {
		var err error
		if whole, err = parts.join(u); err != nil {
			return Manifest{}, nil, err
		}
	}
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "ownerReferences", "selfLink"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	if md, ok := obj.Object["metadata"].(map[string]interface{}); ok {
		for k, v := range md {
			if v == nil {
				delete(md, k)
			}
		}
	}
	var b []byte
	var err error
	if parts != nil {
		b, err = parts.join(obj.Object)
	} else {
		b, err = codec.MarshalYAML(obj.Object)
	}
	if err != nil {
		return Manifest{}, nil, err
	}
	scope := obj.GetNamespace()
	if scope == "" {
		scope = "cluster"
	}
	kind := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	file := fmt.Sprintf("%s_%s_%s_%s.yaml", kindOrder(gvk.GroupKind()), scope, kind, obj.GetName())
	return Manifest{File: file, GVK: gvk, Namespace: obj.GetNamespace(), Name: obj.GetName(), Object: obj.Object, YAML: b}, whole, nil
}

// yamlParts is a map's YAML by top-level key (each key alone: codec.MarshalYAML(map{key: value})), but for metadata,
// which join encodes from the map it is given.
type yamlParts struct {
	keys  []string // sorted
	parts map[string][]byte
}

// encodeParts encodes u by top-level key; nil when some key is not plain ASCII letters: go-yaml sorts such keys
// in code point order (yaml.v2 sorter.go, keyList.Less: letters compare as runes, a prefix first), which is Go's
// string order; digits and other bytes sort otherwise.
func encodeParts(u map[string]interface{}) (*yamlParts, error) {
	if len(u) == 0 {
		return nil, nil
	}
	p := &yamlParts{keys: make([]string, 0, len(u)), parts: make(map[string][]byte, len(u))}
	for k := range u {
		if !asciiLetters(k) {
			return nil, nil
		}
		p.keys = append(p.keys, k)
	}
	sort.Strings(p.keys)
	for _, k := range p.keys {
		if k == "metadata" {
			continue
		}
		b, err := codec.MarshalYAML(map[string]interface{}{k: u[k]})
		if err != nil {
			return nil, err
		}
		p.parts[k] = b
	}
	return p, nil
}

// join is the YAML of u, which has exactly the keys the parts were made from and the same values but for
// metadata.
func (p *yamlParts) join(u map[string]interface{}) ([]byte, error) {
	if len(u) != len(p.keys) {
		return nil, fmt.Errorf("encoding by parts: %d keys, parts of %d", len(u), len(p.keys))
	}
	n := 0
	for _, b := range p.parts {
		n += len(b)
	}
	out := make([]byte, 0, n+512)
	for _, k := range p.keys {
		b, ok := p.parts[k]
		if k == "metadata" {
			var err error
			if b, err = codec.MarshalYAML(map[string]interface{}{k: u[k]}); err != nil {
				return nil, err
			}
		} else if _, has := u[k]; !has || !ok {
			return nil, fmt.Errorf("encoding by parts: no key %s", k)
		}
		out = append(out, b...)
	}
	return out, nil
}

func asciiLetters(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}
