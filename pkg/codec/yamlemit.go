package codec

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goyaml "go.yaml.in/yaml/v2"
)

// A direct YAML emitter for the values MarshalYAML hands to go-yaml (go.yaml.in/yaml/v2): maps with string keys,
// []interface{}, strings, booleans, integers, floats and nil. It writes what go-yaml's Marshal writes, byte for
// byte, by the same rules, restated here (our own code, not go-yaml's):
//
//   - encode.go: map keys sorted (sorter.go's keyList.Less), strings that would read back as something else
//     (resolve.go's resolve: YAML 1.1 booleans, nulls, ints, floats, timestamps; encode.go's isBase60Float) are
//     double-quoted, strings with a line break are asked for as literal blocks, the others as plain;
//   - emitterc.go: yaml_emitter_analyze_scalar and yaml_emitter_select_scalar_style (which style a scalar gets
//     in the end), yaml_emitter_check_simple_key, the block mapping and sequence states with their indentation
//     (2 spaces; a sequence that is a mapping's value is not indented), empty mappings and sequences as {} and
//     [], yaml_emitter_write_indent, and write_plain/single_quoted/double_quoted/literal_scalar with their
//     folding of long lines at spaces beyond column 80 (best_width).
//
// What it does not do the same way it declines (ok false), and MarshalYAML gives the value to go-yaml: strings
// or keys with bytes beyond ASCII (go-yaml counts columns by characters and escapes some), keys that are not
// simple keys (multi-line, longer than 128 bytes), mappings whose keys go-yaml has no one order for (see
// sortYAMLKeys), values of other types.

// yamlEmitter writes one document; its buffers are reused (emitterPool).
type yamlEmitter struct {
	buf       []byte
	lineStart int       // where the current line starts in buf
	pairs     []mapPair // the entries of the mappings being written, a stack
	width     int       // yamlWidth()
	// direct: the document is an object as MarshalYAML is given it, not yet made what go-yaml would parse from its
	// JSON (yamlReady, asParsed); the emitter declines what yamlReady does not accept.
	direct bool
	// whitespace and indention are go-yaml's emitter flags of the same names: the last character written is
	// whitespace (no space is needed before an indicator), and only indentation has been written on this line.
	whitespace, indention bool
}

// mapPair is a mapping's entry.
type mapPair struct {
	key   string
	value interface{}
}

var emitterPool = sync.Pool{New: func() any { return &yamlEmitter{buf: make([]byte, 0, 4096)} }}

// yamlWidth is go-yaml's best_width: 80, unless something in the program called goyaml.FutureLineWrap, which
// turns folding off (then it is the largest int). It is found once by asking go-yaml to write a long line.
var yamlWidth = sync.OnceValue(func() int {
	b, err := goyaml.Marshal(map[string]interface{}{"a": strings.Repeat("x ", 60) + "x"})
	if err == nil && strings.Count(string(b), "\n") == 1 {
		return math.MaxInt
	}
	return 80
})

// emitYAML is goyaml.Marshal(obj), or ok false where the emitter declines (see above). With direct, obj is an
// object as MarshalYAML is given it, and the emitter declines what yamlReady does not accept (so that it writes
// goyaml.Marshal(obj) where that is what MarshalYAML writes).
func emitYAML(obj map[string]interface{}, direct bool) (out []byte, ok bool) {
	e := emitterPool.Get().(*yamlEmitter)
	e.buf, e.lineStart, e.pairs = e.buf[:0], 0, e.pairs[:0]
	e.whitespace, e.indention = true, true
	e.width, e.direct = yamlWidth(), direct
	if ok = e.node(obj, -1, ctxRoot); ok {
		// The document's end: go-yaml's write_indent at column 0.
		e.writeIndent(0)
		out = make([]byte, len(e.buf))
		copy(out, e.buf)
	}
	clear(e.pairs[:cap(e.pairs)]) // no references kept in the pool
	if cap(e.buf) <= 1<<20 {
		emitterPool.Put(e)
	}
	return out, ok
}

// The context a node is written in.
const (
	ctxRoot = iota
	ctxMapValue
	ctxSeqItem
)

func (e *yamlEmitter) column() int { return len(e.buf) - e.lineStart }

func (e *yamlEmitter) newline() {
	e.buf = append(e.buf, '\n')
	e.lineStart = len(e.buf)
}

