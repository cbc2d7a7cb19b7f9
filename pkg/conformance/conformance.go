// Package conformance compares a render with what the real operators produce, laid out like
// ../shared/conformance/sno/expected: pods/ (static pods, embedded shell scripts summarised to their exec
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
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/components"
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
			return nil, fmt.Errorf("--component: unknown component %q (known: %s)", c, strings.Join(Components, ", "))
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
	n, err := newNormalizer(o)
	if err != nil {
		return nil, err
	}
	c := &comparison{opts: o, comps: comps, norm: n}
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
	opts     Options
	comps    []string
	norm     *normalizer
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

func show(v interface{}) string {
	if v == nil {
		return "(none)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
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

// pods compares every expected static pod of the components with the render's manifest of the same name.
func (c *comparison) pods() error {
	entries, err := os.ReadDir(filepath.Join(c.opts.ExpectedDir, "pods"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !c.owned("etc/kubernetes/manifests/" + name) {
			continue
		}
		c.compared++
		label := "pods/" + name
		expected, err := readObject(filepath.Join(c.opts.ExpectedDir, "pods", name))
		if err != nil {
			return err
		}
		gotPath := filepath.Join(c.opts.RenderDir, "rootfs", "etc", "kubernetes", "manifests", name)
		if _, err := os.Stat(gotPath); err != nil {
			c.add(label, "a static pod", nil)
			continue
		}
		got, err := readObject(gotPath)
		if err != nil {
			return err
		}
		c.diff(label+":", c.norm.pod(expected, true), c.norm.pod(got, false))
	}
	return nil
}

// configFiles compares every file of the expected rootfs/ that belongs to the components.
func (c *comparison) configFiles() error {
	root := filepath.Join(c.opts.ExpectedDir, "rootfs")
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if !c.owned(rel) {
			return nil
		}
		c.compared++
		label := "rootfs/" + rel
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(c.opts.RenderDir, "rootfs", rel))
		if err != nil {
			c.add(label, "a file", nil)
			return nil
		}
		base := filepath.Base(rel)
		switch {
		case base == "version" || base == "forceRedeploymentReason":
			// operator version strings and redeployment reasons differ by design
		case strings.HasSuffix(base, ".env"):
			c.diffEnvFile(label, string(want), string(got))
		default:
			var wv, gv interface{}
			if yaml.Unmarshal(want, &wv) == nil && yaml.Unmarshal(got, &gv) == nil && isStructured(wv) {
				c.diff(label+":", c.norm.value(wv, true), c.norm.value(gv, false))
			} else if w, g := c.norm.text(string(want), true), c.norm.text(string(got), false); w != g {
				c.add(label, w, g)
			}
		}
		return nil
	})
}

func isStructured(v interface{}) bool {
	switch v.(type) {
	case map[string]interface{}, []interface{}:
		return true
	}
	return false
}

// diffEnvFile compares "export K=V" files as sets of assignments.
func (c *comparison) diffEnvFile(label, want, got string) {
	parse := func(s string, expected bool) map[string]string {
		out := map[string]string{}
		sc := bufio.NewScanner(strings.NewReader(s))
		for sc.Scan() {
			line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export "))
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, _ := strings.Cut(line, "=")
			out[k] = c.norm.text(strings.Trim(v, `"`), expected)
		}
		return out
	}
	w, g := parse(want, true), parse(got, false)
	for _, k := range sortedKeys(w, g) {
		if w[k] != g[k] {
			var wv, gv interface{}
			if v, ok := w[k]; ok {
				wv = v
			}
			if v, ok := g[k]; ok {
				gv = v
			}
			c.add(label+":"+k, wv, gv)
		}
	}
}

