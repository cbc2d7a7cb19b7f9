package codec

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// UnmarshalOwnYAML parses the block YAML that MarshalYAML (go-yaml v2's emitter) writes for a saved object, and gives
// exactly what UnmarshalYAML gives for it; ok is false for anything outside the narrow subset it reads,
// which then takes UnmarshalYAML. go-yaml's scanner reads ~0.8 MB of saved objects on every re-render a
// byte at a time through its buffers and was most of the state's decode; this is ~3x faster on them
// (TestFastYAMLRender compares both on a render's saved objects and manifests and on every vendored CRD,
// TestFastYAMLValues and TestFastYAMLRandom on what the emitter writes for tricky and random strings).
//
// The subset: block mappings of string keys and block sequences (go-yaml's layout: a sequence under a key at the
// key's indentation, "- key: value" items); plain, single- and double-quoted scalars on one line; plain and
// single-quoted scalars of a mapping value folded onto more indented lines (the emitter folds long ones at single
// spaces); literal block scalars of a mapping value ("|", "|-", "|+", with or without an indentation indicator);
// the empty flow collections {} and []. Anything else (comments, anchors, tags, flow collections, folded block
// scalars, multi-line double-quoted scalars, document markers, tabs in indentation, duplicate keys) is not read.
// Plain scalars resolve as go-yaml v2 resolves them: its boolean and null words and decimal integers here, what
// its resolve takes for a string for sure (maybeNotString) as a string, anything else through
// UnmarshalYAML of that one scalar.
func UnmarshalOwnYAML(data []byte) (m map[string]interface{}, ok bool) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, false
	}
	p := &yamlParser{}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := string(data[:i])
		data = data[i+1:]
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		p.lines = append(p.lines, yamlLine{indent: n, text: line[n:], raw: line})
	}
	if len(p.lines) == 0 || p.lines[0].indent != 0 || p.lines[0].text == "" {
		return nil, false
	}
	v, ok := p.mapping(0)
	if !ok || p.pos != len(p.lines) {
		return nil, false
	}
	return v, true
}

type yamlLine struct {
	indent int
	text   string // the line without its indentation
	raw    string // the whole line
}

type yamlParser struct {
	lines []yamlLine
	pos   int
}

func isSeqItem(t string) bool { return t == "-" || strings.HasPrefix(t, "- ") }

// mapping reads the block mapping whose keys are at indent, from the current line.
func (p *yamlParser) mapping(indent int) (map[string]interface{}, bool) {
	out := map[string]interface{}{}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent < indent {
			break
		}
		if l.indent > indent || l.text == "" || isSeqItem(l.text) {
			return nil, false
		}
		key, rest, ok := splitKey(l.text)
		if !ok {
			return nil, false
		}
		if _, dup := out[key]; dup {
			return nil, false
		}
		p.pos++
		var v interface{}
		if rest == "" {
			// The value is on the following lines: a nested mapping, a sequence at this indentation, or null.
			if p.pos < len(p.lines) {
				next := p.lines[p.pos]
				switch {
				case next.indent > indent && !isSeqItem(next.text):
					if v, ok = p.mapping(next.indent); !ok {
						return nil, false
					}
				case next.indent == indent && isSeqItem(next.text), next.indent > indent && isSeqItem(next.text):
					if v, ok = p.sequence(next.indent); !ok {
						return nil, false
					}
				}
			}
		} else if rest[0] == '|' {
			if v, ok = p.literal(rest, indent); !ok {
				return nil, false
			}
		} else {
			// go-yaml's emitter folds a long plain or single-quoted scalar at single spaces onto more indented
			// lines, each break read back as one space.
			for p.pos < len(p.lines) && p.lines[p.pos].indent > indent && p.lines[p.pos].text != "" {
				c := p.lines[p.pos].text
				if (rest[0] != '\'' && !plainText(rest)) || (rest[0] != '\'' && !plainText(c)) || strings.HasSuffix(rest, " ") ||
					strings.HasSuffix(c, " ") || rest[0] == '"' {
					return nil, false
				}
				rest += " " + c
				p.pos++
			}
			if v, ok = scalar(rest); !ok {
				return nil, false
			}
			if p.pos < len(p.lines) && p.lines[p.pos].indent > indent {
				return nil, false // an empty line in a folded scalar
			}
		}
		out[key] = v
	}
	return out, true
}

