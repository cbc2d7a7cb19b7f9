package codec

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_2/types"
)

// compactStrings are the strings the random configs take: plain ASCII, what JSON escapes (quotes, backslashes,
// control characters), what the HTML escaping would change, non-ASCII, invalid UTF-8, U+2028/U+2029, empty.
var compactStrings = []string{
	"", "a", "/etc/kubernetes/static-pod-resources", "data:;base64,H4sIAAAAAAAA/wEAAP//AAAAAAAAAAA=",
	"quote\"back\\slash", "tab\tnew\nline\rcr\x00nul\x1fus\x7fdel", "<script>&amp;</script>", "héllo wörld ✓",
	"bad\xffutf8\xc3", "\xe2\x80\xa8line\xe2\x80\xa9para", "{}", "[]", "null", "1.5e3",
}

// fillRandom sets v (settable) to a random value of its type: pointers nil or set, slices nil, empty or with
// elements, structs with each field filled or left zero.
func fillRandom(r *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 8 || r.IntN(3) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRandom(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && r.IntN(3) != 0 {
				fillRandom(r, v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		switch n := r.IntN(4); {
		case depth > 8 || n == 0:
		case n == 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := 0; i < s.Len(); i++ {
				fillRandom(r, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.String:
		v.SetString(compactStrings[r.IntN(len(compactStrings))])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt([]int64{0, 1, -1, 420, 0o644, 1 << 40}[r.IntN(6)])
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint([]uint64{0, 1, 255}[r.IntN(3)])
	}
}

// TestMarshalCompactMatchesGeneric: the one-walk encoder writes byte for byte what the generic way writes, on
// random configs that set any field of Ignition's types to any shape (nil, empty, empty objects that must go,
// nested in arrays where they stay, strings that need escaping).
func TestMarshalCompactMatchesGeneric(t *testing.T) {
	check := func(name string, cfg types.Config) {
		t.Helper()
		got, err := MarshalCompactJSON(cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := marshalCompactGeneric(cfg)
		if err != nil {
			t.Fatalf("%s: generic: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the one-walk encoder differs from the generic way:\n got %s\nwant %s", name, got, want)
		}
	}
	check("empty", types.Config{})
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var cfg types.Config
		fillRandom(r, reflect.ValueOf(&cfg).Elem(), 0)
		check("random config", cfg)
	}
}

// TestMarshalCompactFallsBack: a kind the one-walk encoder does not know takes the generic way.
func TestMarshalCompactFallsBack(t *testing.T) {
	type withMap struct {
		M map[string]int `json:"m"`
	}
	if _, _, err := appendCompact(nil, reflect.ValueOf(withMap{M: map[string]int{"a": 1}})); err != errUnsupported {
		t.Errorf("a map: %v, want errUnsupported", err)
	}
	if _, _, err := appendCompact(nil, reflect.ValueOf(struct{ F float64 }{1.5})); err != errUnsupported {
		t.Errorf("a float: %v, want errUnsupported", err)
	}
}
