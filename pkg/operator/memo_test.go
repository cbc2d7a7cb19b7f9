package operator

import (
	"context"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	kubecontrolplanev1 "github.com/openshift/api/kubecontrolplane/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/resource/resourcemerge"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/loops"
)

// TestReadAsJSONDecodesLikeYAML: every embedded manifest library-go's decoder reads decodes from ReadAsJSON to
// exactly the object it decodes from the YAML, and the static resources come as JSON.
func TestReadAsJSONDecodesLikeYAML(t *testing.T) {
	decoded, static := 0, 0
	err := fs.WalkDir(manifests.FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(name, ".yaml") {
			return err
		}
		raw, err := manifests.Read(name)
		if err != nil {
			return err
		}
		want, yamlErr := resourceread.ReadGenericWithUnstructured(raw)
		j, err := ReadAsJSON(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, err := ReadAsJSON(name) // from the cache
		if err != nil || string(again) != string(j) {
			t.Fatalf("%s: read again differs (%v)", name, err)
		}
		got, jsonErr := resourceread.ReadGenericWithUnstructured(j)
		if (yamlErr == nil) != (jsonErr == nil) {
			t.Fatalf("%s: YAML decodes with error %v, JSON with %v", name, yamlErr, jsonErr)
		}
		if yamlErr != nil {
			return nil
		}
		decoded++
		if !equality.Semantic.DeepEqual(want, got) {
			t.Errorf("%s: the JSON decodes to another object than the YAML", name)
		}
		if strings.Contains(name, "/static/") {
			static++
			if j[0] != '{' {
				t.Errorf("%s: a static resource is not read as JSON", name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if decoded == 0 || static == 0 {
		t.Fatalf("decoded %d manifests, %d static resources: the walk found nothing", decoded, static)
	}
}

// TestApplyMergedConfigReusesTheLastMerge: applying the same layers again reuses the last merge and leaves what
// a merge afresh leaves; other layers, or a schema that is not a zero value, merge afresh.
func TestApplyMergedConfigReusesTheLastMerge(t *testing.T) {
	ctx := context.Background()
	newBase := func() *Base {
		c, err := loops.NewCluster([]string{"ns"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &Base{Cluster: c, Recorder: c.Recorder, merged: &mergedConfigs{}}
	}
	cm := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "config",
			Annotations: map[string]string{"a": "b"}}, Data: map[string]string{}}
	}
	stored := func(b *Base) *corev1.ConfigMap {
		o, err := b.Cluster.Kube.CoreV1().ConfigMaps("ns").Get(ctx, "config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	layer1 := []byte("apiVersion: kubecontrolplane.config.openshift.io/v1\nkind: KubeAPIServerConfig\napiServerArguments:\n  a: [\"1\"]\nnotInSchema: x\n")
	layer2 := []byte(`{"apiServerArguments":{"b":["2"]},"servicesSubnet":"10.0.0.0/16"}`)
	layer3 := []byte(`{"apiServerArguments":{"b":["3"]}}`)
	schema := func() *kubecontrolplanev1.KubeAPIServerConfig { return &kubecontrolplanev1.KubeAPIServerConfig{} }

	b := newBase()
	if err := b.ApplyMergedConfig(ctx, schema(), cm(), layer1, layer2); err != nil {
		t.Fatal(err)
	}
	first := stored(b)
	want, _, err := resourcemerge.MergePrunedConfigMap(schema(), cm(), "config.yaml", nil, layer1, layer2)
	if err != nil {
		t.Fatal(err)
	}
	if first.Data["config.yaml"] != want.Data["config.yaml"] || strings.Contains(first.Data["config.yaml"], "notInSchema") {
		t.Fatalf("config.yaml = %s, want %s", first.Data["config.yaml"], want.Data["config.yaml"])
	}
	if _, ok := b.merged.get(cm(), schema(), [][]byte{layer1, layer2}); !ok {
		t.Fatalf("the merge was not kept")
	}
	n := len(b.Cluster.Journal())
	if err := b.ApplyMergedConfig(ctx, schema(), cm(), append([]byte(nil), layer1...), layer2); err != nil {
		t.Fatal(err)
	}
	if len(b.Cluster.Journal()) != n || !equality.Semantic.DeepEqual(stored(b), first) {
		t.Errorf("the same layers again wrote or changed the configmap")
	}

	// Other layers: merged afresh, exactly as a base without the kept merge does.
	if err := b.ApplyMergedConfig(ctx, schema(), cm(), layer1, layer3); err != nil {
		t.Fatal(err)
	}
	fresh := newBase()
	if err := fresh.ApplyMergedConfig(ctx, schema(), cm(), layer1, layer3); err != nil {
		t.Fatal(err)
	}
	got, ref := stored(b), stored(fresh)
	got.UID, ref.UID, got.CreationTimestamp, ref.CreationTimestamp = "", "", metav1.Time{}, metav1.Time{}
	if !equality.Semantic.DeepEqual(got, ref) || !strings.Contains(got.Data["config.yaml"], `"3"`) {
		t.Errorf("after other layers: %+v, a merge afresh leaves %+v", got, ref)
	}
	// A schema with fields set is never taken from the kept merges.
	set := schema()
	set.ServicesSubnet = "10.1.0.0/16"
	if _, ok := b.merged.get(cm(), set, [][]byte{layer1, layer3}); ok {
		t.Errorf("a schema with fields set was looked up")
	}
}

// TestObservedConfigIsDecodedAfresh: ObservedConfig returns what DecodeObserved returns for the stored observed
// config, a new object every time (changing one changes no other), and follows a new observed config.
func TestObservedConfigIsDecodedAfresh(t *testing.T) {
	ctx := context.Background()
	c, err := loops.NewCluster([]string{"ns"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	op := c.NewOperatorClient("KubeScheduler", "kubeschedulers", operatorv1.StaticPodOperatorSpec{}, operatorv1.StaticPodOperatorStatus{})
	b := &Base{Cluster: c, Op: op, observed: &observedConfigs{}}
	set := func(raw string) {
		spec, _, rv, _ := op.GetStaticPodOperatorState()
		spec.ObservedConfig = runtime.RawExtension{Raw: []byte(raw)}
		if _, _, err := op.UpdateStaticPodOperatorSpec(ctx, rv, spec); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string) map[string]interface{} {
		t.Helper()
		got, spec, err := b.ObservedConfig()
		if err != nil {
			t.Fatal(err)
		}
		want, err := DecodeObserved(spec.ObservedConfig.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: ObservedConfig = %v, DecodeObserved = %v", step, got, want)
		}
		return got
	}
	check("empty")
	set(`{"a":{"b":[1,"x",true,null]},"n":12345678901}`)
	first := check("set")
	first["a"].(map[string]interface{})["b"] = "changed"
	first["new"] = 1
	check("after changing a returned object")
	set(`{"a":{"b":[2]}}`)
	if got := check("set again"); reflect.DeepEqual(got, first) {
		t.Errorf("a new observed config was not decoded")
	}
}