// sequence reads the block sequence whose "- " are at indent, from the current line.
func (p *yamlParser) sequence(indent int) ([]interface{}, bool) {
	var out []interface{}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent < indent || (l.indent == indent && !isSeqItem(l.text)) {
			break
		}
		if l.indent > indent || !strings.HasPrefix(l.text, "- ") {
			return nil, false
		}
		item := l.text[2:]
		if item == "" || item[0] == ' ' || isSeqItem(item) {
			return nil, false
		}
		if _, _, isKey := splitKey(item); isKey {
			// "- key: value": a mapping whose keys are two columns in.
			p.lines[p.pos] = yamlLine{indent: indent + 2, text: item}
			m, ok := p.mapping(indent + 2)
			if !ok {
				return nil, false
			}
			out = append(out, m)
			continue
		}
		v, ok := scalar(item)
		if !ok {
			return nil, false
		}
		p.pos++
		if p.pos < len(p.lines) && p.lines[p.pos].indent > indent {
			return nil, false
		}
		out = append(out, v)
	}
	if out == nil {
		return nil, false
	}
	return out, true
}

// literal reads a literal block scalar whose header ("|", "|-", "|+", with an optional indentation indicator) is
// header, under a mapping key at indent.
func (p *yamlParser) literal(header string, indent int) (string, bool) {
	h := header[1:]
	chomp := byte(0)
	ind := 0
	for _, c := range []byte(h) {
		switch {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = c
		case c >= '1' && c <= '9' && ind == 0:
			ind = int(c - '0')
		default:
			return "", false
		}
	}
	start := p.pos
	blockIndent := indent + ind
	if ind == 0 {
		// The first line's indentation; leading empty lines are not read.
		if p.pos >= len(p.lines) || p.lines[p.pos].text == "" || p.lines[p.pos].indent <= indent {
			return "", false
		}
		blockIndent = p.lines[p.pos].indent
	}
	var b strings.Builder
	end := start
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.text == "" { // an empty (or all-space) line
			if len(l.raw) > blockIndent {
				b.WriteString(l.raw[blockIndent:])
			}
			b.WriteByte('\n')
			p.pos++
			continue
		}
		if l.indent < blockIndent {
			break
		}
		b.WriteString(l.raw[blockIndent:])
		b.WriteByte('\n')
		p.pos++
		end = p.pos
	}
	if end == start {
		return "", false
	}
	s := b.String()
	// The trailing empty lines after the last content line.
	content := strings.TrimRight(s, "\n")
	trailing := s[len(content):]
	if strings.ContainsAny(trailing, " \t") {
		return "", false
	}
	// Empty lines after the block belong to the document, not to the scalar, unless kept.
	switch chomp {
	case '-':
		s = content
	case '+':
		// keep
	default:
		s = content + "\n"
	}
	if !utf8.ValidString(s) {
		return "", false
	}
	for _, c := range []byte(s) {
		if c < 0x20 && c != '\n' && c != '\t' {
			return "", false
		}
	}
	return s, true
}

// splitKey splits "key: value" or "key:" (value "") with a plain or quoted key that resolves to a string.
func splitKey(t string) (key, rest string, ok bool) {
	var k string
	switch t[0] {
	case '"', '\'':
		s, n, ok := quoted(t)
		if !ok {
			return "", "", false
		}
		k, t = s, t[n:]
		if t == ":" {
			return k, "", true
		}
		if !strings.HasPrefix(t, ": ") {
			return "", "", false
		}
		return k, t[2:], true
	}
	i := strings.Index(t, ": ")
	if i < 0 {
		if !strings.HasSuffix(t, ":") {
			return "", "", false
		}
		i = len(t) - 1
		rest = ""
	} else {
		rest = t[i+2:]
		if rest == "" || rest[0] == ' ' {
			return "", "", false
		}
	}
	k = t[:i]
	if v, ok := plain(k); !ok || v != k || k[0] == '<' { // a key that resolves to this very string ("<<" merges)
		return "", "", false
	}
	return k, rest, true
}

// scalar reads a whole value written on one line: quoted, {} or [], or plain.
func scalar(t string) (interface{}, bool) {
	switch t[0] {
	case '"', '\'':
		s, n, ok := quoted(t)
		if !ok || n != len(t) {
			return nil, false
		}
		return s, true
	case '{', '[':
		switch t {
		case "{}":
			return map[string]interface{}{}, true
		case "[]":
			return []interface{}{}, true
		}
		return nil, false
	}
	return plain(t)
}

// plainWords are the plain scalars go-yaml v2 resolves to a boolean or null.
var plainWords = map[string]interface{}{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "true": true, "True": true, "TRUE": true,
	"on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "false": false, "False": false, "FALSE": false,
	"off": false, "Off": false, "OFF": false,
	"~": nil, "null": nil, "Null": nil, "NULL": nil,
}

