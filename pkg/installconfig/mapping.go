// Mappings onto structs: the json fields of a Go struct, unknown keys (with the structs' own explanations), and
// YAML merge keys.

package installconfig

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// maxMergeDepth bounds nested YAML merge keys ("<<").
const maxMergeDepth = 32

// unknownFieldReporter is implemented by structs that explain unknown keys
// themselves; the detail is reported at the struct's own path.
type unknownFieldReporter interface {
	unknownFieldDetail(key string) string
}

func (*Platform) unknownFieldDetail(key string) string {
	return fmt.Sprintf(`only "none" is supported for single-node static rendering, got %s`, quoteShort(key))
}

func (*MachinePoolPlatform) unknownFieldDetail(key string) string {
	return fmt.Sprintf("machine pool platform settings are not supported for single-node static rendering, got %s", quoteShort(key))
}

type fieldInfo struct {
	index       int
	name        string
	nullIsEmpty bool
}

func fieldsOf(t reflect.Type) []fieldInfo {
	var fs []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		fs = append(fs, fieldInfo{i, name, f.Tag.Get("installconfig") == "nullIsEmpty"})
	}
	return fs
}

var simpleKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// joinPath appends a mapping key to a field path.
func joinPath(path, key string) string {
	if !simpleKey.MatchString(key) {
		return path + "[" + quoteShort(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

type keyValue struct{ key, value *yaml.Node }

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	fields := fieldsOf(v.Type())
	seen := map[string]bool{}
	for _, kv := range d.pairs(n, path, 0) {
		if d.tooBig {
			return
		}
		key := resolve(kv.key)
		if key == nil || key.Kind != yaml.ScalarNode {
			d.fail(path, "mapping keys must be strings, got %s", describe(key))
			continue
		}
		p := joinPath(path, key.Value)
		d.setPos(p, kv.key)
		if seen[key.Value] {
			d.fail(p, "duplicate key")
			continue
		}
		seen[key.Value] = true
		fi := -1
		for i, f := range fields {
			if f.name == key.Value {
				fi = i
				break
			}
		}
		if fi < 0 {
			d.unknownField(v, path, p, key.Value, fields)
			continue
		}
		d.decode(kv.value, v.Field(fields[fi].index), p, fields[fi].nullIsEmpty)
	}
}

func (d *decoder) unknownField(v reflect.Value, path, p, key string, fields []fieldInfo) {
	if r, ok := v.Addr().Interface().(unknownFieldReporter); ok {
		d.fail(path, "%s", r.unknownFieldDetail(key))
		return
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	if name := Suggest(key, names); name != "" {
		d.fail(p, "unknown field (did you mean %q?)", name)
		// Saying that the right spelling is missing would add nothing.
		d.failed = append(d.failed, joinPath(path, name))
		return
	}
	d.fail(p, "unknown field")
}

// pairs lists the key/value pairs of a mapping, with YAML merge keys ("<<")
// applied: keys written in the mapping win over merged ones, and earlier
// merged mappings win over later ones.
func (d *decoder) pairs(n *yaml.Node, path string, depth int) []keyValue {
	var explicit, merged []keyValue
	for i := 0; i+1 < len(n.Content); i += 2 {
		if d.nodes++; d.nodes > maxNodes {
			d.tooBig = true
			return nil
		}
		k, val := n.Content[i], n.Content[i+1]
		if rk := resolve(k); rk != nil && rk.Kind == yaml.ScalarNode && rk.ShortTag() == "!!merge" {
			merged = append(merged, d.mergeSources(val, path, depth)...)
			continue
		}
		explicit = append(explicit, keyValue{k, val})
	}
	if len(merged) == 0 {
		return explicit
	}
	have := map[string]bool{}
	for _, kv := range explicit {
		if k := resolve(kv.key); k != nil && k.Kind == yaml.ScalarNode {
			have[k.Value] = true
		}
	}
	out := explicit
	for _, kv := range merged {
		k := resolve(kv.key)
		if k != nil && k.Kind == yaml.ScalarNode {
			if have[k.Value] {
				continue
			}
			have[k.Value] = true
		}
		out = append(out, kv)
	}
	return out
}

func (d *decoder) mergeSources(val *yaml.Node, path string, depth int) []keyValue {
	mp := joinPath(path, "<<")
	if depth >= maxMergeDepth {
		d.fail(mp, "merge keys are nested too deeply")
		return nil
	}
	val = resolve(val)
	var sources []*yaml.Node
	switch {
	case val != nil && val.Kind == yaml.MappingNode:
		sources = []*yaml.Node{val}
	case val != nil && val.Kind == yaml.SequenceNode:
		for _, s := range val.Content {
			sources = append(sources, resolve(s))
		}
	default:
		d.fail(mp, "merge key needs a mapping or a list of mappings, got %s", describe(val))
		return nil
	}
	var out []keyValue
	for _, s := range sources {
		if s == nil || s.Kind != yaml.MappingNode {
			d.fail(mp, "merge key needs a mapping or a list of mappings, got a list with %s", describe(s))
			continue
		}
		out = append(out, d.pairs(s, path, depth+1)...)
	}
	return out
}