// writeIndent goes to column indent: on a new line unless only indentation is on this one and it is not past
// indent (at indent, only if what is last written is whitespace).
func (e *yamlEmitter) writeIndent(indent int) {
	if indent < 0 {
		indent = 0
	}
	if col := e.column(); !e.indention || col > indent || col == indent && !e.whitespace {
		e.newline()
	}
	for e.column() < indent {
		e.buf = append(e.buf, ' ')
	}
	e.whitespace, e.indention = true, true
}

// indicator writes an indicator that needs whitespace before it (a space unless there is some).
func (e *yamlEmitter) indicator(s string) {
	if !e.whitespace {
		e.buf = append(e.buf, ' ')
	}
	e.buf = append(e.buf, s...)
	e.whitespace, e.indention = false, false
}

// node writes v; indent is the indentation of the collection it is in (-1 at the root).
func (e *yamlEmitter) node(v interface{}, indent, ctx int) bool {
	switch x := v.(type) {
	case nil:
		e.plain("null", indent, false)
	case bool:
		if x {
			e.plain("true", indent, false)
		} else {
			e.plain("false", indent, false)
		}
	case int:
		e.buf = strconv.AppendInt(e.numberStart(), int64(x), 10)
	case int64:
		if e.direct && int64(int(x)) != x {
			return false
		}
		e.buf = strconv.AppendInt(e.numberStart(), x, 10)
	case uint64:
		if e.direct {
			return false
		}
		e.buf = strconv.AppendUint(e.numberStart(), x, 10)
	case float64:
		switch {
		case e.direct:
			return false
		case math.IsInf(x, 1):
			e.plain(".inf", indent, false)
		case math.IsInf(x, -1):
			e.plain("-.inf", indent, false)
		case math.IsNaN(x):
			e.plain(".nan", indent, false)
		default:
			e.buf = strconv.AppendFloat(e.numberStart(), x, 'g', -1, 64)
		}
	case string:
		return e.str(x, indent, false)
	case map[string]interface{}:
		if e.direct && x == nil {
			return false
		}
		return e.mapping(x, indent)
	case []interface{}:
		if e.direct && x == nil {
			return false
		}
		return e.sequence(x, indent, ctx)
	default:
		return false
	}
	return true
}

// numberStart starts a number, a plain scalar without spaces (so never folded), and returns buf for its
// formatting to be appended to.
func (e *yamlEmitter) numberStart() []byte {
	if !e.whitespace {
		e.buf = append(e.buf, ' ')
	}
	e.whitespace, e.indention = false, false
	return e.buf
}

// mapping writes a mapping in the block style (empty: {}), keys in go-yaml's order.
func (e *yamlEmitter) mapping(m map[string]interface{}, indent int) bool {
	if len(m) == 0 {
		e.indicator("{}")
		return true
	}
	in := 0
	if indent >= 0 {
		in = indent + 2
	}
	base := len(e.pairs)
	digits := false
	for k, v := range m {
		// A key must be a simple key (emitterc.go yaml_emitter_check_simple_key): one line, at most 128 bytes.
		if len(k) > 128 {
			e.pairs = e.pairs[:base]
			return false
		}
		for i := 0; i < len(k); i++ {
			switch c := k[i]; {
			case c >= 0x80 || c == '\n' || c == '\r' || e.direct && (c == 0x7f || c < 0x20 && c != '\t'):
				e.pairs = e.pairs[:base]
				return false
			case asciiDigit(c):
				digits = true
			}
		}
		e.pairs = append(e.pairs, mapPair{k, v})
	}
	if !sortYAMLKeys(e.pairs[base:], digits) {
		e.pairs = e.pairs[:base]
		return false
	}
	for i := base; i < base+len(m); i++ {
		p := e.pairs[i] // e.pairs may grow (and move) below
		e.writeIndent(in)
		if !e.str(p.key, in, true) {
			return false
		}
		e.buf = append(e.buf, ':')
		e.whitespace, e.indention = false, false
		if !e.node(p.value, in, ctxMapValue) {
			return false
		}
	}
	e.pairs = e.pairs[:base]
	return true
}

