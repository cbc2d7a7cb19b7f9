// Package conformance compares a render with what the real operators produce, laid out like
// testdata/conformance/sno/expected: pods/ (static pods, embedded shell scripts summarised to their exec
// statements), rootfs/ (non-secret config files) and FILES.txt ("<mode> <path>" of every file the installer wrote).
//
// It normalises what must differ between two renders — revision numbers, certificate material, image names
// (mapped back to component names), generated names (the infrastructure ID), version strings — and reports every
// other difference with its path:
//
//	pods/<file>:<field path>        a static pod field (lists of named items are keyed by name)
//	rootfs/<path>:<field path>      a config file field (YAML/JSON files), or a line of an env file
//	files:<path>                    a file missing, extra, or with another mode
//
// Known differences are documented with their cause in manifests/<component>/conformance-adaptations.yaml and
// reported apart; only unexplained differences fail.
package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/inventory"
)

// Components are the control-plane components a render and an expected tree hold: the registry's.
var Components = components.Names()

// Options say what to compare.
type Options struct {
	RenderDir   string // a render's output directory (holds rootfs/)
	ExpectedDir string // holds pods/, rootfs/, FILES.txt
	Components  []string
	// Images maps component names to the pull specs the render used; images are compared by component.
	Images map[string]string
}

// Difference is one thing that differs.
type Difference struct {
	Path     string
	Expected string
	Got      string
	Reason   string // for known adaptations
	// want and got are the whole normalised values (Expected and Got may be cut to a window).
	want, got interface{}
}

func (d Difference) String() string {
	s := fmt.Sprintf("%s: expected %s, got %s", d.Path, d.Expected, d.Got)
	if d.Reason != "" {
		s += "\n      because: " + d.Reason
	}
	return s
}

// Report is the result of a comparison.
type Report struct {
	Components  []string
	Compared    int // pods, config files and file entries compared
	Unexplained []Difference
	Adapted     []Difference
	// Unused are the adaptations of the compared components that explain no difference (stale), by their Key.
	Unused []string
}

// OK says whether nothing unexplained remains.
func (r *Report) OK() bool { return len(r.Unexplained) == 0 }

// Write prints the report.
func (r *Report) Write(w io.Writer) {
	fmt.Fprintf(w, "conformance of %s: %d items compared, %d unexplained differences, %d known adaptations\n",
		strings.Join(r.Components, ", "), r.Compared, len(r.Unexplained), len(r.Adapted))
	if len(r.Unexplained) > 0 {
		fmt.Fprintln(w, "\nunexplained differences:")
		for _, d := range r.Unexplained {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	if len(r.Adapted) > 0 {
		fmt.Fprintln(w, "\nknown adaptations (documented in manifests/<component>/conformance-adaptations.yaml):")
		for _, d := range r.Adapted {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
}

// Compare runs the comparison.
func Compare(o Options) (*Report, error) {
	comps := o.Components
	if len(comps) == 0 {
		comps = Components
	}
	for _, c := range comps {
		if !contains(Components, c) {
			return nil, fmt.Errorf("{component}: unknown component %q (known: %s)", c, strings.Join(Components, ", "))
		}
	}
	for _, d := range []string{filepath.Join(o.RenderDir, "rootfs"), filepath.Join(o.ExpectedDir, "pods")} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%s is not a directory: is it a render output / an expected tree?", d)
		}
	}
	adaptations, err := LoadAdaptations(comps)
	if err != nil {
		return nil, err
	}
	run, err := runningRevisions(filepath.Join(o.RenderDir, "rootfs"))
	if err != nil {
		return nil, err
	}
	c := &comparison{opts: o, comps: comps, norm: newNormalizer(o), running: run}
	if err := c.pods(); err != nil {
		return nil, err
	}
	if err := c.configFiles(); err != nil {
		return nil, err
	}
	if err := c.fileList(); err != nil {
		return nil, err
	}
	r := &Report{Components: comps, Compared: c.compared}
	used := make([]bool, len(adaptations))
	for _, d := range c.diffs {
		if i, ok := adaptations.explain(d); ok {
			used[i] = true
			d.Reason = adaptations[i].Reason
			r.Adapted = append(r.Adapted, d)
		} else {
			r.Unexplained = append(r.Unexplained, d)
		}
	}
	for i, a := range adaptations {
		if !used[i] {
			r.Unused = append(r.Unused, a.Key())
		}
	}
	return r, nil
}

type comparison struct {
	opts  Options
	comps []string
	norm  *normalizer
	// running is what the render's static pods run: its revision directories are compared with the expected
	// tree's (revision 1), whatever their number; the directories of other revisions are not compared.
	running  inventory.Running
	diffs    []Difference
	compared int
}

func (c *comparison) add(path string, expected, got interface{}) {
	e, g := around(show(expected), show(got))
	c.diffs = append(c.diffs, Difference{Path: path, Expected: e, Got: g, want: expected, got: got})
}

// around cuts two long renderings to a window around their first difference, so a changed flag in a long
// command line is visible.
func around(e, g string) (string, string) {
	const before, after = 120, 160
	if len(e) <= before+after && len(g) <= before+after {
		return e, g
	}
	i := 0
	for i < len(e) && i < len(g) && e[i] == g[i] {
		i++
	}
	cut := func(s string) string {
		start, end := i-before, i+after
		prefix, suffix := "…", "…"
		if start <= 0 {
			start, prefix = 0, ""
		}
		if end >= len(s) {
			end, suffix = len(s), ""
		}
		if start > end {
			start = end
		}
		return prefix + s[start:end] + suffix
	}
	return cut(e), cut(g)
}

// show renders a value as JSON text: quoted strings, lists and objects, but "<", ">" and "&" as themselves.
func show(v interface{}) string {
	if v == nil {
		return "(none)"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// ownedBy says whether a node path belongs to a component: its manifests, its revision and cert directories.
func ownedBy(p, comp string) bool {
	base := filepath.Base(p)
	if strings.HasPrefix(p, "etc/kubernetes/manifests/") {
		return strings.HasPrefix(base, comp+"-pod.yaml") || (comp == "kube-apiserver" && strings.HasPrefix(base, "kube-apiserver-startup-monitor"))
	}
	const res = "etc/kubernetes/static-pod-resources/"
	if strings.HasPrefix(p, res) {
		dir := strings.SplitN(strings.TrimPrefix(p, res), "/", 2)[0]
		return strings.HasPrefix(dir, comp+"-pod-") || dir == comp+"-certs"
	}
	return false
}

func (c *comparison) owned(p string) bool {
	for _, comp := range c.comps {
		if ownedBy(p, comp) {
			return true
		}
	}
	return false
}
