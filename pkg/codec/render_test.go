package codec_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	goyaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/codec"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/pipeline"
)

var rendered struct {
	once sync.Once
	objs []map[string]interface{}
	err  error
}

// renderedObjects is every object of a render of the bundled example, as the state and the manifests encode it
// (codec.ObjectMap, with apiVersion and kind from its type): the maps codec.MarshalYAML is given in a render.
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
		eng, err := pipeline.Settle(context.Background(), in)
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
			u, err := codec.ObjectMap(o)
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
	for _, c := range []struct {
		name string
		docs []map[string]interface{}
	}{{"whole", objs}, {"parts", parts}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, d := range c.docs {
					if _, err := codec.MarshalYAML(d); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestEmitterRender: every object of a render, whole and by top-level key, is written by MarshalYAML as
// sigs.k8s.io/yaml writes it, and by the emitter as go-yaml writes it; the emitter writes nearly all of them itself.
func TestEmitterRender(t *testing.T) {
	objs := renderedObjects(t)
	docs, emitted, direct := 0, 0, 0
	check := func(name string, obj map[string]interface{}) {
		t.Helper()
		docs++
		want, werr := yaml.Marshal(obj)
		got, gerr := codec.MarshalYAML(obj)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Errorf("%s: MarshalYAML differs from sigs.k8s.io/yaml (errors %v, %v):\n--- MarshalYAML\n%s\n--- sigs.k8s.io/yaml\n%s", name, gerr, werr, got, want)
		}
		v, err := codec.PreparedForYAML(obj)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := v.(map[string]interface{})
		if !ok {
			return
		}
		if _, ok := codec.EmitYAML(obj, true); ok {
			direct++
		}
		if got, ok := codec.EmitYAML(m, false); ok {
			emitted++
			if want, err := goyaml.Marshal(m); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: the emitter differs from go-yaml (%v):\n--- emitter\n%s\n--- go-yaml\n%s", name, err, got, want)
			}
		}
	}
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		name := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
		check(name, o)
		for k, v := range o {
			check(name+" "+k, map[string]interface{}{k: v})
		}
	}
	t.Logf("the emitter wrote %d of %d documents, %d without the JSON round trip's preparation", emitted, docs, direct)
	if emitted < docs*95/100 {
		t.Errorf("the emitter wrote only %d of %d documents", emitted, docs)
	}
}