// sequence writes a sequence in the block style (empty: []). As a mapping's value it is not indented: its "- "
// are at the column of the mapping's keys.
func (e *yamlEmitter) sequence(s []interface{}, indent, ctx int) bool {
	if len(s) == 0 {
		e.indicator("[]")
		return true
	}
	in := indent
	switch {
	case indent < 0:
		in = 0
	case ctx != ctxMapValue || e.indention:
		in = indent + 2
	}
	for _, v := range s {
		e.writeIndent(in)
		e.buf = append(e.buf, '-')
		e.whitespace = false
		if !e.node(v, in, ctxSeqItem) {
			return false
		}
	}
	return true
}

// The scalar styles.
const (
	stylePlain = iota
	styleSingle
	styleDouble
	styleLiteral
)

// str writes a string (a key when key is set: no folding) in the style go-yaml gives it.
func (e *yamlEmitter) str(s string, indent int, key bool) bool {
	a, ok := analyzeScalar(s)
	if !ok || e.direct && a.control {
		return false
	}
	// What encode.go asks for.
	style := stylePlain
	if a.lineFeed {
		style = styleLiteral
	} else if readsAsNonString(s) || isBase60(s) {
		style = styleDouble
	}
	// What emitterc.go's yaml_emitter_select_scalar_style makes of it, in block context.
	if key && a.multiline {
		style = styleDouble
	}
	if style == stylePlain && (!a.blockPlain || key && s == "") {
		style = styleSingle
	}
	if style == styleSingle && !a.single {
		style = styleDouble
	}
	if style == styleLiteral && (!a.block || key) {
		style = styleDouble
	}
	// A scalar's continuation lines are indented one step more than its collection.
	in := 2
	if indent >= 0 {
		in = indent + 2
	}
	switch style {
	case stylePlain:
		e.plain(s, in, !key && a.space)
	case styleSingle:
		e.singleQuoted(s, in, !key)
	case styleDouble:
		e.doubleQuoted(s, in, !key)
	default:
		e.literal(s, in)
	}
	return true
}

// scalarAnalysis is what emitterc.go's yaml_emitter_analyze_scalar finds of a scalar, for the block context.
type scalarAnalysis struct {
	multiline  bool // it has line breaks
	blockPlain bool // it may be written plain
	single     bool // it may be single-quoted
	block      bool // it may be a block scalar
	lineFeed   bool // it has a line feed
	space      bool // it has a space
	control    bool // it has control characters but for tab, line feed and carriage return, or DEL (!plainASCII)
}

// printableASCII says whether an ASCII byte is printable for YAML: line feed and space to tilde.
func printableASCII(c byte) bool { return c == '\n' || 0x20 <= c && c <= 0x7e }

// blankOrBreak is a space, a tab, a line break or NUL (what "preceded by whitespace" means for '#').
func blankOrBreak(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0 }

// ordinary holds the bytes that, but as a scalar's first byte, change nothing in its analysis but to end a run of
// spaces or line breaks: printable ASCII but for space, line feed, ':' and '#' (flow indicators do not matter in
// the block context).
var ordinary = func() (t [256]bool) {
	for c := 0x21; c <= 0x7e; c++ {
		t[c] = c != ':' && c != '#'
	}
	return t
}()

// skipOrdinary is the index of the first byte of s from i on that is not ordinary (len(s) if none), eight bytes
// at a time where it can.
func skipOrdinary(s string, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		below := (w - ones*0x21) &^ w & highs        // a byte below '!'
		above := ((w + ones*(127-0x7e)) | w) & highs // a byte above '~'
		colon, hash := w^(ones*':'), w^(ones*'#')
		colon = (colon - ones) &^ colon & highs // a ':'
		hash = (hash - ones) &^ hash & highs    // a '#'
		if below|above|colon|hash != 0 {
			break
		}
	}
	for i < len(s) && ordinary[s[i]] {
		i++
	}
	return i
}

