package export_test

import (
	"context"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/render-static/render-static/internal/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/pipeline"
)

var rendered struct {
	once sync.Once
	objs []map[string]interface{}
	err  error
}

// renderedObjects is every object of a render of the bundled example, as the state and the manifests encode it
// (export.ObjectMap, with apiVersion and kind from its type): the maps export.MarshalYAML is given in a render.
// The engine runs once per test binary; callers must not change the maps.
func renderedObjects(tb testing.TB) []map[string]interface{} {
	tb.Helper()
	testtools.Long(tb, "renders the bundled example")
	rendered.once.Do(func() {
		o := pipeline.Options{InstallConfig: filepath.Join("..", "..", "examples", "sno", "install-config.yaml"), NodeIP: "192.168.126.10",
			NodeName: pipeline.DefaultNodeName, Dir: filepath.Join(tb.TempDir(), "aio"), CertValidity: certs.DefaultLeafValidity}
		in, err := pipeline.Validate(o)
		if err != nil {
			rendered.err = err
			return
		}
		eng, err := pipeline.RunEngine(context.Background(), in)
		if err != nil {
			rendered.err = err
			return
		}
		objs, err := export.Objects(eng.Cluster)
		if err != nil {
			rendered.err = err
			return
		}
		for _, o := range objs {
			u, err := export.ObjectMap(o)
			if err != nil {
				rendered.err = err
				return
			}
			obj := &unstructured.Unstructured{Object: u}
			obj.SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
			rendered.objs = append(rendered.objs, obj.Object)
		}
	})
	if rendered.err != nil {
		tb.Fatal(rendered.err)
	}
	if len(rendered.objs) == 0 {
		tb.Fatal("the render has no objects")
	}
	return rendered.objs
}

// BenchmarkMarshalYAML: MarshalYAML over a render's objects, whole (as the state writes them) and by top-level
// key (as the manifests are made, export.encodeParts); one iteration is one render's worth of objects.
func BenchmarkMarshalYAML(b *testing.B) {
	objs := renderedObjects(b)
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, o := range objs {
				if _, err := export.MarshalYAML(o); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	var parts []map[string]interface{}
	for _, o := range objs {
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, map[string]interface{}{k: o[k]})
		}
	}
	b.Run("parts", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range parts {
				if _, err := export.MarshalYAML(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
