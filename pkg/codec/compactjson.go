package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// appendCompact appends the JSON of v as marshalCompact writes it (encoding/json's marshalling, then every empty
// object removed, keys sorted, HTML characters not escaped) in one walk over v, without the generic object
// marshalCompactGeneric builds. It knows the kinds Ignition's config types use (structs, pointers, slices, strings,
// booleans, integers) and errUnsupported stops it at any other (MarshalCompactJSON then takes the generic way).
// empty says the value was a struct whose object came out empty (the caller leaves the member out).
func appendCompact(buf []byte, v reflect.Value) (out []byte, empty bool, err error) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return append(buf, "null"...), false, nil
		}
		return appendCompact(buf, v.Elem())
	case reflect.Struct:
		return appendStruct(buf, v)
	case reflect.Slice:
		if v.IsNil() {
			return append(buf, "null"...), false, nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil, false, errUnsupported // encoding/json writes []byte as base64
		}
		buf = append(buf, '[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				buf = append(buf, ',')
			}
			// An element's empty object stays: pruneEmpty removes object members only.
			elem, elemEmpty, err := appendCompact(buf, v.Index(i))
			if err != nil {
				return nil, false, err
			}
			if elemEmpty {
				elem = append(buf, "{}"...)
			}
			buf = elem
		}
		return append(buf, ']'), false, nil
	case reflect.String:
		return appendJSONString(buf, v.String()), false, nil
	case reflect.Bool:
		return strconv.AppendBool(buf, v.Bool()), false, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(buf, v.Int(), 10), false, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(buf, v.Uint(), 10), false, nil
	}
	return nil, false, errUnsupported
}

var errUnsupported = errors.New("a kind the compact encoder does not know")

// appendStruct appends a struct's object: its members (fields, those of embedded structs promoted, as
// encoding/json does) in sorted key order, without omitempty's empty values and without empty objects.
func appendStruct(buf []byte, v reflect.Value) ([]byte, bool, error) {
	fields, err := structFields(v.Type())
	if err != nil {
		return nil, false, err
	}
	start := len(buf)
	buf = append(buf, '{')
	n := 0
	for _, f := range fields {
		fv, ok := fieldByIndex(v, f.index)
		if !ok || (f.omitEmpty && isEmptyValue(fv)) {
			continue
		}
		mark := len(buf)
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, f.name)
		buf = append(buf, ':')
		var empty bool
		if buf, empty, err = appendCompact(buf, fv); err != nil {
			return nil, false, err
		}
		if empty {
			buf = buf[:mark]
			continue
		}
		n++
	}
	if n == 0 {
		return buf[:start], true, nil
	}
	return append(buf, '}'), false, nil
}

// fieldByIndex is v's field at index, through embedded structs; false when an embedded pointer on the way is nil
// (encoding/json then leaves the field out).
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

type compactField struct {
	name      string
	index     []int
	omitEmpty bool
}

var structFieldCache sync.Map // reflect.Type -> []compactField

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

// structFields lists t's JSON members as encoding/json finds them, sorted by name. Types that marshal themselves,
// and two members of one name (encoding/json's depth rules), are left to the generic way (errUnsupported).
func structFields(t reflect.Type) ([]compactField, error) {
	if f, ok := structFieldCache.Load(t); ok {
		return f.([]compactField), nil
	}
	var fields []compactField
	var walk func(t reflect.Type, index []int) error
	walk = func(t reflect.Type, index []int) error {
		if t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType) ||
			t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
			return errUnsupported
		}
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			ft := sf.Type
			if sf.Anonymous {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && ft.Kind() == reflect.Struct {
					if err := walk(ft, idx); err != nil {
						return err
					}
					continue
				}
				if !sf.IsExported() && ft.Kind() != reflect.Struct {
					continue
				}
			} else if !sf.IsExported() {
				continue
			}
			if strings.Contains(","+opts+",", ",string,") {
				return errUnsupported
			}
			if name == "" {
				name = sf.Name
			}
			fields = append(fields, compactField{name: name, index: idx, omitEmpty: strings.Contains(","+opts+",", ",omitempty,")})
		}
		return nil
	}
	if err := walk(t, nil); err != nil {
		return nil, err
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].name < fields[j].name })
	for i := 1; i < len(fields); i++ {
		if fields[i].name == fields[i-1].name {
			return nil, errUnsupported
		}
	}
	structFieldCache.Store(t, fields)
	return fields, nil
}

