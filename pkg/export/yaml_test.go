package export

import (
	"bytes"
	"math"
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
	vendored, err := vendoredCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range vendored {
		cases["crd "+f.name] = f.object
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