// analyzeScalar analyzes a scalar (see scalarAnalysis); ok is false when it has bytes beyond ASCII.
func analyzeScalar(s string) (a scalarAnalysis, ok bool) {
	if s == "" {
		return scalarAnalysis{blockPlain: true, single: true}, true
	}
	var indicators, lineBreaks, special, leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak bool
	if (s[0] == '-' || s[0] == '.') && (strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...")) {
		indicators = true
	}
	precededByWhitespace, previousSpace, previousBreak := true, false, false
	last := len(s) - 1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i > 0 && ordinary[c] {
			// Skip the run of ordinary bytes.
			i = skipOrdinary(s, i+1) - 1
			precededByWhitespace, previousSpace, previousBreak = false, false, false
			continue
		}
		if c >= 0x80 {
			return a, false
		}
		followedByWhitespace := i == last || s[i+1] == ' ' || s[i+1] == '\t'
		if i == 0 {
			switch c {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				indicators = true
			case '?', ':', '-':
				if followedByWhitespace {
					indicators = true
				}
			}
		} else {
			switch c {
			case ':':
				if followedByWhitespace {
					indicators = true
				}
			case '#':
				if precededByWhitespace {
					indicators = true
				}
			}
		}
		if !printableASCII(c) {
			special = true
			a.control = a.control || c != '\t' && c != '\r'
		}
		switch c {
		case ' ':
			a.space = true
			leadingSpace = leadingSpace || i == 0
			trailingSpace = trailingSpace || i == last
			breakSpace = breakSpace || previousBreak
			previousSpace, previousBreak = true, false
		case '\n', '\r':
			a.lineFeed = a.lineFeed || c == '\n'
			lineBreaks = true
			leadingBreak = leadingBreak || i == 0
			trailingBreak = trailingBreak || i == last
			spaceBreak = spaceBreak || previousSpace
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
		precededByWhitespace = blankOrBreak(c)
	}
	a.multiline, a.blockPlain, a.single, a.block = lineBreaks, true, true, true
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak || lineBreaks || indicators {
		a.blockPlain = false
	}
	if trailingSpace {
		a.block = false
	}
	if breakSpace {
		a.blockPlain, a.single = false, false
	}
	if spaceBreak || special {
		a.blockPlain, a.single, a.block = false, false, false
	}
	return a, true
}

// plain writes a plain scalar; with fold (for a value with spaces), a space past the line width that is not followed by another breaks the
// line instead, continuing at indent.
func (e *yamlEmitter) plain(s string, indent int, fold bool) {
	if !e.whitespace {
		e.buf = append(e.buf, ' ')
	}
	if !fold || len(s)+e.column() <= e.width+1 {
		// No space in it can be past the width.
		e.buf = append(e.buf, s...)
	} else {
		spaces := false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == ' ' {
				if !spaces && e.column() > e.width && i+1 < len(s) && s[i+1] != ' ' {
					e.writeIndent(indent)
				} else {
					e.buf = append(e.buf, ' ')
				}
				spaces = true
				continue
			}
			e.buf = append(e.buf, c)
			e.indention = false
			spaces = false
		}
	}
	e.whitespace, e.indention = false, false
}

// singleQuoted writes a single-quoted scalar (no line breaks in it), folding as plain does but for its first and
// last character.
func (e *yamlEmitter) singleQuoted(s string, indent int, fold bool) {
	e.indicator("'")
	spaces := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' {
			if fold && !spaces && e.column() > e.width && i > 0 && i < len(s)-1 && s[i+1] != ' ' {
				e.writeIndent(indent)
			} else {
				e.buf = append(e.buf, ' ')
			}
			spaces = true
			continue
		}
		if c == '\'' {
			e.buf = append(e.buf, '\'')
		}
		e.buf = append(e.buf, c)
		e.indention = false
		spaces = false
	}
	e.buf = append(e.buf, '\'')
	e.whitespace, e.indention = false, false
}

// doubleQuoted writes a double-quoted scalar: non-printable characters, line breaks, '"' and '\' escaped; folded
// at a space past the line width (not the first or last character), a space after the fold escaped.
func (e *yamlEmitter) doubleQuoted(s string, indent int, fold bool) {
	e.indicator(`"`)
	const hex = "0123456789ABCDEF"
	spaces := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case !printableASCII(c) || c == '\n' || c == '"' || c == '\\':
			e.buf = append(e.buf, '\\')
			if esc := doubleQuotedEscapes[c]; esc != 0 {
				e.buf = append(e.buf, esc)
			} else {
				e.buf = append(e.buf, 'x', hex[c>>4], hex[c&0xf])
			}
			spaces = false
		case c == ' ':
			if fold && !spaces && e.column() > e.width && i > 0 && i < len(s)-1 {
				e.writeIndent(indent)
				if s[i+1] == ' ' {
					e.buf = append(e.buf, '\\')
				}
			} else {
				e.buf = append(e.buf, ' ')
			}
			spaces = true
		default:
			e.buf = append(e.buf, c)
			spaces = false
		}
	}
	e.buf = append(e.buf, '"')
	e.whitespace, e.indention = false, false
}