// appendJSONString appends s as marshalCompactGeneric's final encoder writes it: encoding/json's escaping without
// the HTML escapes, of s with each invalid UTF-8 byte made U+FFFD (as the first marshalling did).
func appendJSONString(buf []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		buf = append(buf, '"')
		buf = append(buf, s...)
		return append(buf, '"')
	}
	if !utf8.ValidString(s) {
		var b strings.Builder
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteRune(utf8.RuneError)
			} else {
				b.WriteString(s[i : i+size])
			}
			i += size
		}
		s = b.String()
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(buf, bytes.TrimSuffix(out.Bytes(), []byte("\n"))...)
}

// MarshalCompactJSON marshals cfg (aio.ign's Ignition config) to JSON without the empty objects encoding/json emits for unset struct
// fields (`"verification":{}` and the like; an absent object means the same to Ignition). Object keys come
// out sorted, HTML characters are not escaped, and the output ends in a newline. It writes what
// marshalCompactGeneric writes (TestMarshalCompactMatchesGeneric), in one walk over cfg instead of marshalling,
// decoding into generic objects, pruning and encoding again (~15 ms of a render's CPU).
func MarshalCompactJSON(cfg any) ([]byte, error) {
	return MarshalCompactJSONSized(cfg, 1<<20)
}

// MarshalCompactJSONSized is MarshalCompactJSON into a buffer of size bytes to start with: a caller that knows
// about how long the JSON is (aio.ign's and live.ign's megabytes of data URLs) spares its growing.
func MarshalCompactJSONSized(cfg any, size int) ([]byte, error) {
	b, empty, err := appendCompact(make([]byte, 0, size), reflect.ValueOf(cfg))
	if errors.Is(err, errUnsupported) {
		return marshalCompactGeneric(cfg)
	}
	if err != nil {
		return nil, err
	}
	if empty {
		b = append(b, "{}"...)
	}
	return append(b, '\n'), nil
}

// marshalCompactGeneric is MarshalCompactJSON by way of generic objects: encoding/json's marshalling, decoded with
// its numbers as written, pruneEmpty, encoded again (sorted keys) without HTML escapes.
func marshalCompactGeneric(cfg any) ([]byte, error) {
	first, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(first))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	generic, _ = pruneEmpty(generic)
	return encodeWithoutHTMLEscapes(generic)
}

// encodeWithoutHTMLEscapes is encoding/json's encoding of v (object keys sorted) without its HTML escapes, ending
// in a newline.
func encodeWithoutHTMLEscapes(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pruneEmpty removes empty objects from v, recursively; it reports whether v itself became an empty
// object. Arrays, strings, numbers, booleans and null are kept as they are.
func pruneEmpty(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			pruned, empty := pruneEmpty(child)
			if empty {
				delete(x, k)
			} else {
				x[k] = pruned
			}
		}
		return x, len(x) == 0
	case []any:
		for i, child := range x {
			x[i], _ = pruneEmpty(child)
		}
		return x, false
	default:
		return v, false
	}
}

// MarshalObjectJSON is an unstructured object as compact JSON: encoding/json's (object keys sorted), without its
// HTML escapes, ending in a newline. Parsing it as YAML or JSON gives back the object's values.
func MarshalObjectJSON(obj map[string]interface{}) ([]byte, error) {
	return encodeWithoutHTMLEscapes(obj)
}
