package export

import (
	"context"
	"fmt"
	"sort"
	"strings"

	configscheme "github.com/openshift/client-go/config/clientset/versioned/scheme"
	operatorscheme "github.com/openshift/client-go/operator/clientset/versioned/scheme"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"

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
	var ops []map[string]interface{}
	for _, oc := range c.OperatorClients() {
		ops = append(ops, oc.Object())
	}
	out := make([]Manifest, len(objs)+len(ops))
	err := Parallel(len(out), func(i int) (err error) {
		if i < len(objs) {
			if reuse != nil {
				if m, ok := reuse(objs[i]); ok {
					out[i] = m
					return nil
				}
			}
			out[i], err = toManifest(objs[i])
		} else {
			out[i], err = fromMap(ops[i-len(objs)])
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	for i := 1; i < len(out); i++ {
		if out[i].File == out[i-1].File {
			return nil, fmt.Errorf("two objects export to %s", out[i].File)
		}
	}
	return out, nil
}

// listAll lists every object of every kind a tracker's scheme knows. The tracker has no "list everything", so the
// scheme's types are walked; a kind without a list type cannot be stored and is skipped.
func listAll(tracker clienttesting.ObjectTracker, s *runtime.Scheme) ([]runtime.Object, error) {
	var out []runtime.Object
	seen := map[schema.GroupVersionResource]bool{}
	types := s.AllKnownTypes()
	gvks := make([]schema.GroupVersionKind, 0, len(types))
	for gvk := range types {
		gvks = append(gvks, gvk)
	}
	sort.Slice(gvks, func(i, j int) bool { return gvks[i].String() < gvks[j].String() })
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
	u, err := ObjectMap(o)
	if err != nil {
		return Manifest{}, err
	}
	return fromMap(u)
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
	obj := &unstructured.Unstructured{Object: u}
	gvk := obj.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return Manifest{}, fmt.Errorf("object %s/%s has no apiVersion/kind", obj.GetNamespace(), obj.GetName())
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
	b, err := MarshalYAML(obj.Object)
	if err != nil {
		return Manifest{}, err
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
	return Manifest{File: file, GVK: gvk, Namespace: obj.GetNamespace(), Name: obj.GetName(), Object: obj.Object, YAML: b}, nil
}
