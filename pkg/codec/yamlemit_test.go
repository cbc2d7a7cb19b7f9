package codec

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"

	goyaml "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// EmitYAML is emitYAML, for the tests of package codec_test.
var EmitYAML = emitYAML

// PreparedForYAML is what MarshalYAML gives go-yaml or the emitter for obj, for the tests of package codec_test.
func PreparedForYAML(obj map[string]interface{}) (interface{}, error) {
	if yamlReady(obj) {
		return obj, nil
	}
	return asParsed(obj)
}

// emitCheck compares the emitter with go-yaml's Marshal on v (what MarshalYAML gives either), and MarshalYAML with
// sigs.k8s.io/yaml.Marshal; it counts the documents the emitter wrote itself.
type emitCheck struct {
	t             *testing.T
	docs, emitted int
	failures      int
}

func (c *emitCheck) check(name string, v map[string]interface{}) {
	c.t.Helper()
	c.docs++
	if c.failures > 20 {
		return
	}
	want, err := goyaml.Marshal(v)
	if err != nil {
		c.t.Fatalf("%s: go-yaml: %v", name, err)
	}
	if got, ok := emitYAML(v, false); ok {
		c.emitted++
		if !bytes.Equal(got, want) {
			c.failures++
			c.t.Errorf("%s: the emitter differs from go-yaml:\n--- emitter\n%s\n--- go-yaml\n%s\n--- value %#v", name, got, want, v)
		}
	}
	// On an object as MarshalYAML is given it, the emitter writes only what needs no JSON round trip.
	if got, ok := emitYAML(v, true); ok && (!yamlReady(v) || !bytes.Equal(got, want)) {
		c.failures++
		c.t.Errorf("%s: the emitter on the object as it is wrote (yamlReady %v):\n%s\n--- go-yaml\n%s", name, yamlReady(v), got, want)
	}
	if !keyOrdersDefined(v) {
		// go-yaml has no one output for it: its order of these keys depends on the map's iteration order.
		if _, ok := emitYAML(v, false); ok {
			c.failures++
			c.t.Errorf("%s: the emitter wrote mappings whose keys go-yaml has no one order for", name)
		}
		return
	}
	sigs, serr := yaml.Marshal(v)
	got, err := MarshalYAML(v)
	if (err != nil) != (serr != nil) || !bytes.Equal(got, sigs) {
		c.failures++
		c.t.Errorf("%s: MarshalYAML differs from sigs.k8s.io/yaml (errors %v, %v):\n--- MarshalYAML\n%s\n--- sigs.k8s.io/yaml\n%s", name, err, serr, got, sigs)
	}
}

// asciiText says whether s has only ASCII bytes: what the emitter writes itself (emitYAML declines the rest).
func asciiText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// keyOrdersDefined says whether go-yaml's order of every mapping's keys in v is a total order (sortYAMLKeys);
// keys beyond ASCII count as ordered when no key of their mapping has a digit.
func keyOrdersDefined(v interface{}) bool {
	switch x := v.(type) {
	case map[string]interface{}:
		keys := make([]mapPair, 0, len(x))
		ascii, digits := true, false
		for k, e := range x {
			keys = append(keys, mapPair{key: k})
			ascii = ascii && asciiText(k)
			digits = digits || strings.IndexFunc(k, unicode.IsDigit) >= 0
			if !keyOrdersDefined(e) {
				return false
			}
		}
		if ascii {
			return sortYAMLKeys(keys, digits)
		}
		return !digits
	case []interface{}:
		for _, e := range x {
			if !keyOrdersDefined(e) {
				return false
			}
		}
	case map[interface{}]interface{}:
		for k, e := range x {
			if s, ok := k.(string); !ok || strings.IndexFunc(s, unicode.IsDigit) >= 0 || !keyOrdersDefined(e) {
				return false
			}
		}
	}
	return true
}

// atLeast fails the test when the emitter wrote fewer than min of the documents itself: the comparison must not
// pass by the emitter declining.
func (c *emitCheck) atLeast(what string, min float64) {
	c.t.Helper()
	c.t.Logf("%s: the emitter wrote %d of %d documents", what, c.emitted, c.docs)
	if c.docs == 0 || float64(c.emitted) < min*float64(c.docs) {
		c.t.Errorf("%s: the emitter wrote only %d of %d documents", what, c.emitted, c.docs)
	}
}

