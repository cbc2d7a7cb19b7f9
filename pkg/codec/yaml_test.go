package codec

import (
	"bytes"
	"io/fs"
	"math"
	"path"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
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
	entries, err := fs.ReadDir(manifests.FS, "crds")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]interface{}{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".crd.yaml") {
			continue
		}
		raw, err := manifests.Read(path.Join("crds", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]interface{}
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out["crd "+e.Name()] = obj
	}
	if len(out) < 10 {
		t.Fatalf("only %d vendored CRDs", len(out))
	}
	return out
}
