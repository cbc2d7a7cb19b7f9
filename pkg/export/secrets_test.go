package export

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestSecretsAsTextRoundTrips: every value SecretsAsText writes as text reads back, from the manifest's YAML as
// kubectl reads it (sigs.k8s.io/yaml), as the bytes data held, whatever scalar style the emitter picks (block,
// quoted, folded long lines, values YAML would read as other types); what is not text stays in data.
func TestSecretsAsTextRoundTrips(t *testing.T) {
	long := strings.Repeat("word ", 40)
	values := map[string][]byte{
		"pem": []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), "two-newlines": []byte("a\n\n"),
		"none": []byte("abc"), "empty": {}, "newline": []byte("\n"), "lead": []byte("  lead"), "trail": []byte("trail  \n  "),
		"tab": []byte("\tx\ty\n"), "doc": []byte("---\n...\n"), "list": []byte("- x"), "null": []byte("null"), "bool": []byte("true"),
		"int": []byte("0123"), "map": []byte("k: v"), "comment": []byte("# c"), "quotes": []byte(`'a' "b" \n`), "long": []byte(long),
		"long-lines": []byte(long + "\n" + long + "\n"), "yaml-chars": []byte("|>&*!%@`{}[],?:"), "json": []byte(`{"a":[1,2]}`),
	}
	binary := map[string][]byte{"nul": {0, 1, 2}, "high": {0xff, 0xfe}, "utf8": []byte("é"), "cr": []byte("a\r\nb"), "del": {0x7f},
		"nel": []byte("a\u0085b"), "bom": []byte("\ufeffx")}
	data := map[string][]byte{}
	for k, v := range values {
		data[k] = v
	}
	for k, v := range binary {
		data[k] = v
	}
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: data}
	m, err := ToManifest(s)
	if err != nil {
		t.Fatal(err)
	}
	ms := []Manifest{m}
	if err := SecretsAsText(ms); err != nil {
		t.Fatal(err)
	}
	var back map[string]interface{}
	if err := yaml.Unmarshal(ms[0].YAML, &back); err != nil {
		t.Fatalf("%v\n%s", err, ms[0].YAML)
	}
	got, err := SecretData(back)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(data) {
		t.Errorf("%d keys read back, %d written", len(got), len(data))
	}
	for k, v := range data {
		if !bytes.Equal(got[k], v) {
			t.Errorf("%s: read back %q, want %q", k, got[k], v)
		}
	}
	text, _ := back["stringData"].(map[string]interface{})
	encoded, _ := back["data"].(map[string]interface{})
	for k := range values {
		if _, ok := text[k]; !ok {
			t.Errorf("%s (%q) is text but not in stringData", k, values[k])
		}
	}
	for k := range binary {
		if _, ok := encoded[k]; !ok {
			t.Errorf("%s (%q) is not text but not in data", k, binary[k])
		}
	}
	// A Secret all of whose values are text has no data.
	only := &corev1.Secret{TypeMeta: s.TypeMeta, ObjectMeta: s.ObjectMeta, Data: values}
	if m, err = ToManifest(only); err != nil {
		t.Fatal(err)
	}
	ms = []Manifest{m}
	if err := SecretsAsText(ms); err != nil {
		t.Fatal(err)
	}
	if _, has := ms[0].Object["data"]; has || bytes.Contains(ms[0].YAML, []byte("\ndata:")) {
		t.Errorf("a Secret of text only keeps data:\n%s", ms[0].YAML)
	}
}