// plain resolves a plain scalar as go-yaml v2 does (and encoding/json then decodes: numbers are float64).
func plain(t string) (interface{}, bool) {
	if !plainText(t) {
		return nil, false
	}
	if v, ok := plainWords[t]; ok {
		return v, true
	}
	switch c := t[0]; {
	case c >= '0' && c <= '9', c == '-', c == '+', c == '.':
		if decimalInt(t) {
			n, err := strconv.ParseInt(t, 10, 64)
			if err == nil {
				return float64(n), true
			}
		}
		if !maybeNotString(t) {
			return t, true
		}
		// Numbers, timestamps and the like: go-yaml itself resolves the scalar alone.
		m, err := UnmarshalYAML([]byte("v: " + t + "\n"))
		if err != nil || len(m) != 1 {
			return nil, false
		}
		v, ok := m["v"]
		return v, ok
	}
	return t, true
}

// yamlStyleFloat is go-yaml v2's pattern of a float.
var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// maybeNotString is false for a plain scalar starting with a digit, a sign or a dot that go-yaml v2 resolves to a
// string for sure: its resolve tries, for these, a timestamp (four digits and a dash first), an integer
// (strconv.ParseInt and ParseUint with base 0, underscores removed; 0b binary is among them), a float (its
// pattern, and for a leading dot strconv.ParseFloat) and the .inf/.nan words; anything none of them can take is a
// string (e.g. UIDs, durations, quantities, addresses).
func maybeNotString(t string) bool {
	if len(t) > 4 && t[4] == '-' && decimalDigits(t[:4]) {
		return true // a timestamp, maybe
	}
	plain := strings.ReplaceAll(t, "_", "")
	if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseFloat(plain, 64); err == nil || yamlStyleFloat.MatchString(plain) {
		return true
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return true
	}
	for _, p := range []string{"0b", "-0b", "+0b"} {
		if strings.HasPrefix(plain, p) {
			return true
		}
	}
	l := strings.ToLower(t)
	return strings.Contains(l, "inf") || strings.Contains(l, "nan")
}

func decimalDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// decimalInt: an optional minus and decimal digits without a leading zero (or "0"), short enough for an int64.
func decimalInt(t string) bool {
	d := strings.TrimPrefix(t, "-")
	if d == "" || len(d) > 15 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for _, c := range []byte(d) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainText: a plain scalar as go-yaml's emitter writes one on a line, that this parser reads whole.
func plainText(t string) bool {
	if t == "" || t[len(t)-1] == ' ' || t[len(t)-1] == ':' {
		return false
	}
	switch t[0] {
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '%', '@', '`', '?', ':', '"', '\'', ' ':
		return false
	case '-':
		if len(t) == 1 || t[1] == ' ' {
			return false
		}
	}
	if strings.Contains(t, " #") || strings.Contains(t, ": ") {
		return false
	}
	for _, c := range []byte(t) {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// quoted reads a single- or double-quoted scalar at the start of t, closed on the same line, and returns it and
// how many bytes of t it took.
func quoted(t string) (string, int, bool) {
	q := t[0]
	var b strings.Builder
	for i := 1; i < len(t); i++ {
		c := t[i]
		switch {
		case c == q && q == '\'':
			if i+1 < len(t) && t[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return finishQuoted(b.String(), i+1)
		case c == q:
			return finishQuoted(b.String(), i+1)
		case c == '\\' && q == '"':
			if i+1 >= len(t) {
				return "", 0, false
			}
			i++
			switch e := t[i]; e {
			case '0':
				b.WriteByte(0)
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 't', '\t':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'v':
				b.WriteByte('\v')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case 'e':
				b.WriteByte(0x1b)
			case ' ', '"', '/', '\\':
				b.WriteByte(e)
			case 'N':
				b.WriteString("\u0085")
			case '_':
				b.WriteString("\u00a0")
			case 'L':
				b.WriteString("\u2028")
			case 'P':
				b.WriteString("\u2029")
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if i+n >= len(t) {
					return "", 0, false
				}
				r, err := strconv.ParseUint(t[i+1:i+1+n], 16, 32)
				if err != nil || !utf8.ValidRune(rune(r)) {
					return "", 0, false
				}
				b.WriteRune(rune(r))
				i += n
			default:
				return "", 0, false
			}
		case c < 0x20 && c != '\t':
			return "", 0, false
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false // not closed on this line
}

func finishQuoted(s string, n int) (string, int, bool) {
	if !utf8.ValidString(s) {
		return "", 0, false
	}
	return s, n, true
}