// placements puts s where a scalar can be in a document: a value, a key, a sequence item, a mapping in a sequence,
// a sequence in a sequence, and deeper, after keys of other lengths (so long strings meet the line width at
// other columns), and at depths past the line width.
func placements(s string) map[string]map[string]interface{} {
	out := map[string]map[string]interface{}{
		"value":    {"v": s},
		"key":      {s: "v", "a": s},
		"item":     {"l": []interface{}{s, s}},
		"mapitem":  {"l": []interface{}{map[string]interface{}{"a": s, "b": []interface{}{s}}}},
		"seqseq":   {"l": []interface{}{[]interface{}{s, []interface{}{s}}}},
		"nested":   {"m": map[string]interface{}{"n": map[string]interface{}{"o": s, "p": map[string]interface{}{}, "q": []interface{}{}}}},
		"neighbor": {"a": s, "b": []interface{}{}, "c": map[string]interface{}{}, "d": nil, "e": int64(1), "f": true},
	}
	for _, n := range []int{3, 11, 30, 60, 77} {
		out[fmt.Sprintf("keylen %d", n)] = map[string]interface{}{strings.Repeat("k", n): s}
	}
	for _, depth := range []int{5, 38, 42, 50} {
		var v interface{} = s
		for i := 0; i < depth; i++ {
			if i%3 == 2 {
				v = []interface{}{v}
			} else {
				v = map[string]interface{}{"d": v}
			}
		}
		out[fmt.Sprintf("depth %d", depth)] = map[string]interface{}{"d": v}
	}
	return out
}

