package installconfig

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"

	"github.com/render-static/render-static/internal/inputfile"
)

// maxFileSize bounds what Load reads; install-configs are a few kilobytes.
const maxFileSize = 64 << 20

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
	return LoadData(data, path, nodeIPs)
}

// LoadData is Load of an install-config's contents; name names it in the errors that are not about a field.
func LoadData(data []byte, name string, nodeIPs []netip.Addr) (*InstallConfig, error) {
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: larger than %d MiB; this is not an install-config", name, maxFileSize>>20)
	}
	ic, err := load(data, nodeIPs)
	if err != nil {
		var list ErrorList
		if errors.As(err, &list) {
			return nil, list
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ic, nil
}

func readFile(path string) ([]byte, error) {
	data, err := inputfile.Read(path)
	if err != nil {
		return nil, err
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
