package codec_test

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/codec"
	"github.com/render-static/render-static/pkg/pipeline"
)

// checkFastYAML: the fast parser gives what codec.UnmarshalYAML gives, or declines; it returns whether it read it.
func checkFastYAML(t *testing.T, name string, b []byte) bool {
	t.Helper()
	got, ok := codec.UnmarshalOwnYAML(b)
	if !ok {
		return false
	}
	want, err := codec.UnmarshalYAML(b)
	if err != nil {
		t.Errorf("%s: the fast parser read YAML that codec.UnmarshalYAML rejects (%v)", name, err)
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: the fast parser gives\n%#v\ncodec.UnmarshalYAML gives\n%#v", name, got, want)
	}
	return true
}

// TestFastYAMLValues: every kind of value go-yaml's emitter writes (codec.MarshalYAML) reads back as
// codec.UnmarshalYAML reads it, or is left to it; plain words, numbers and block scalars are read.
func TestFastYAMLValues(t *testing.T) {
	strs := []string{"", " ", "a", "yes", "Yes", "no", "on", "off", "y", "n", "true", "false", "null", "~", "NULL", "0", "1", "-1",
		"0755", "0x1f", "1e3", "1.5", ".5", ".inf", "-.inf", ".nan", "+1", "1_000", "2001-12-14", "2001-12-14T21:59:43.10-05:00",
		"12345678901234567890", "<<", "=", "-", "- x", "-x", "--x", "?", "? x", ":", "a:b", "a: b", "a #b", "#a", "a#b", "[a]", "{a}",
		"a,b", "'", "\"", "a'b", "a\"b", "\\", "a\\b", "\t", "a\tb", "é", "ü\n", "\u2028", "\ufeff", "line\n",
		"two\nlines", "two\nlines\n", "trailing\n\n", "trailing\n\n\n", "\nleading", "  indented\nnot", "a\n  b\n", "a \nb",
		"a\n\n\nb\n", "end with space ", strings.Repeat("long words ", 30), strings.Repeat("x", 300),
		strings.Repeat("line\n", 40), "*a", "&a", "!a", "%a", "@a", "`a", "|", ">", "a: ", " a", "0.", "1.", "-0", "00", "+", ".", "...",
		"888dc613-5914-ce10-8404-8dd5e2d6af0c", "7008h0m0s", "50Mi", "10m", "9980", "10.128.0.0/14", "192.168.126.10", "2026-11-26",
		"2026-11-26T06:52:33Z", "2026-11-26 06:52:33", "1234-x", "0b101", "-0b11", "0B11", "0o17", "0O17", "017", "019", "1_000", "1__0",
		"_1", "+.inf", "-.Inf", ".NaN", "1e3", "1E+3", "12e", "0x1g", "0x1F", "-0x1f", "1:20", "+1.5e-3", "9223372036854775808",
		"18446744073709551616", "1.5.6", "-.5", "+.", "0x", "1e", "Infinity", "-inf", "+nan", "1d", "0_0"}
	obj := map[string]interface{}{}
	var list []interface{}
	for i, s := range strs {
		obj["k"+strings.Repeat("x", i)] = s
		list = append(list, s, map[string]interface{}{"s": s, "t": []interface{}{s}})
		obj[s] = s // as a key too
	}
	obj["list"] = list
	obj["nested"] = map[string]interface{}{"m": map[string]interface{}{"l": []interface{}{map[string]interface{}{"a": int64(1), "b": true, "c": nil,
		"d": map[string]interface{}{}, "e": []interface{}{}, "f": []interface{}{[]interface{}{"x"}}}}}, "n": int64(-42), "z": false}
	b, err := codec.MarshalYAML(obj)
	if err != nil {
		t.Fatal(err)
	}
	checkFastYAML(t, "every value", b)
	read := 0
	for _, s := range strs {
		for _, o := range []map[string]interface{}{{"v": s}, {"l": []interface{}{s}}, {"m": []interface{}{map[string]interface{}{"a": s, "b": s}}},
			{s: "key"}, {"a": map[string]interface{}{"b": s, "c": "d"}}} {
			b, err := codec.MarshalYAML(o)
			if err != nil {
				t.Fatal(err)
			}
			if checkFastYAML(t, strings.TrimSpace(string(b)), b) {
				read++
			}
		}
	}
	if read < len(strs)*3 {
		t.Errorf("the fast parser read %d of %d small documents: it declines what it should read", read, len(strs)*5)
	}
	for _, s := range []string{"yes", "0", "-1", "1.5", "null", "two\nlines\n", "trailing\n\n", "two\nlines", "  indented\nnot", "a'b"} {
		b, _ := codec.MarshalYAML(map[string]interface{}{"v": s, "w": []interface{}{map[string]interface{}{"x": s}}})
		if _, ok := codec.UnmarshalOwnYAML(b); !ok {
			t.Errorf("the fast parser declines %q", b)
		}
	}
	// Hand-written YAML beyond the emitter's: read right or declined.
	for _, doc := range []string{"a: 1\n# comment\n", "a: &x 1\nb: *x\n", "a: !!str 1\n", "a: [1, 2]\n", "a: {b: c}\n", "a: >\n  folded\n  text\n",
		"a: |2\n   x\n  y\n", "a: |-\n  x\n\n", "a: |+\n  x\n\n", "a: |\n  x\n\n\nb: 1\n", "a: |\n\n  x\n", "a:\n- x\n-\n  y\n", "a:\n  - x\n  - y\n",
		"a: b\na: c\n", "a: 'x''y'\n", "a: \"x\\u00e9\\x41\"\n", "a: \"x\n  y\"\n", "a: plain\n  continued\n", "---\na: 1\n", "a: 1\n...\n",
		"\ta: 1\n", "a:\n\tb: 1\n", "a: 1", "", "- a\n", "a:\n  b: 1\n c: 2\n", "a: \"\\ud800\"\n", "a: 0o17\n", "a: 1:20\n", "a: -\n",
		"? a\n: b\n", "a: x #c\n", "\"a\": 1\n", "'a': 1\n", "\"a\":\n  b: 1\n", "a:\n- b: 1\n  c: |\n    lit\n- d\n"} {
		checkFastYAML(t, doc, []byte(doc))
	}
}