// doubleQuotedEscapes is the letter after the backslash for the bytes go-yaml escapes by name in a double-quoted
// scalar (emitterc.go, yaml_emitter_write_double_quoted_scalar); any other byte that needs escaping is \xXX.
var doubleQuotedEscapes = [256]byte{0: '0', 7: 'a', 8: 'b', '\t': 't', '\n': 'n', 0x0b: 'v', 0x0c: 'f', '\r': 'r',
	0x1b: 'e', '"': '"', '\\': '\\'}

// literal writes a literal block scalar (only printable characters and line feeds, no space before a line feed
// or at the end): an indentation indicator when it starts with a space or a line break, a chomping indicator
// ("-" without a final line break, "+" with more than one or only one), each line at indent.
func (e *yamlEmitter) literal(s string, indent int) {
	e.indicator("|")
	if s[0] == ' ' || s[0] == '\n' {
		e.buf = append(e.buf, '2')
	}
	n := len(s)
	switch {
	case s[n-1] != '\n':
		e.buf = append(e.buf, '-')
	case n == 1 || s[n-2] == '\n':
		e.buf = append(e.buf, '+')
	}
	e.newline()
	e.whitespace, e.indention = true, true
	lineStart := true
	for i := 0; i < n; {
		if s[i] == '\n' {
			e.newline()
			e.indention = true
			lineStart = true
			i++
			continue
		}
		if lineStart {
			e.writeIndent(indent)
			lineStart = false
		}
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			j = n - i
		}
		e.buf = append(e.buf, s[i:i+j]...)
		e.indention = false
		i += j
	}
}

// sortYAMLKeys sorts a mapping's entries (keys ASCII, distinct) in go-yaml's key order (sorter.go,
// keyList.Less), and says whether that order is the only one (digits: some key has a digit): go-yaml's comparison is not transitive for some keys
// with digits ("0", "001", "00a", "01"; "v10", "v1beta1", "v2"), and then go-yaml's own order depends on the
// map's iteration order, so it has no one output. Without digits it compares by character (letters after the
// rest, then by code), a prefix first: an order. With digits, the sorted keys are checked pairwise: when each is
// less than every one after it, the comparison is a total order on them and any sort gives this order.
func sortYAMLKeys(pairs []mapPair, digits bool) bool {
	if len(pairs) <= 12 {
		for i := 1; i < len(pairs); i++ {
			for j := i; j > 0 && yamlKeyLess(pairs[j].key, pairs[j-1].key); j-- {
				pairs[j], pairs[j-1] = pairs[j-1], pairs[j]
			}
		}
	} else {
		slices.SortFunc(pairs, func(a, b mapPair) int {
			switch {
			case a.key == b.key:
				return 0
			case yamlKeyLess(a.key, b.key):
				return -1
			}
			return 1
		})
	}
	if !digits {
		return true
	}
	if len(pairs) > 512 {
		return false
	}
	for i, a := range pairs {
		for _, b := range pairs[i+1:] {
			if !yamlKeyLess(a.key, b.key) {
				return false
			}
		}
	}
	return true
}

func asciiLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func asciiDigit(c byte) bool  { return '0' <= c && c <= '9' }

// yamlKeyLess is go-yaml's order of two ASCII string keys: at the first character that differs, two letters
// compare by code; a letter sorts after anything else; otherwise the runs of digits starting there compare as
// numbers (a run of zeros that continues a number counting as non-zero), then by length, then by the character.
func yamlKeyLess(a, b string) bool {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		la, lb := asciiLetter(ca), asciiLetter(cb)
		if la && lb {
			return ca < cb
		}
		if la || lb {
			return lb
		}
		var na, nb int64
		if ca == '0' || cb == '0' {
			for j := i - 1; j >= 0 && asciiDigit(a[j]); j-- {
				if a[j] != '0' {
					na, nb = 1, 1
					break
				}
			}
		}
		ea, eb := i, i
		for ; ea < len(a) && asciiDigit(a[ea]); ea++ {
			na = na*10 + int64(a[ea]-'0')
		}
		for ; eb < len(b) && asciiDigit(b[eb]); eb++ {
			nb = nb*10 + int64(b[eb]-'0')
		}
		if na != nb {
			return na < nb
		}
		if ea != eb {
			return ea < eb
		}
		return ca < cb
	}
	return len(a) < len(b)
}

