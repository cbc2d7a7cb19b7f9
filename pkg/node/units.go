package node

import (
	"path"
	"sort"
	"strings"

	"github.com/render-static/render-static/manifests"
)

// renderTemplate renders manifests/node/<name> with data; a missing key is an error.
func renderTemplate(name string, data any) (string, error) {
	b, err := manifests.Execute(path.Join("node", name), nil, data)
	return string(b), err
}

// readEmbedded returns manifests/node/<name> as it is (readScript gives the node's programs as installed).
func readEmbedded(name string) ([]byte, error) { return manifests.Read(path.Join("node", name)) }

// envLines turns variables into systemd Environment= lines, sorted by name. Values are quoted, and '%' (systemd
// specifiers), '"' and '\' are escaped, so any value reaches the process as it is.
func envLines(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%")
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = `Environment="` + esc.Replace(k+"="+env[k]) + `"`
	}
	return out
}
