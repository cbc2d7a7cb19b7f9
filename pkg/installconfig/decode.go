package installconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml2 "go.yaml.in/yaml/v2"
	yaml "go.yaml.in/yaml/v3"
)

// maxFileSize bounds what Load reads; install-configs are a few kilobytes.
const maxFileSize = 64 << 20

// maxNodes bounds the decoding work for documents that reuse anchors many
// times (each alias is decoded again where it is used).
const maxNodes = 1_000_000

// maxMergeDepth bounds nested YAML merge keys ("<<").
const maxMergeDepth = 32

// Parse decodes an install-config strictly: unknown fields, duplicate keys and
// values of the wrong type are reported with their path, all at once, as an
// ErrorList. An empty document, invalid YAML, several documents or a document
// that is not a mapping give a plain error. On success the defaults are set
// (see SetDefaults); Parse does not Validate.
func Parse(data []byte) (*InstallConfig, error) {
	ic, errs, _, err := parse(data)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return ic, nil
}

// Load reads the file at path, parses and validates it with nodeIPs (see
// Validate), and reports every problem at once. Problems with fields are
// returned as an ErrorList (decode problems and rule violations together, in
// document order); other errors (reading the file, invalid YAML) mention the
// path.
func Load(path string, nodeIPs []netip.Addr) (*InstallConfig, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	ic, err := load(data, nodeIPs)
	if err != nil {
		var list ErrorList
		if errors.As(err, &list) {
			return nil, list
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ic, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: larger than %d MiB; this is not an install-config", path, maxFileSize>>20)
	}
	return data, nil
}

// load is Load without the file: decode problems and rule violations are
// reported together; rule violations about fields that failed to decode are
// left out.
func load(data []byte, nodeIPs []netip.Addr) (*InstallConfig, error) {
	ic, perrs, failed, err := parse(data)
	if err != nil {
		return nil, err
	}
	all := append(perrs, withoutFailed(ic.validate(nodeIPs), failed)...)
	if all = finalize(all, ic.meta); len(all) > 0 {
		return nil, all
	}
	return ic, nil
}

// parse returns the config as far as it could be decoded, the field errors,
// the paths of the fields that could not be decoded, or an error about the
// document as a whole.
func parse(data []byte) (*InstallConfig, ErrorList, []string, error) {
	root, err := readDocument(data)
	if err != nil {
		return nil, nil, nil, err
	}
	d := &decoder{meta: &parseMeta{pos: map[string]position{}}}
	ic := &InstallConfig{}
	d.decodeStruct(root, reflect.ValueOf(ic).Elem(), "")
	if d.tooBig {
		return nil, nil, nil, errors.New("install-config is too large once its YAML aliases are expanded")
	}
	ic.meta = d.meta
	ic.SetDefaults()
	return ic, finalize(d.errs, d.meta), d.failed, nil
}

// readDocument parses data as exactly one YAML document holding a mapping.
func readDocument(data []byte) (root *yaml.Node, err error) {
	defer func() {
		// The YAML library is not expected to panic; if it does, the input
		// is still only invalid YAML, not a reason to crash the caller.
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("install-config is not valid YAML: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("install-config is empty")
		}
		return nil, yamlError(data, err)
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, yamlError(data, err)
		}
		if !emptyDocument(&next) {
			return nil, fmt.Errorf("install-config must be a single YAML document, found another one at line %d", next.Line)
		}
	}
	if emptyDocument(&doc) {
		return nil, errors.New("install-config is empty")
	}
	root = resolve(doc.Content[0])
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("install-config must be a YAML mapping, got %s", describe(root))
	}
	return root, nil
}

func emptyDocument(doc *yaml.Node) bool {
	if len(doc.Content) == 0 {
		return true
	}
	return isNull(resolve(doc.Content[0]))
}

// yamlError describes a YAML syntax error. The YAML 1.1 parser (the one the
// installer uses) reports lines more accurately for some errors, so its
// message is preferred when it rejects the document too.
func yamlError(data []byte, err error) error {
	msg := err.Error()
	var typeErr *yaml2.TypeError
	if err2 := yaml11Error(data); err2 != nil && !errors.As(err2, &typeErr) {
		msg = err2.Error()
	}
	return errors.New("install-config is not valid YAML: " + strings.TrimPrefix(msg, "yaml: "))
}

func yaml11Error(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = nil
		}
	}()
	var v any
	return yaml2.Unmarshal(data, &v)
}

// resolve follows aliases; it returns nil for a dangling or looping alias.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 64 {
			return nil
		}
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe says what a node is, for "expected X, got Y" messages. Scalars
// are echoed, shortened.
func describe(n *yaml.Node) string {
	if n == nil {
		return "an unresolvable alias"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := shorten(n.Value)
		switch tag := n.ShortTag(); tag {
		case "!!str":
			return "string " + quoteShort(n.Value)
		case "!!int":
			return "integer " + v
		case "!!float":
			return "number " + v
		case "!!bool":
			return "boolean " + v
		case "!!null":
			return "null"
		default:
			return fmt.Sprintf("%s value %s", shorten(tag), quoteShort(n.Value))
		}
	}
	return "an unsupported YAML node"
}

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
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			d.fail(p, "unknown field (did you mean %q?)", f.name)
			// Saying that the right spelling is missing would add nothing.
			d.failed = append(d.failed, joinPath(path, f.name))
			return
		}
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
