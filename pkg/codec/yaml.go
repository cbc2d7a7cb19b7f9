package codec

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	goyaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// ObjectMap is o as an unstructured map that the caller owns: the converter's output for a typed object, a deep
// copy of an unstructured one's map.
func ObjectMap(o runtime.Object) (map[string]interface{}, error) {
	if uo, ok := o.(*unstructured.Unstructured); ok {
		return uo.DeepCopy().Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(o)
}

// MarshalYAML is sigs.k8s.io/yaml.Marshal(obj), byte for byte, without its JSON round trip and, for nearly every
// object, without go-yaml's encoder. sigs.k8s.io/yaml marshals to JSON, parses the JSON with go-yaml
// (go.yaml.in/yaml/v2) and marshals what it parsed; for an unstructured object's values (maps, slices, strings,
// booleans, integers, nil) that parse gives back the same value, except that a nil map or slice becomes null and
// an int64 an int (which go-yaml writes alike). So the object is taken as it is, with nil maps and slices made
// null; any other value (floats, other types, strings with bytes the round trip could change: non-ASCII and DEL)
// takes the round trip itself, alone.
//
// What go-yaml's Marshal would then write is written by our own emitter (yamlemit.go, emitYAML), which restates
// go-yaml v2's rules (go.yaml.in/yaml/v2 v2.4.2): encode.go (map keys in sorter.go's order; strings that
// resolve.go would read as a null, boolean, number or timestamp, or that isBase60Float matches, double-quoted;
// strings with line breaks asked for as literal blocks, the others as plain) and emitterc.go
// (yaml_emitter_analyze_scalar and yaml_emitter_select_scalar_style for each scalar's final style, simple keys,
// the block mapping and sequence layout with {} and [] for empty ones, and the plain, single-quoted,
// double-quoted and literal writers with their escapes, chomping and indentation indicators and folding at
// column 80). The emitter first takes obj as it is, declining what yamlReady does not accept, so that an object
// that needs no round trip is walked once. A document it declines (a string or key beyond ASCII, a key that is
// not a simple key, keys go-yaml has no one order for, a value of another type) goes to go-yaml's Marshal.
func MarshalYAML(obj map[string]interface{}) ([]byte, error) {
	// The emitter on obj as it is declines what yamlReady does not accept: one walk for both.
	if b, ok := emitYAML(obj, true); ok {
		return b, nil
	}
	var v interface{} = obj
	if !yamlReady(v) {
		var err error
		if v, err = asParsed(v); err != nil {
			return nil, err
		}
	}
	if m, ok := v.(map[string]interface{}); ok {
		if b, ok := emitYAML(m, false); ok {
			return b, nil
		}
	}
	return goyaml.Marshal(v)
}

// yamlReady says whether v is what go-yaml would parse from v's JSON, up to int64 for int.
func yamlReady(v interface{}) bool {
	switch x := v.(type) {
	case nil, bool, int:
		return true
	case int64:
		return int64(int(x)) == x
	case string:
		return plainASCII(x)
	case map[string]interface{}:
		if x == nil {
			return false
		}
		for k, e := range x {
			if !plainASCII(k) || !yamlReady(e) {
				return false
			}
		}
		return true
	case []interface{}:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !yamlReady(e) {
				return false
			}
		}
		return true
	}
	return false
}

// asParsed is what go-yaml parses from v's JSON (see MarshalYAML): the values yamlReady accepts are kept, the
// others take the round trip.
func asParsed(v interface{}) (interface{}, error) {
	switch x := v.(type) {
	case map[string]interface{}:
		if x == nil {
			return nil, nil
		}
		out := make(map[string]interface{}, len(x))
		for k, e := range x {
			if !plainASCII(k) {
				return roundTrip(v)
			}
			p, err := asParsed(e)
			if err != nil {
				return nil, err
			}
			out[k] = p
		}
		return out, nil
	case []interface{}:
		if x == nil {
			return nil, nil
		}
		out := make([]interface{}, len(x))
		for i, e := range x {
			p, err := asParsed(e)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	}
	if yamlReady(v) {
		return v, nil
	}
	return roundTrip(v)
}

// roundTrip is sigs.k8s.io/yaml's JSON round trip of one value.
func roundTrip(v interface{}) (interface{}, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %w", err)
	}
	var out interface{}
	if err := goyaml.Unmarshal(j, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// plainASCII says whether s is printable ASCII, tabs and newlines: a string the JSON round trip gives back as it is.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c >= 0x7f {
			return false
		}
	}
	return true
}

// UnmarshalYAML is sigs.k8s.io/yaml.Unmarshal(data, &m) for a map m, without its JSON round trip: go-yaml parses
// data and what it gives is what the JSON decoder would give back (every number a float64); a document with
// anything else (keys that are not strings, strings that are not UTF-8, infinities, other types) takes the round
// trip itself.
func UnmarshalYAML(data []byte) (map[string]interface{}, error) {
	var parsed interface{}
	if err := goyaml.Unmarshal(data, &parsed); err == nil {
		if m, ok := parsed.(map[interface{}]interface{}); ok {
			if v, ok := asDecoded(m); ok {
				return v.(map[string]interface{}), nil
			}
		}
	}
	var m map[string]interface{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// asDecoded is what encoding/json decodes from v's JSON, when v holds only what it can say.
func asDecoded(v interface{}) (interface{}, bool) {
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		return x, utf8.ValidString(x)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, !math.IsInf(x, 0) && !math.IsNaN(x)
	case map[interface{}]interface{}:
		out := make(map[string]interface{}, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok || !utf8.ValidString(ks) {
				return nil, false
			}
			d, ok := asDecoded(e)
			if !ok {
				return nil, false
			}
			out[ks] = d
		}
		return out, true
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			d, ok := asDecoded(e)
			if !ok {
				return nil, false
			}
			out[i] = d
		}
		return out, true
	}
	return nil, false
}