// fileList compares FILES.txt with the files of the render's rootfs that belong to the components.
func (c *comparison) fileList() error {
	f, err := os.Open(filepath.Join(c.opts.ExpectedDir, "FILES.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		mode, p, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok || !c.owned(p) {
			continue
		}
		want[c.norm.path(p)] = mode
	}
	if err := sc.Err(); err != nil {
		return err
	}
	got := map[string]string{}
	root := filepath.Join(c.opts.RenderDir, "rootfs")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if !c.owned(rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		got[c.norm.path(rel)] = strconv.FormatUint(uint64(info.Mode().Perm()), 8)
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range sortedKeys(want, got) {
		c.compared++
		w, wok := want[p]
		g, gok := got[p]
		switch {
		case !gok:
			c.add("files:"+p, "mode "+w, nil)
		case !wok:
			c.add("files:"+p, nil, "mode "+g)
		case w != g:
			c.add("files:"+p, "mode "+w, "mode "+g)
		}
	}
	return nil
}

func sortedKeys[V any](ms ...map[string]V) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func readObject(p string) (interface{}, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var v interface{}
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return v, nil
}

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
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		sep := "."
		if strings.HasSuffix(path, ":") {
			sep = ""
		}
		for _, k := range names {
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

// Adaptation is a known, documented difference. Path is a pattern over difference paths where '*' matches any
// run of characters. Excuse names exactly what the adaptation is about inside the value at Path:
//
//   - a flag ("--initial-cluster"): every word "--initial-cluster" or "--initial-cluster=<value>" of a command
//     line, an exec statement of a script, or a list of arguments;
//   - a key ("MutatingAdmissionPolicy"): every "MutatingAdmissionPolicy=<value>" item of a list or word of a
//     string;
//   - any other word or list item, exactly.
//
// The difference is explained only when both sides are equal once the excused words and items are taken out of
// each (for a script: out of every exec statement, the statements then compared as sets), so any other change in
// the same field or script is still reported. An adaptation without Excuse covers the whole value at Path (a file,
// a field that is itself the key), and never a script or a command line: those must name what they excuse.
type Adaptation struct {
	Path   string   `json:"path"`
	Excuse []string `json:"excuse,omitempty"`
	Reason string   `json:"reason"`
	re     *regexp.Regexp
}

// Key names an adaptation in reports: its path, and what it excuses.
func (a Adaptation) Key() string {
	if len(a.Excuse) == 0 {
		return a.Path
	}
	return a.Path + " (" + strings.Join(a.Excuse, ", ") + ")"
}

type adaptations []Adaptation

// explain returns the index of the first adaptation that explains a difference.
func (a adaptations) explain(d Difference) (int, bool) {
	for i, x := range a {
		if x.re.MatchString(d.Path) && x.covers(d.want, d.got) {
			return i, true
		}
	}
	return -1, false
}

// covers says whether the adaptation accounts for all of the difference between two values at its path.
func (a Adaptation) covers(want, got interface{}) bool {
	if len(a.Excuse) == 0 {
		return !manyWords(want) && !manyWords(got)
	}
	w, wCut := a.without(want)
	g, gCut := a.without(got)
	return (wCut || gCut) && w == g
}

// manyWords: a script summary or a command line (several words, one of them a flag).
func manyWords(v interface{}) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	if strings.HasPrefix(s, scriptPrefix) {
		return true
	}
	words := strings.Fields(s)
	return len(words) > 1 && slices.ContainsFunc(words, func(w string) bool { return strings.HasPrefix(w, "-") })
}

const scriptPrefix = "<script exec: "

// excused says whether a word or list item is one the adaptation names.
func (a Adaptation) excused(word string) bool {
	key, _, _ := strings.Cut(word, "=")
	for _, e := range a.Excuse {
		if word == e || key == e {
			return true
		}
	}
	return false
}

// without renders a value with the excused words and items taken out, and says whether any was.
func (a Adaptation) without(v interface{}) (string, bool) {
	cut := false
	words := func(s string) string {
		var keep []string
		for _, w := range strings.Fields(s) {
			if a.excused(w) {
				cut = true
				continue
			}
			keep = append(keep, w)
		}
		return strings.Join(keep, " ")
	}
	switch x := v.(type) {
	case string:
		if body, ok := strings.CutPrefix(x, scriptPrefix); ok {
			seen := map[string]bool{}
			var stmts []string
			for _, st := range strings.Split(strings.TrimSuffix(body, ">"), " ;; ") {
				if st = words(st); !seen[st] {
					seen[st] = true
					stmts = append(stmts, st)
				}
			}
			sort.Strings(stmts)
			return scriptPrefix + strings.Join(stmts, " ;; ") + ">", cut
		}
		return words(x), cut
	case []interface{}:
		var keep []interface{}
		for _, it := range x {
			if s, ok := it.(string); ok && a.excused(s) {
				cut = true
				continue
			}
			keep = append(keep, it)
		}
		return show(keep), cut
	}
	return show(v), false
}

// mustPattern turns an adaptation path ('*' matches any run of characters) into a regexp.
func mustPattern(p string) *regexp.Regexp {
	return regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, ".*") + "$")
}

// LoadAdaptations reads manifests/<component>/conformance-adaptations.yaml of each component (a missing file
// means none). Every entry needs a path and a reason.
func LoadAdaptations(comps []string) (adaptations, error) {
	var out adaptations
	for _, comp := range comps {
		name := comp + "/conformance-adaptations.yaml"
		raw, err := manifests.Read(name)
		if err != nil {
			continue
		}
		var list []Adaptation
		if err := yaml.UnmarshalStrict(raw, &list); err != nil {
			return nil, fmt.Errorf("manifests/%s: %w", name, err)
		}
		for i, a := range list {
			if a.Path == "" || strings.TrimSpace(a.Reason) == "" {
				return nil, fmt.Errorf("manifests/%s[%d]: every adaptation needs a path and a reason", name, i)
			}
			for j, e := range a.Excuse {
				if e == "" || strings.ContainsAny(e, " *=") {
					return nil, fmt.Errorf("manifests/%s[%d].excuse[%d]: %q must name one flag, key or word (no spaces, '*' or '=')", name, i, j, e)
				}
			}
			a.re = mustPattern(a.Path)
			out = append(out, a)
		}
	}
	return out, nil
}
