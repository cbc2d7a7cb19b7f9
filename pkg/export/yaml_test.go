package export

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// MarshalYAML must write what sigs.k8s.io/yaml.Marshal writes, byte for byte: manifests, the state and aio.ign are
// made of it.
func TestMarshalYAMLIsSigsYAML(t *testing.T) {
	secret, err := ObjectMap(&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Data:       map[string][]byte{"tls.key": []byte("key\x00\xff"), "empty": {}}, Type: corev1.SecretTypeTLS})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string]interface{}{
		"secret": secret,
		"scalars": {"int": int64(3), "neg": int64(-9223372036854775808), "max": int64(math.MaxInt64), "goint": 7,
			"bool": true, "nil": nil, "str": "plain", "numeric": "123", "float-looking": "1.5", "yes": "yes", "null": "null",
			"empty": "", "spaces": " x ", "colon": "a: b", "multi": "line1\nline2\n", "tab": "a\tb", "quote": `"q'`,
			"merge": "<<", "tilde": "~", "hash": "# c", "dash": "- x", "ctl": "a\x01b\x7fc", "utf8": "é – ✓",
			"bad-utf8": "a\xffb", "bom": "\ufeffx", "ls": "a\u2028b", "html": "<a&b>"},
		"floats": {"f0": 0.0, "f3": 3.0, "fhalf": 0.5, "fbig": 1e21, "fmid": 1e6, "fsmall": 1e-7, "fneg": -2.25, "f32": float32(1.1)},
		"nesting": {"nilmap": map[string]interface{}(nil), "nilslice": []interface{}(nil), "emptymap": map[string]interface{}{},
			"emptyslice": []interface{}{}, "list": []interface{}{int64(1), "two", nil, map[string]interface{}{"k": []interface{}{}}},
			"typed": map[string]string{"x": "y"}, "strings": []string{"a", "b"}, "ünicode-key": "v", "a10": 1, "a9": 2, "A": 3,
			"deep": map[string]interface{}{"m": map[string]interface{}{"n": []interface{}{[]interface{}{int64(1)}, 2.5}}}},
	}
	for name, obj := range vendoredCRDObjects(t) {
		cases[name] = obj
	}
	for name, obj := range cases {
		want, werr := yaml.Marshal(obj)
		got, gerr := MarshalYAML(obj)
		if (werr != nil) != (gerr != nil) {
			t.Errorf("%s: errors differ: sigs.k8s.io/yaml %v, MarshalYAML %v", name, werr, gerr)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: MarshalYAML differs from sigs.k8s.io/yaml:\n--- got\n%s\n--- want\n%s", name, got, want)
		}
	}
}

// UnmarshalYAML must decode what sigs.k8s.io/yaml.Unmarshal decodes into a map: the state is read with it.
func TestUnmarshalYAMLIsSigsYAML(t *testing.T) {
	docs := map[string]string{
		"numbers":     "a: 1\nb: -2\nc: 1.5\nd: 9223372036854775807\ne: 18446744073709551615\nf: 1e400\ng: 0.1\nh: -0\n",
		"scalars":     "a: yes\nb: \"yes\"\nc: null\nd: ~\ne: 2026-11-26T01:00:00Z\nf: '123'\ng: \"\\u00e9\"\nh: |\n  multi\n  line\n",
		"keys":        "1: a\ntrue: b\n1.5: c\n",
		"nested":      "a:\n  b: [1, {c: d}, [], {}]\n  e: !!binary aGVsbG8=\n",
		"inf":         "a: .inf\n",
		"not a map":   "- a\n",
		"null doc":    "null\n",
		"bad yaml":    "a: [\n",
		"merge":       "x: &x {a: 1}\ny:\n  <<: *x\n  b: 2\n",
		"invalid utf": "a: !!binary /w==\n",
	}
	for name, obj := range vendoredCRDObjects(t) {
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = string(b)
	}
	for name, doc := range docs {
		var want map[string]interface{}
		werr := yaml.Unmarshal([]byte(doc), &want)
		got, gerr := UnmarshalYAML([]byte(doc))
		if (werr != nil) != (gerr != nil) {
			t.Errorf("%s: errors differ: sigs.k8s.io/yaml %v, UnmarshalYAML %v", name, werr, gerr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: UnmarshalYAML differs from sigs.k8s.io/yaml:\n got %#v\nwant %#v", name, got, want)
		}
	}
}

// vendoredCRDObjects decodes every vendored CRD, keyed "crd <file>": the largest real documents the YAML code
// handles.
func vendoredCRDObjects(t *testing.T) map[string]map[string]interface{} {
	t.Helper()
	vendored, err := vendoredCRDs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]interface{}{}
	for _, f := range vendored {
		obj, err := f.object()
		if err != nil {
			t.Fatal(err)
		}
		out["crd "+f.name] = obj
	}
	return out
}

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
		want, err := MarshalYAML(u)
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
