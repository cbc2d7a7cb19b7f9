// The one YAML document of an install-config: reading it (one mapping, YAML 1.1 errors preferred) and
// describing its nodes for error messages.

package installconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	yaml2 "go.yaml.in/yaml/v2"
	yaml "go.yaml.in/yaml/v3"
)

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
