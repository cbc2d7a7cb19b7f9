// Adaptations: the known, documented differences of manifests/<component>/conformance-adaptations.yaml, and
// how one explains a difference.

package conformance

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
)

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
