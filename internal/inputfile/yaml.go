package inputfile

import (
	"bytes"
	"errors"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// DecodeStrict decodes one YAML document of an input file (a fleet's site file or site list, a workers file) into
// v, refusing unknown fields; its error says what is wrong at which line ("line 2: field nodeIp not found"),
// without the file.
func DecodeStrict(raw []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines := make([]string, len(te.Errors))
		for i, e := range te.Errors {
			if j := strings.Index(e, " in type "); j > 0 {
				e = e[:j] // the Go type says nothing to the reader of the file
			}
			lines[i] = e
		}
		return errors.New(strings.Join(lines, "; "))
	}
	return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
}
