package export

import (
	"encoding/base64"
	"fmt"

	"github.com/render-static/render-static/pkg/codec"
)

// SecretsAsText writes every exported Secret's text values as stringData instead of base64 in data: the
// certificates, keys, kubeconfigs and tokens the node's files (the installer layout) and the ConfigMaps' CA
// bundles already hold as text, so that xz, which compresses the embedded live.ign, finds each PEM once instead of
// once as text and once as base64 (the bundled example's live.ign: ~40 KB less of the ISO's 256 KiB embed area).
//
// The API server stores the same object: the Secret's v1 stringData is a write-only field that its conversion to
// the internal type merges into data, each value's UTF-8 bytes, over a data key of the same name
// (kubernetes pkg/apis/core/v1/conversion.go, Convert_v1_Secret_To_core_Secret; the internal Secret has no
// stringData, so nothing of it is stored or read back). That conversion runs for every write, so the first-boot
// apply's `create` (aiokube) and aio-update's server-side apply store exactly the bytes base64 gave (the e2e reads
// every exported Secret back from the node's API server and compares its data: test/e2e checkSecretsData).
//
// A value moves to stringData only when it reads back as the same bytes from the manifest's YAML whatever parses
// it: printable ASCII, tab and newline (isText); anything else (binary, other control bytes, non-ASCII) stays in
// data, base64, as before. Manifests are changed in place (Object and YAML).
func SecretsAsText(ms []Manifest) error {
	return Parallel(len(ms), func(i int) error {
		m := &ms[i]
		if !m.Secret() {
			return nil
		}
		data, ok := m.Object["data"].(map[string]interface{})
		if !ok || len(data) == 0 {
			return nil
		}
		if _, has := m.Object["stringData"]; has {
			return nil // written as the render made it
		}
		text := map[string]interface{}{}
		for k, v := range data {
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("%s: data.%s is not a string", m.File, k)
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return fmt.Errorf("%s: data.%s: %w", m.File, k, err)
			}
			if isText(b) {
				text[k] = string(b)
			}
		}
		if len(text) == 0 {
			return nil
		}
		obj := make(map[string]interface{}, len(m.Object)+1)
		for k, v := range m.Object {
			obj[k] = v
		}
		if len(text) == len(data) {
			delete(obj, "data")
		} else {
			rest := make(map[string]interface{}, len(data)-len(text))
			for k, v := range data {
				if _, moved := text[k]; !moved {
					rest[k] = v
				}
			}
			obj["data"] = rest
		}
		obj["stringData"] = text
		y, err := codec.MarshalYAML(obj)
		if err != nil {
			return fmt.Errorf("%s: %w", m.File, err)
		}
		m.Object, m.YAML = obj, y
		return nil
	})
}

// isText says whether b is printable ASCII, tabs and newlines: bytes that JSON and YAML (in any of the scalar
// styles the emitter picks: plain, quoted or a literal block) give back unchanged, where a carriage return, other
// control bytes, a byte-order mark or YAML's other line breaks (U+0085, U+2028, U+2029) may be normalized, and
// bytes that are not UTF-8 could not be a string at all.
func isText(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 && c != '\t' && c != '\n') || c >= 0x7f {
			return false
		}
	}
	return true
}

// SecretData is a Secret manifest's values as the API server stores them in data: data's, base64-decoded, with
// stringData's merged over them (Convert_v1_Secret_To_core_Secret). obj is the manifest's object.
func SecretData(obj map[string]interface{}) (map[string][]byte, error) {
	out := map[string][]byte{}
	if data, ok := obj["data"].(map[string]interface{}); ok {
		for k, v := range data {
			s, _ := v.(string)
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("data.%s: %w", k, err)
			}
			out[k] = b
		}
	}
	if text, ok := obj["stringData"].(map[string]interface{}); ok {
		for k, v := range text {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("stringData.%s is not a string", k)
			}
			out[k] = []byte(s)
		}
	}
	return out, nil
}