// readsAsNonString says whether go-yaml reads s, written plain, as anything but a string (resolve.go, resolve
// without a tag): a null, a YAML 1.1 boolean, an int, a float or a timestamp.
func readsAsNonString(s string) bool {
	if s == "" {
		return true
	}
	switch c := s[0]; {
	case c == '+' || c == '-' || asciiDigit(c):
		return yaml11Word(s) || numberOrTimestamp(s)
	case c == '.':
		if yaml11Word(s) {
			return true
		}
		_, err := strconv.ParseFloat(s, 64)
		return err == nil
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		return yaml11Word(s)
	}
	return false
}

// yaml11Word says whether s is one of the words go-yaml resolves by name (resolve.go's resolveMap; its "<<" is
// never looked up for an untagged scalar, as '<' gives no hint, so it is left out).
func yaml11Word(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
		"~", "null", "Null", "NULL",
		".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return true
	}
	return false
}

// numberChars holds every byte that a number or timestamp go-yaml resolves can have: digits, hexadecimal digits
// and base prefixes, signs, the point, exponent, underscore, and a timestamp's separators.
var numberChars = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEFxXoO+-._:, tTzZ" {
		t[c] = true
	}
	return t
}()

// numberOrTimestamp says whether go-yaml resolves s, which starts with a sign or a digit, as a timestamp, an int
// or a float.
func numberOrTimestamp(s string) bool {
	for i := 0; i < len(s); i++ {
		if !numberChars[s[i]] {
			return false
		}
	}
	if isYAMLTimestamp(s) {
		return true
	}
	p := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(p, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(p, 0, 64); err == nil {
		return true
	}
	if yamlFloatSyntax(p) {
		if _, err := strconv.ParseFloat(p, 64); err == nil {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(p, "0b"); ok {
		if _, err := strconv.ParseInt(rest, 2, 64); err == nil {
			return true
		}
		if _, err := strconv.ParseUint(rest, 2, 64); err == nil {
			return true
		}
	} else if rest, ok := strings.CutPrefix(p, "-0b"); ok {
		if _, err := strconv.ParseInt("-"+rest, 2, 64); err == nil {
			return true
		}
	}
	return false
}

// yamlTimestampLayouts are the layouts go-yaml reads a plain timestamp in (resolve.go).
var yamlTimestampLayouts = []string{"2006-1-2T15:4:5.999999999Z07:00", "2006-1-2t15:4:5.999999999Z07:00", "2006-1-2 15:4:5.999999999", "2006-1-2"}

// isYAMLTimestamp says whether go-yaml reads s as a timestamp: four digits and '-', then one of its layouts.
func isYAMLTimestamp(s string) bool {
	if len(s) < 5 || !asciiDigit(s[0]) || !asciiDigit(s[1]) || !asciiDigit(s[2]) || !asciiDigit(s[3]) || s[4] != '-' {
		return false
	}
	for _, l := range yamlTimestampLayouts {
		if _, err := time.Parse(l, s); err == nil {
			return true
		}
	}
	return false
}

// yamlFloatSyntax matches go-yaml's float syntax: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
func yamlFloatSyntax(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && asciiDigit(s[i]) {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// isBase60 says whether s is a YAML 1.1 base-60 float, which go-yaml quotes (encode.go, isBase60Float):
// [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?
func isBase60(s string) bool {
	if s == "" || strings.IndexByte(s, ':') < 0 {
		return false
	}
	i := 0
	if s[0] == '-' || s[0] == '+' {
		i++
	}
	if i >= len(s) || !asciiDigit(s[i]) {
		return false
	}
	for i < len(s) && (asciiDigit(s[i]) || s[i] == '_') {
		i++
	}
	groups := 0
	for i < len(s) && s[i] == ':' {
		i++
		switch {
		case i+1 < len(s) && asciiDigit(s[i]) && asciiDigit(s[i+1]):
			// Two digits: a sexagesimal digit 0-5 then a digit (one digit followed by a digit cannot end the
			// group).
			if s[i] > '5' {
				return false
			}
			i += 2
		case i < len(s) && asciiDigit(s[i]):
			i++
		default:
			return false
		}
		groups++
	}
	if groups == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && (asciiDigit(s[i]) || s[i] == '_') {
			i++
		}
	}
	return i == len(s)
}