// trickyStrings: YAML 1.1 words in every case, numbers and timestamps and what looks like them, indicators at
// every position, spaces, tabs and line breaks, every ASCII byte, quotes, non-ASCII, long lines with and without
// spaces.
func trickyStrings() []string {
	var out []string
	for _, w := range []string{"y", "yes", "n", "no", "true", "false", "on", "off", "null", "nan", "inf", ".nan", ".inf", "+.inf", "-.inf", "~", "<<"} {
		// Every case of every letter.
		letters := 0
		for i := 0; i < len(w); i++ {
			if asciiLetter(w[i]) {
				letters++
			}
		}
		for mask := 0; mask < 1<<letters; mask++ {
			b := []byte(w)
			for i, l := 0, 0; i < len(b); i++ {
				if asciiLetter(b[i]) {
					if mask&(1<<l) != 0 {
						b[i] = b[i] - 'a' + 'A'
					}
					l++
				}
			}
			out = append(out, string(b))
		}
	}
	out = append(out, "", " ", "  ", "0", "1", "-1", "+1", "00", "007", "08", "0755", "0o17", "0O17", "0o8", "0x1f", "0X1F", "0x", "0xg",
		"-0x1f", "+0x1f", "0b101", "0B101", "-0b11", "+0b11", "0b-1", "0b2", "0b", "1_000", "1__0", "_1", "1_", "0_0", "-0_1",
		"1e3", "1E3", "1e+3", "1e-3", "1.5e3", "1e", "e3", "1.", ".5", "-.5", "+.5", "1.5.6", "0.", "-0", "+0", ".", "..", "...", "+", "-", "+.", "-.",
		"1e400", "-1e400", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "0x8000000000000000", "0xFFFFFFFFFFFFFFFF", "0x10000000000000000",
		"0b1111111111111111111111111111111111111111111111111111111111111111", "-0b1000000000000000000000000000000000000000000000000000000000000000",
		"Infinity", "-Infinity", "+inf", "inf", "NaN", "0x1p-2", "1_000.5", "1,000", "1 000",
		"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14T21:59:43.10-05:00", "2001-12-14 21:59:43.10", "2001-12-14 21:59:43,10",
		"2001-12-14 21:59:43.10 -5", "2001-12-14T21:59:43Z", "2001-12-14T21:59:43z", "2001-1-2", "2001-13-14", "2001-12-32", "20011-12-14", "201-12-14",
		"2001-12-14T", "2001-12-14 ", "2026-11-26T06:52:33Z", "2026-11-26 06:52:33", "1234-x",
		"1:20", "1:2", "190:20:30.15", "-1:20", "+1:20", "1:60", "1:59", "1:5:9", "1:123", "1:20.", "1:20._5", "1_0:20", "1::2", "1:", ":1", "1:2:",
		"1:20 ", "a1:20", "12:30:45", "10:00", "0:0",
		"888dc613-5914-ce10-8404-8dd5e2d6af0c", "7008h0m0s", "50Mi", "10m", "9980", "10.128.0.0/14", "192.168.126.10", "::1", "fe80::1",
		"a", "a b", "a  b", "a: b", "a:b", "a :b", "a:", "a: ", ":", ": a", ":a", "?", "? a", "?a", "a?", "-", "- a", "-a", "--", "---", "--- a", "---a",
		"....", "#", "# a", "#a", "a#b", "a #b", "a\t#b", "a,b", "[a]", "{a}", "a]", "a}", "&a", "*a", "!a", "|", "|a", ">", ">a", "'", "''", "'a'", "a'b",
		"\"", "\"a\"", "a\"b", "%a", "@a", "`a", "a`", "\\", "a\\b", "\\n", "<<a", "=", "a=b", "a\"'b", "it's \"quoted\"",
		"\t", "a\t", "\ta", "a\tb", "\n", "\n\n", "\n\n\n", "a\n", "a\n\n", "a\n\n\n", "\na", "\n\na", "a\nb", "a\nb\n", "a\n\nb", " a\nb", "a\n b", "a \nb",
		"a\n \nb", "a\nb ", "a\nb\t", "a\r\nb", "a\rb", "\r", "a\x00b", "\x00", "\x07\x08\x0b\x0c\x1b", "a\x7fb", "a\x1fb",
		"  indented\nnot", "line\n  more indented\nback\n", "#!/bin/bash\nset -e\necho \"hi\" # comment\n", "key: value\nlist:\n- a\n",
		"é", "ü\n", "a–b", "\u2028", "a\u2029b", "\u0085", "\ufeff", "\ufeffa", "\xff", "a\xc3", "日本語", "emoji 😀",
	)
	for c := 0; c < 128; c++ {
		ch := string(rune(c))
		out = append(out, ch, "a"+ch, ch+"a", "a"+ch+"b", "a "+ch+" b", ch+" ", " "+ch)
	}
	// Long strings: folding at column 80 for plain, single- and double-quoted scalars, none in literal blocks.
	for _, n := range []int{60, 70, 75, 78, 79, 80, 81, 82, 85, 90, 100, 130, 200, 300} {
		words := strings.Repeat("word ", n/5+1)[:n]
		out = append(out,
			strings.Repeat("x", n), words, strings.TrimSpace(words), " "+words, words+" ", "'"+words, "\""+words, words+"\t", "\t"+words,
			strings.ReplaceAll(words, " ", "  "), strings.ReplaceAll(words, " ", "   "), strings.ReplaceAll(words, "word", "w'd"),
			strings.ReplaceAll(words, "word", "w\"d"), strings.ReplaceAll(words, "word", "w\\d"), strings.ReplaceAll(words, "word", "w\td"),
			words+"\n"+words, words+"\n", strings.Repeat(words+"\n", 3), "- "+words, words+": x", "yes "+words, "1 "+words,
			strings.Repeat("a ", n/2), strings.Repeat("ab ", n/3)+"  end", strings.Repeat("\x01 ", n/2), strings.Repeat("é ", n/2),
		)
		for _, gap := range []int{1, 2, 3} {
			s := strings.Repeat("y", n) + strings.Repeat(" ", gap) + "z" + strings.Repeat(" ", gap) + "z"
			out = append(out, s, "'"+s, s+"\t")
		}
	}
	return out
}

// shortStrings is every string of up to 4 of the characters that decide styles.
func shortStrings() []string {
	var out []string
	alphabet := []string{"a", " ", "\n", "-", ":", "#", "'", "\t", "0"}
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		out = append(out, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(prefix+c, n-1)
		}
	}
	gen("", 4)
	return out
}

