// The structural diff of two normalised values, with lists of named items keyed by name.

package conformance

import (
	"fmt"
	"strings"
)

// diff compares two normalised values recursively. Lists whose items all have a "name" are compared by name
// (volumeMounts by mountPath), so that the path of a difference names the container, volume or variable.
func (c *comparison) diff(path string, want, got interface{}) {
	switch w := want.(type) {
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			c.add(strings.TrimSuffix(path, "."), want, got)
			return
		}
		sep := "."
		if strings.HasSuffix(path, ":") {
			sep = ""
		}
		for _, k := range sortedKeys(w, g) {
			c.diff(strings.TrimSuffix(path, ".")+sep+k, w[k], g[k])
		}
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok {
			c.add(path, want, got)
			return
		}
		if wk, gk := keyed(w), keyed(g); wk != nil && gk != nil {
			for _, k := range sortedKeys(wk, gk) {
				c.diff(fmt.Sprintf("%s[%s]", path, k), wk[k], gk[k])
			}
			return
		}
		if len(w) != len(g) {
			c.add(path, want, got)
			return
		}
		for i := range w {
			c.diff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) || (want == nil) != (got == nil) {
			c.add(path, want, got)
		}
	}
}

// keyed indexes a list by its items' identity: name, else mountPath, else nil.
func keyed(l []interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for _, it := range l {
		m, ok := it.(map[string]interface{})
		if !ok {
			return nil
		}
		var k string
		switch {
		case m["name"] != nil && m["mountPath"] != nil:
			k = fmt.Sprintf("%v@%v", m["name"], m["mountPath"])
		case m["name"] != nil:
			k = fmt.Sprint(m["name"])
		case m["mountPath"] != nil:
			k = fmt.Sprint(m["mountPath"])
		default:
			return nil
		}
		if _, dup := out[k]; dup {
			return nil
		}
		out[k] = it
	}
	return out
}
