package installconfig

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// position is where a field starts in the document (1-based).
type position struct{ line, col int }

// parseMeta is what Parse learnt about the document.
type parseMeta struct {
	// pos maps field paths ("networking.clusterNetwork[0].cidr") to the
	// position of their key (or, for list entries, of the entry).
	pos map[string]position
}

// present reports whether the field was written in the document.
func (m *parseMeta) present(field string) bool {
	if m == nil {
		return false
	}
	_, ok := m.pos[field]
	return ok
}

// positionOf returns the position of field or of its nearest ancestor that
// the document has.
func (m *parseMeta) positionOf(field string) (position, bool) {
	if m == nil {
		return position{}, false
	}
	for f := field; f != ""; f = parentPath(f) {
		if p, ok := m.pos[f]; ok {
			return p, true
		}
	}
	return position{}, false
}

// parentPath strips the last element of a field path:
// "a.b[0].c" -> "a.b[0]" -> "a.b" -> "a" -> "".
func parentPath(f string) string {
	if strings.HasSuffix(f, "]") {
		if i := strings.LastIndexByte(f, '['); i > 0 {
			return f[:i]
		}
	}
	if i := strings.LastIndexByte(f, '.'); i >= 0 {
		return f[:i]
	}
	return ""
}

// finalize removes duplicates and orders the list by the document position
// of each field (or of its nearest ancestor in the document). Entries whose
// field is not in the document keep their relative order, after the others.
// It returns nil for an empty list.
func finalize(errs ErrorList, meta *parseMeta) ErrorList {
	if len(errs) == 0 {
		return nil
	}
	seen := make(map[FieldError]bool, len(errs))
	out := make(ErrorList, 0, len(errs))
	for _, e := range errs {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	if meta == nil {
		return out
	}
	type keyed struct {
		e     FieldError
		pos   position
		known bool
	}
	ks := make([]keyed, len(out))
	for i, e := range out {
		p, ok := meta.positionOf(e.Field)
		ks[i] = keyed{e, p, ok}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if a.known != b.known {
			if a.known {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.pos.line, b.pos.line); c != 0 {
			return c
		}
		return cmp.Compare(a.pos.col, b.pos.col)
	})
	for i := range ks {
		out[i] = ks[i].e
	}
	return out
}

// withoutFailed drops the entries about fields (or their descendants) that
// could not be decoded, since they would only repeat the decode error.
func withoutFailed(errs ErrorList, failed []string) ErrorList {
	if len(failed) == 0 {
		return errs
	}
	var out ErrorList
	for _, e := range errs {
		if !underAny(e.Field, failed) {
			out = append(out, e)
		}
	}
	return out
}

func underAny(field string, paths []string) bool {
	for _, p := range paths {
		if field == p || strings.HasPrefix(field, p+".") || strings.HasPrefix(field, p+"[") {
			return true
		}
	}
	return false
}

// maxEcho is how much of a user-supplied value a message repeats.
const maxEcho = 64

// quoteShort quotes s for a message, shortened to maxEcho bytes.
func quoteShort(s string) string {
	return strconv.Quote(shorten(s))
}

func shorten(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// alternatives formats allowed values: "a", "a or b", "one of a, b, c".
func alternatives(allowed []string) string {
	switch len(allowed) {
	case 0:
		return "empty"
	case 1:
		return allowed[0]
	case 2:
		return allowed[0] + " or " + allowed[1]
	}
	return "one of " + strings.Join(allowed, ", ")
}

// unsupported is the detail for a value that is not one of allowed.
func unsupported(val string, allowed []string) string {
	msg := fmt.Sprintf("unsupported value %s; must be %s", quoteShort(val), alternatives(allowed))
	for _, a := range allowed {
		if strings.EqualFold(a, val) {
			msg += fmt.Sprintf(" (did you mean %q?)", a)
			break
		}
	}
	return msg
}