// TestEmitterTrickyStrings: every tricky string in every placement is written as go-yaml writes it.
func TestEmitterTrickyStrings(t *testing.T) {
	c := &emitCheck{t: t}
	for _, s := range trickyStrings() {
		for where, doc := range placements(s) {
			if testing.Short() && !strings.HasPrefix(where, "keylen") && !strings.HasPrefix(where, "depth 4") && where != "key" && where != "mapitem" {
				continue
			}
			c.check(fmt.Sprintf("%q as %s", s, where), doc)
		}
	}
	short := shortStrings()
	if testing.Short() {
		short = short[:len(short)/8]
	}
	for _, s := range short {
		for _, where := range []string{"value", "key", "item", "mapitem", "nested"} {
			c.check(fmt.Sprintf("%q as %s", s, where), placements(s)[where])
		}
	}
	c.atLeast("tricky strings", 0.9)
}

// TestEmitterShapes: empty and nested collections, every scalar type, key orders.
func TestEmitterShapes(t *testing.T) {
	c := &emitCheck{t: t}
	docs := map[string]map[string]interface{}{
		"empty":      {},
		"empties":    {"m": map[string]interface{}{}, "l": []interface{}{}, "n": nil, "s": ""},
		"in lists":   {"l": []interface{}{map[string]interface{}{}, []interface{}{}, nil, "", []interface{}{[]interface{}{}}, []interface{}{map[string]interface{}{}}}},
		"nested":     {"a": []interface{}{[]interface{}{[]interface{}{"x", map[string]interface{}{"b": []interface{}{"y"}}}}}},
		"mapinlist":  {"a": []interface{}{map[string]interface{}{"b": map[string]interface{}{"c": []interface{}{map[string]interface{}{"d": 1}}}, "e": "f"}}},
		"literal in": {"a": []interface{}{"x\ny\n", map[string]interface{}{"k": "x\ny", "l": []interface{}{" x\n"}}}, "b": "\n"},
		"scalars": {"int": 7, "int64": int64(-9223372036854775808), "max": int64(math.MaxInt64), "uint64": uint64(math.MaxUint64),
			"float": 1.5, "floats": []interface{}{0.0, math.Copysign(0, -1), 1e21, 1e20, 1e-7, 123456789.0, 3.0, math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, math.SmallestNonzeroFloat64},
			"bools": []interface{}{true, false}, "nil": nil},
		"nilmap": {"m": map[string]interface{}(nil), "l": []interface{}(nil)},
		"key order": {"a10": 1, "a9": 2, "a": 3, "A": 4, "B": 5, "b": 6, "1": 7, "10": 8, "9": 9, "-": 13, "_": 14, "a-b": 15, "a_b": 16,
			"ab": 17, "a1b": 18, "a01b": 19, "a0": 21, "a10b": 24, "x.y": 25, "x/y": 26, "x y": 27, "": 28, " ": 29, "~": 30, "a1.5": 31,
			"a1.05": 32, "v1beta1": 33, "v1alpha1": 34, "v1": 35, "v2": 36, "v10": 37, "Z": 41, "z": 42, "[": 43, "{": 44, "ipv4": 45, "ipv6": 46,
			"tls.crt": 47, "ca-bundle.crt": 48, "etcd-0": 49, "etcd-1": 50, "etcd-10": 51, "etcd-2": 52, "port-8443": 53, "port-443": 54},
		"long key":      {strings.Repeat("k", 128): "v", strings.Repeat("j", 129): "w"},
		"multiline key": {"a\nb": "v"},
		"other types":   {"m": map[interface{}]interface{}{"a": 1}, "s": []string{"a"}},
	}
	for name, doc := range docs {
		c.check(name, doc)
	}
	// Key order: many keys (sorted otherwise than by insertion).
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		m := map[string]interface{}{}
		for j := r.IntN(40); j >= 0; j-- {
			var b strings.Builder
			for k := r.IntN(6); k >= 0; k-- {
				b.WriteByte("aAzZ0019._- "[r.IntN(12)])
			}
			m[b.String()] = j
		}
		c.check(fmt.Sprintf("keys %d", i), m)
	}
	c.atLeast("shapes", 0.6) // many of the random key sets have no one order in go-yaml
}

