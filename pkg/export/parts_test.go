package export

import (
	"strings"
	"testing"

	"github.com/render-static/render-static/pkg/codec"
)

// An object's YAML joined from its top-level keys' (encodeParts, join) is MarshalYAML of it whole, whatever the
// values: long strings go-yaml folds, multi-line strings, floats and non-ASCII (which take the JSON round trip),
// nulls, empty maps and lists; keys that are not plain letters are not encoded by parts.
func TestEncodePartsMatchesWhole(t *testing.T) {
	long := strings.Repeat("word ", 40)
	objs := []map[string]interface{}{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "a", "labels": map[string]interface{}{"x": "1"}},
			"data": map[string]interface{}{"long": long, "multi": "line one\nline two\n", "key-2": "v", "10": "ten", "9": "nine"}},
		{"apiVersion": "v1", "kind": "Thing", "metadata": nil, "spec": map[string]interface{}{"f": 1.5, "i": int64(3), "u": "ünïcode", "n": nil,
			"e": map[string]interface{}{}, "l": []interface{}{}, "nested": []interface{}{map[string]interface{}{"a": true}, "s", 2}}},
		{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "immutable": true, "stringData": map[string]interface{}{"t": long + "é"},
			"metadata": map[string]interface{}{"name": "s", "annotations": map[string]interface{}{"a": "'quoted' \"both\": yes"}}},
		{"apiVersion": "v1", "kind": "Thing", "status": "null", "spec": "true", "zeta": "012", "alpha": "~", "metadata": map[string]interface{}{}},
	}
	for i, u := range objs {
		want, err := codec.MarshalYAML(u)
		if err != nil {
			t.Fatal(err)
		}
		p, err := encodeParts(u)
		if err != nil || p == nil {
			t.Fatalf("object %d: not encoded by parts: %v", i, err)
		}
		got, err := p.join(u)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("object %d: joined\n%s\nwhole\n%s", i, got, want)
		}
	}
	for _, k := range []string{"key2", "a_b", "a-b", "ключ", ""} {
		if p, err := encodeParts(map[string]interface{}{"apiVersion": "v1", k: "x"}); err != nil || p != nil {
			t.Errorf("key %q: encoded by parts (%v, %v)", k, p, err)
		}
	}
}
