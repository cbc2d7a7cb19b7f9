// The decoder: it walks the YAML tree along the Go types and their json tags, scalar by scalar.

package installconfig

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// maxNodes bounds the decoding work for documents that reuse anchors many
// times (each alias is decoded again where it is used).
const maxNodes = 1_000_000

// decoder walks the YAML tree along the Go types and their json tags.
type decoder struct {
	errs   ErrorList
	failed []string
	meta   *parseMeta
	nodes  int
	tooBig bool
}

func (d *decoder) fail(path, format string, args ...any) {
	if path == "" {
		path = "(top level)"
	}
	d.errs = append(d.errs, FieldError{Field: path, Detail: fmt.Sprintf(format, args...)})
	d.failed = append(d.failed, path)
}

func (d *decoder) setPos(path string, n *yaml.Node) {
	if _, ok := d.meta.pos[path]; !ok {
		d.meta.pos[path] = position{n.Line, n.Column}
	}
}

// typeHints add advice to type errors at some fields.
var typeHints = map[string]string{
	"pullSecret": " (put the JSON pull secret in single quotes)",
	"platform":   ` (use "platform: {none: {}}")`,
}

func (d *decoder) typeError(n *yaml.Node, path, want string) {
	d.fail(path, "expected %s, got %s%s", want, describe(n), typeHints[path])
}

// decode stores node n into v. A null leaves v at its zero value, except for
// a field tagged installconfig:"nullIsEmpty", which gets an empty struct.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, nullIsEmpty bool) {
	if d.tooBig {
		return
	}
	if d.nodes++; d.nodes > maxNodes {
		d.tooBig = true
		return
	}
	n = resolve(n)
	if n == nil {
		d.fail(path, "alias could not be resolved")
		return
	}
	if isNull(n) {
		if nullIsEmpty && v.Kind() == reflect.Pointer {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		d.decode(n, elem.Elem(), path, false)
		v.Set(elem)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.typeError(n, path, "a mapping")
			return
		}
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.typeError(n, path, "a list")
			return
		}
		if len(n.Content) == 0 {
			return // an empty list is the same as none
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.setPos(p, item)
			d.decode(item, s.Index(i), p, false)
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.typeError(n, path, "a string")
			return
		}
		if !utf8.ValidString(n.Value) {
			d.fail(path, "is not valid UTF-8 text")
			return
		}
		// Like the installer, a scalar that YAML reads as a number or a
		// boolean is taken as written: "name: 123" is the string "123".
		v.SetString(n.Value)
	case reflect.Bool:
		b, ok := scalarBool(n)
		if !ok {
			d.typeError(n, path, "a boolean (true or false)")
			return
		}
		v.SetBool(b)
	case reflect.Int32, reflect.Int64:
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" && bigInteger.MatchString(n.Value) {
			// YAML reads integers too large for 64 bits as floats.
			d.fail(path, "integer %s is out of range", shorten(n.Value))
			return
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			d.typeError(n, path, "an integer")
			return
		}
		var i int64
		if err := safeDecode(n, &i); err != nil || v.OverflowInt(i) {
			d.fail(path, "%s", badInteger(n.Value))
			return
		}
		v.SetInt(i)
	default:
		panic(fmt.Sprintf("installconfig: field %s has unsupported Go type %s", path, v.Type()))
	}
}

var bigInteger = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

func badInteger(s string) string {
	_, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, 64)
	if err == nil || errors.Is(err, strconv.ErrRange) {
		return fmt.Sprintf("integer %s is out of range", shorten(s))
	}
	return fmt.Sprintf("%s is not a valid integer", quoteShort(s))
}

// yaml11Bools are the YAML 1.1 booleans the installer's YAML library accepts
// when unquoted, beyond YAML 1.2's true and false.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

func scalarBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode {
		return false, false
	}
	if n.ShortTag() == "!!bool" {
		var b bool
		if err := safeDecode(n, &b); err == nil {
			return b, true
		}
		return false, false
	}
	if n.Style == 0 { // plain, without an explicit tag
		b, ok := yaml11Bools[n.Value]
		return b, ok
	}
	return false, false
}

func safeDecode(n *yaml.Node, out any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return n.Decode(out)
}