// randomDocs makes n random documents of the characters that matter to YAML, each word as a value, a key and an
// item at several depths (as pkg/state's TestFastYAMLRandom does); the second half are of numbers, timestamps and
// what looks like them.
func randomDocs(seed uint64, n int) []map[string]interface{} {
	r := rand.New(rand.NewPCG(seed, 1))
	alphabet := []rune("aZ09 -:#'\"\\|>{}[],&*!%@`?.+~\n\t_/=<\r\x01\x7f")
	maxLen := 120
	word := func() string {
		var b strings.Builder
		for n := r.IntN(maxLen); n > 0; n-- {
			if r.IntN(6) == 0 {
				b.WriteString([]string{"yes", "null", "0", "1.5", "0x1", "- ", ": ", " #", "\n\n", "  ", "''", "word ", "long words here "}[r.IntN(13)])
				continue
			}
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	var docs []map[string]interface{}
	for i := 0; i < n; i++ {
		if i == n/2 {
			alphabet, maxLen = []rune("0123456789-+._eExXbBoOfinaT:Z /"), 12
		}
		w := word()
		// As a key, one line: multi-line keys are not simple keys, which the emitter leaves to go-yaml.
		k := strings.NewReplacer("\n", "_", "\r", "_").Replace(w)
		docs = append(docs, map[string]interface{}{"v": w, k: "k", "l": []interface{}{w, map[string]interface{}{"a": w, "b": []interface{}{w}}},
			"m": map[string]interface{}{"n": map[string]interface{}{"w": w, "x": []interface{}{[]interface{}{w}}}}})
	}
	return docs
}

// TestEmitterRandom: 40,000 random documents.
func TestEmitterRandom(t *testing.T) {
	n := 40000
	if testing.Short() {
		n = 4000
	}
	c := &emitCheck{t: t}
	for i, d := range randomDocs(13, n) {
		c.check(fmt.Sprintf("random %d", i), d)
	}
	c.atLeast("random documents", 0.85) // some keys are longer than 128 bytes
}

// TestEmitterCRDs: every vendored CRD, as MarshalYAML gives it to the emitter (its numbers taken through the JSON
// round trip).
func TestEmitterCRDs(t *testing.T) {
	c := &emitCheck{t: t}
	for name, obj := range vendoredCRDObjects(t) {
		v, err := asParsed(obj)
		if err != nil {
			t.Fatal(err)
		}
		c.check(name, v.(map[string]interface{}))
		// And by top-level key, as the manifests are encoded.
		for k, e := range obj {
			c.check(name+" "+k, map[string]interface{}{k: e})
		}
	}
	c.atLeast("CRDs", 0.5)
}

// FuzzMarshalYAML: the emitter writes what go-yaml writes, and MarshalYAML what sigs.k8s.io/yaml writes, for any
// two strings as values, keys and items, at a depth and after a key of a length the fuzzer picks (seeded with
// the tricky strings). Run it with go test -fuzz FuzzMarshalYAML ./pkg/export/; go test runs the seeds.
func FuzzMarshalYAML(f *testing.F) {
	strs := append(trickyStrings(), shortStrings()[:200]...)
	for i, s := range strs {
		if i%7 == 0 || len(s) > 40 {
			f.Add(s, strs[(i*31)%len(strs)], uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, s, u string, shape uint8) {
		c := &emitCheck{t: t}
		var v interface{} = map[string]interface{}{strings.Repeat("k", int(shape>>3)): s, "l": []interface{}{u, s}}
		for i := 0; i < int(shape&7)*6; i++ {
			if i%2 == 0 {
				v = map[string]interface{}{"a": v, "z": s}
			} else {
				v = []interface{}{v, u}
			}
		}
		c.check("doc", map[string]interface{}{"v": s, s: u, u: []interface{}{s, map[string]interface{}{u: s, "e": []interface{}{}}}, "d": v})
	})
}

// TestYAMLKeyLessIsGoYAML: yamlKeyLess orders every two keys of a corpus as go-yaml orders them (a mapping of the
// two), and sortYAMLKeys declines key sets go-yaml has no one order for (it gives different orders from one
// Marshal to the next).
func TestYAMLKeyLessIsGoYAML(t *testing.T) {
	keys := []string{"a10", "a9", "a", "A", "B", "b", "1", "10", "9", "01", "001", "0", "00", "000", "-", "_", "a-b", "a_b", "ab", "a1b",
		"a01b", "a001", "a0", "a00", "a010", "a10b", "x.y", "x/y", "x y", "", " ", "~", "a1.5", "a1.05", "v1beta1", "v1alpha1", "v1", "v2",
		"v10", "100000000000000000000", "99999999999999999999", "9223372036854775807", "9223372036854775808", "1e3", "Z", "z", "[", "{",
		"0a", "00a", "a00b", "10a", "1a", "1-", "1.", "0.", "0-", "a0-", "a1-", "a10-", "a01-", "a00-", "Z9", "z9", "z09", "z009", "z0009", "z90"}
	// Every printable byte, and control characters (which sort as other non-letters do).
	for _, c := range []byte("\x00\x01\t\n\r\x1f\x7f") {
		keys = append(keys, string(c), "x"+string(c), "0"+string(c))
	}
	for c := byte(0x20); c < 0x7f; c++ {
		keys = append(keys, string(c), "x"+string(c), "0"+string(c))
	}
	for _, a := range keys {
		for _, b := range keys {
			if a == b {
				continue
			}
			out, err := goyaml.Marshal(map[string]interface{}{a: 1, b: 2})
			if err != nil {
				t.Fatal(err)
			}
			// Each value ends its line, after the key (a simple key's line, or a complex key's ": " line).
			if goLess := strings.Index(string(out), ": 1\n") < strings.Index(string(out), ": 2\n"); goLess != yamlKeyLess(a, b) {
				t.Errorf("%q < %q: go-yaml says %v, yamlKeyLess %v", a, b, goLess, yamlKeyLess(a, b))
			}
		}
	}
	// Keys go-yaml has no one order for.
	m := map[string]interface{}{}
	for _, k := range []string{"0", "001", "00a", "01", "0a", "1", "10", "1e3", "9"} {
		m[k] = k
	}
	outs := map[string]bool{}
	for i := 0; i < 50; i++ {
		b, err := goyaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		outs[string(b)] = true
	}
	if len(outs) < 2 {
		t.Fatalf("go-yaml gives one order of %v: pick keys it has no one order for", m)
	}
	if b, ok := emitYAML(m, false); ok {
		t.Errorf("the emitter wrote keys go-yaml has no one order for:\n%s", b)
	}
	pairs := func(keys ...string) []mapPair {
		var out []mapPair
		for _, k := range keys {
			out = append(out, mapPair{key: k})
		}
		return out
	}
	if keys := pairs("etcd-0", "etcd-1", "etcd-10", "etcd-2", "v1", "v10", "v2"); !sortYAMLKeys(keys, true) {
		t.Errorf("sortYAMLKeys declines %v", keys)
	}
	// v10 < v1beta1 (a letter after a digit), v1beta1 < v2 (1 < 2), v2 < v10 (2 < 10): no order.
	if keys := pairs("v10", "v1beta1", "v2"); sortYAMLKeys(keys, true) {
		t.Errorf("sortYAMLKeys orders %v", keys)
	}
}

// TestSkipOrdinary: skipOrdinary, eight bytes at a time, stops where a byte-by-byte scan stops: every byte value
// at every position of a word, and random runs.
func TestSkipOrdinary(t *testing.T) {
	slow := func(s string, i int) int {
		for i < len(s) && ordinary[s[i]] {
			i++
		}
		return i
	}
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 20; pos++ {
			b := []byte(strings.Repeat("aZ09/=.+", 3))
			b[pos] = byte(c)
			for from := 0; from < 4; from++ {
				if got, want := skipOrdinary(string(b), from), slow(string(b), from); got != want {
					t.Errorf("byte %#x at %d, from %d: skipOrdinary %d, byte by byte %d", c, pos, from, got, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 20000; n++ {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(0x21 + r.IntN(0x5e))
			if r.IntN(30) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		if got, want := skipOrdinary(string(b), 0), slow(string(b), 0); got != want {
			t.Errorf("%q: skipOrdinary %d, byte by byte %d", b, got, want)
		}
	}
}