// TestFastYAMLRender: on the saved objects and manifests of a render and on every vendored CRD, the fast parser gives
// what codec.UnmarshalYAML gives, and reads nearly all of them.
func TestFastYAMLRender(t *testing.T) {
	testtools.Long(t, "renders once")
	dir := filepath.Join(t.TempDir(), "aio")
	o := pipeline.Options{InstallConfig: filepath.Join("..", "..", "examples", "sno", "install-config.yaml"), NodeIP: "192.168.126.10",
		NodeName: pipeline.DefaultNodeName, Dir: dir, CertValidity: certs.DefaultLeafValidity}
	if _, err := pipeline.Render(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"state/objects", "manifests"} {
		total, read := 0, 0
		err := filepath.WalkDir(filepath.Join(dir, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			total++
			if checkFastYAML(t, p, b) {
				read++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: the fast parser read %d of %d files", sub, read, total)
		if total == 0 || read < total*9/10 {
			t.Errorf("%s: the fast parser read only %d of %d files", sub, read, total)
		}
	}
	entries, err := fs.ReadDir(manifests.FS, "crds")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, e := range entries {
		b, err := manifests.Read("crds/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if checkFastYAML(t, e.Name(), b) {
			read++
		}
	}
	t.Logf("vendored CRDs: the fast parser read %d of %d", read, len(entries))
}

// TestFastYAMLRandom: random strings of the characters that matter to YAML, as values, keys and sequence items
// at several depths, read back as codec.UnmarshalYAML reads them.
func TestFastYAMLRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 1))
	alphabet := "aZ09 -:#'\"\\|>{}[],&*!%@`?.+~\n\t_/=<é"
	maxLen := 40
	word := func() string {
		var b strings.Builder
		for n := r.IntN(maxLen); n > 0; n-- {
			if r.IntN(6) == 0 {
				b.WriteString([]string{"yes", "null", "0", "1.5", "0x1", "- ", ": ", " #", "\n\n", "  ", "''"}[r.IntN(11)])
				continue
			}
			b.WriteRune([]rune(alphabet)[r.IntN(len([]rune(alphabet)))])
		}
		return b.String()
	}
	read := 0
	for i := 0; i < 6000; i++ {
		if i == 3000 { // numbers, timestamps and what looks like them
			alphabet, maxLen = "0123456789-+._eExXbBoOfinaT:Z /", 12
		}
		w := word()
		o := map[string]interface{}{"v": w, w: "k", "l": []interface{}{w, map[string]interface{}{"a": w, "b": []interface{}{w}}},
			"m": map[string]interface{}{"n": map[string]interface{}{"w": w}}}
		b, err := codec.MarshalYAML(o)
		if err != nil {
			t.Fatal(err)
		}
		if checkFastYAML(t, string(b), b) {
			read++
		}
	}
	t.Logf("read %d of 6000", read)
}
