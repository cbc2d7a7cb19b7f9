package export

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/coreos/ignition/v2/config/validate"

	"github.com/render-static/render-static/pkg/codec"
)

// IgnitionOptions are the parts of aio.ign that are not files, directories or units.
type IgnitionOptions struct {
	SSHAuthorizedKeys []string // for user "core"
	// PreviousParsed is an earlier aio.ign of the same output, encoded with the same EncoderID
	// (ParseValidatePreviousIgnition, e.g. while the loops ran; nil: none): a config identical to it is given back
	// as its very bytes, and its validation is the earlier one's.
	PreviousParsed *PreviousIgnition
}

// PreviousIgnition is an earlier aio.ign, parsed and validated for IgnitionOptions.PreviousParsed.
type PreviousIgnition struct {
	// raw is the earlier aio.ign and valid the Built.Validate result of its config, there once checked is closed
	// (an error too when marshalCompact does not give raw back from its config byte for byte); config is raw
	// parsed, when it passed (nil otherwise).
	raw     []byte
	valid   error
	config  *types.Config
	checked chan struct{}
}

// ParseValidatePreviousIgnition does ahead what a re-render of unchanged inputs, which makes exactly the earlier
// aio.ign, would do after its loops: on a goroutine of its own it keeps the config parsed from the earlier aio.ign
// when marshalling it gives the earlier aio.ign back (IgnitionUnvalidated then needs no marshalling of an identical
// config) and validates that config (Built.Validate; Validate then needs no validation of an identical config). The
// caller does other work meanwhile (the loops). The earlier aio.ign is parsed once, with encoding/json (what
// marshalCompact wrote, it reads back exactly: the marshalling check).
func ParseValidatePreviousIgnition(ign []byte) *PreviousIgnition {
	p := &PreviousIgnition{raw: ign, checked: make(chan struct{})}
	go func() {
		defer close(p.checked)
		if len(ign) == 0 {
			p.valid = errors.New("no earlier config")
			return
		}
		var cfg types.Config
		if p.valid = json.Unmarshal(ign, &cfg); p.valid != nil {
			return
		}
		if b, err := codec.MarshalCompactJSON(cfg); err != nil || !bytes.Equal(b, ign) {
			p.valid = errors.New("the earlier config is not one marshalCompact wrote")
			return
		}
		if p.valid = (&Built{Raw: ign, config: cfg}).Validate(); p.valid == nil {
			p.config = &cfg
		}
	}()
	return p
}

// same returns the earlier aio.ign when cfg is the config it holds (so that codec.MarshalCompactJSON(cfg) gives it byte for
// byte: it gave it from the config parsed from it, which cfg equals), once its parse is done; nil otherwise. It
// does not wait for that parse: without it, the config is marshalled, to the same bytes.
func (p *PreviousIgnition) same(cfg *types.Config) []byte {
	if p == nil || p.checked == nil {
		return nil
	}
	select {
	case <-p.checked:
	default:
		return nil
	}
	if p.config == nil || !reflect.DeepEqual(cfg, p.config) {
		return nil
	}
	return p.raw
}

// Validate is b.Validate(), except that a config identical to the earlier aio.ign whose config passed it (checked
// by ParseValidatePreviousIgnition) passes without a validation of its own: the same bytes get the same
// verdict, from the same code in this same process. p may be nil.
func (p *PreviousIgnition) Validate(b *Built) error {
	if p != nil && p.checked != nil && len(b.Raw) == len(p.raw) {
		<-p.checked
		if p.valid == nil && bytes.Equal(b.Raw, p.raw) {
			return nil
		}
	}
	return b.Validate()
}

// Built is a config IgnitionUnvalidated made: its JSON, and the config it marshalled into it.
type Built struct {
	Raw    []byte
	config types.Config
}

// Validate runs on the config the Ignition library's whole validation that Ignition runs on the node after it
// parsed aio.ign (v3_2.Parse: the version, then validate.ValidateWithContext); any report entry (error, warning or
// info) fails. It validates the config that was marshalled rather than parsing the JSON back: marshalCompact of a
// types.Config parses back to an equal config (TestBuiltValidateAgreesWithParse checks both on every kind of
// config the tests build, and the end-to-end test runs the real Ignition on aio.ign), so what a parse adds is the
// JSON's positions in a message and the check for keys types.Config does not have, which marshalling it cannot
// emit; the parse cost a fresh render ~45 ms of CPU, most of its Ignition validation. Nor does it decode the
// data URLs it knows Ignition accepts (validSources): megabytes in aio.ign, and aio.ign's own in live.ign.
func (b *Built) Validate() error {
	return b.validate(validSources(b.config))
}

// validateWhole is Validate with Ignition decoding every data URL: what validSources spares, for the tests.
func (b *Built) validateWhole() error { return b.validate(b.config) }

func (b *Built) validate(cfg types.Config) error {
	if cfg.Ignition.Version != types.MaxVersion.String() {
		return fmt.Errorf("building ignition config: version %q is not %s", cfg.Ignition.Version, types.MaxVersion)
	}
	if rpt := validate.ValidateWithContext(cfg, nil); len(rpt.Entries) > 0 {
		return fmt.Errorf("building ignition config: validating it reported:\n%s", reportText(rpt))
	}
	return nil
}

// validSources is cfg with every file's contents.source that is wellFormedDataURL replaced by the empty data URL
// "data:,", for a validation that gives cfg's report (entries, paths, texts) without decoding those URLs: Ignition's
// validation (config/v3_2/types, v2.24.0) looks at a file's contents.source only to see whether it is nil or empty
// (file.go validateOverwrite; resource.go validateVerification, validateURLNilOK), whether its scheme allows HTTP
// headers (resource.go validateSchemeForHTTPHeaders: "data" never does) and whether it is a valid URL (url.go
// validateURL), which every wellFormedDataURL is, as "data:," is; no duplicate check keys on it (a file's key is
// its path; config/validate ValidateDups). Other sources (base64 data URLs) are left to Ignition. cfg itself is
// not changed.
func validSources(cfg types.Config) types.Config {
	files := cfg.Storage.Files
	cloned := false
	for i := range files {
		src := files[i].Contents.Source
		if src == nil || len(*src) <= len(emptyDataURL) || !wellFormedDataURL(*src) {
			continue
		}
		if !cloned {
			cfg.Storage.Files, cloned = slices.Clone(files), true
		}
		cfg.Storage.Files[i].Contents.Source = strPtr(emptyDataURL)
	}
	return cfg
}

// emptyDataURL is the valid data URL validSources validates in place of a well-formed one.
const emptyDataURL = "data:,"

// wellFormedDataURL says whether s is "data:," followed only by bytes escapeDataURL leaves as they are
// (dataURLLiterals) and %XX escapes of two hex digits: what encode makes of text. Every such string passes
// Ignition's validateURL (config/v3_2/types/url.go), whose two steps are:
//
//   - net/url.Parse (Go's net/url/url.go Parse, parse): s has no '#' (not a literal: no fragment to check) and no
//     control byte (stringContainsCTLByte); its scheme is "data"; what follows the scheme, cut at a '?' (the
//     query, which Parse does not check), starts with ',', not '/', so it is the URL's opaque part, returned
//     without any further check;
//   - dataurl.DecodeString (github.com/vincent-petithory/dataurl v1.0.0, lex.go, dataurl.go, rfc2396.go): after
//     "data:" the lexer finds ',' (lexAfterDataPrefix, lexDataComma: no media type, no parameters) and takes the
//     rest as data if every rune isURLCharRune (ASCII, not a control or DEL, not space or <>#"{}|\\^[]`: every
//     literal, '%' and hex digit is one, lexData); the parser then unescapes it (asciiDataReader, Unescape), which
//     fails only on a non-ASCII rune or a '%' not followed by two hex digits.
//
// TestWellFormedDataURLsPassIgnition checks it on every literal and every escape.
func wellFormedDataURL(s string) bool {
	if !strings.HasPrefix(s, emptyDataURL) {
		return false
	}
	for i := len(emptyDataURL); i < len(s); i++ {
		c := s[i]
		if dataURLLiterals[c] {
			continue
		}
		if c != '%' || i+2 >= len(s) || !isHexDigit(s[i+1]) || !isHexDigit(s[i+2]) {
			return false
		}
		i += 2
	}
	return true
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// EncoderID names how Ignition encodes contents: an earlier aio.ign may serve as IgnitionOptions.Previous only when
// it was made with the same one (an earlier aio.ign of another encoding is encoded afresh, to the same node files).
const EncoderID = "data URLs v3: plain with the escapes a data URL needs, base64 where another file holds the contents' base64, gzip then base64 for a compressed file"

// Ignition builds an Ignition spec 3.2.0 config from t:
//
//   - every file root:root (uid/gid 0), overwrite true, with its mode, and its contents as a data URL (encode):
//     "data:;base64,<base64>" when another file of t holds the contents' base64 (a Secret manifest's value next to
//     its file in the installer layout), or when the contents are not text and that is shorter; otherwise
//     "data:,<escaped>" with only what a data URL must escape escaped; a compressed file (AddCompressedFile) as
//     "data:;base64,<base64 of its gzip>" with "compression": "gzip" (gzipDataURL);
//   - every explicit directory root:root with its mode (implied directories are left to Ignition, which
//     creates missing parents 0755 root:root);
//   - every unit with its contents and drop-ins; enabled units get "enabled": true, the others leave
//     "enabled" unset (Ignition then does not touch their enablement);
//   - user "core" with opts.SSHAuthorizedKeys (no passwd section when there are no keys).
//
// No other contents are compressed: aio.ign is made to be compressed whole (xz, in the live ISO's embed area:
// live.ign), and a gzip stream in base64 is what xz cannot compress, where the plain text of the same files shares
// its compression with every other file (the node files' YAML and PEM repeat one another). Only text that no other
// file repeats, the node's programs, is better off compressed on its own (AddCompressedFile says why).
//
// The config is checked with the Ignition library's own validation, the one Ignition runs on the node
// (Built.Validate); any report entry (error, warning or info) makes Ignition fail with the report text. Output is
// deterministic for the same tree and options.
func Ignition(t *Tree, opts IgnitionOptions) ([]byte, error) {
	b, err := IgnitionUnvalidated(t, opts)
	if err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b.Raw, nil
}

// IgnitionUnvalidated is Ignition without the validation, for a caller that runs Built.Validate itself
// (concurrently with other work) and uses the config only once it passed.
func IgnitionUnvalidated(t *Tree, opts IgnitionOptions) (*Built, error) {
	if t == nil {
		return nil, fmt.Errorf("building ignition config: nil tree")
	}
	cfg := types.Config{Ignition: types.Ignition{Version: types.MaxVersion.String()}}

	for _, d := range t.Dirs() {
		cfg.Storage.Directories = append(cfg.Storage.Directories, types.Directory{
			Node:               rootNode(d.Path, false),
			DirectoryEmbedded1: types.DirectoryEmbedded1{Mode: intPtr(int(d.Mode.Perm()))},
		})
	}
	files := t.Files()
	size := 1 << 16 // the JSON's length, about: the sources, and the rest of each file's object (~100 bytes)
	for i, src := range encodeAll(files) {
		size += len(src) + len(files[i].Path) + 128
		res := types.Resource{Source: strPtr(src)}
		if files[i].Compressed {
			res.Compression = strPtr("gzip")
		}
		cfg.Storage.Files = append(cfg.Storage.Files, types.File{
			Node:          rootNode(files[i].Path, true),
			FileEmbedded1: types.FileEmbedded1{Contents: res, Mode: intPtr(int(files[i].Mode.Perm()))},
		})
	}
	for _, u := range t.Units() {
		iu := types.Unit{Name: u.Name}
		if u.Contents != "" {
			iu.Contents = strPtr(u.Contents)
		}
		if u.Enabled {
			iu.Enabled = boolPtr(true)
		}
		for _, d := range u.Dropins {
			iu.Dropins = append(iu.Dropins, types.Dropin{Name: d.Name, Contents: strPtr(d.Contents)})
		}
		cfg.Systemd.Units = append(cfg.Systemd.Units, iu)
	}

	if len(opts.SSHAuthorizedKeys) > 0 {
		user := types.PasswdUser{Name: "core"}
		seen := map[string]bool{}
		for i, k := range opts.SSHAuthorizedKeys {
			k = strings.TrimSpace(k)
			if k == "" || strings.ContainsAny(k, "\r\n") {
				return nil, fmt.Errorf("building ignition config: SSH authorized key %d is empty or spans several lines", i)
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			user.SSHAuthorizedKeys = append(user.SSHAuthorizedKeys, types.SSHAuthorizedKey(k))
		}
		cfg.Passwd.Users = []types.PasswdUser{user}
	}

	if raw := opts.PreviousParsed.same(&cfg); raw != nil {
		return &Built{Raw: raw, config: cfg}, nil
	}
	size += 128 * len(cfg.Storage.Directories)
	for _, u := range cfg.Systemd.Units {
		size += 2*len(ptrString(u.Contents)) + 128 // a unit's contents are JSON-escaped: newlines, quotes
		for _, d := range u.Dropins {
			size += 2*len(ptrString(d.Contents)) + 128
		}
	}
	raw, err := codec.MarshalCompactJSONSized(cfg, size)
	if err != nil {
		return nil, fmt.Errorf("building ignition config: marshalling: %w", err)
	}
	return &Built{Raw: raw, config: cfg}, nil
}

// reportText is a report's text without the trailing newline.
func reportText(r fmt.Stringer) string {
	return strings.TrimRight(r.String(), "\n")
}

func rootNode(p string, overwrite bool) types.Node {
	n := types.Node{
		Path:  p,
		User:  types.NodeUser{ID: intPtr(0)},
		Group: types.NodeGroup{ID: intPtr(0)},
	}
	if overwrite {
		n.Overwrite = boolPtr(true)
	}
	return n
}

func intPtr(i int) *int { return &i }
func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
func strPtr(s string) *string { return &s }
func boolPtr(b bool) *bool    { return &b }

// encodeAll encodes every file's contents (encode; gzipDataURL for a compressed file), in files' order. Which files
// another file holds the base64 of is found first (base64Tokens); files with the same contents (every manifest is
// both in /opt/openshift/manifests and in the installer's manifests, the etcd certificates once per revision) and
// the same compression are encoded once, one worker per core.
func encodeAll(files []File) []string {
	tokens := base64Tokens(files)
	out := make([]string, len(files))
	same := newContentIndex(len(files))
	sameAs := make([]int, len(files))
	var distinct []int
	for i, f := range files {
		if j, ok := same.firstOf(i, f.Contents, func(j int) bool { return files[j].Compressed == f.Compressed }); ok {
			sameAs[i] = j
			continue
		}
		sameAs[i] = i
		distinct = append(distinct, i)
	}
	workers := min(runtime.GOMAXPROCS(0), len(distinct))
	parallelEach(len(distinct), workers, func() struct{} { return struct{}{} }, func(_ struct{}, n int) error {
		i := distinct[n]
		if files[i].Compressed {
			out[i] = gzipDataURL(files[i].Contents)
		} else {
			out[i] = encode(files[i].Contents, tokens)
		}
		return nil
	})
	for i := range files {
		out[i] = out[sameAs[i]]
	}
	return out
}

// minToken is the shortest run of base64 characters base64Tokens keeps: shorter runs are words of the YAML and
// scripts, not encoded contents (a PEM certificate or key is over a thousand).
const minToken = 64

// tokenSet is the maximal runs of base64 characters (with their padding) that files hold, by length.
type tokenSet map[int]map[string]struct{}

// base64Tokens collects every maximal run of at least minToken characters of the standard base64 alphabet,
// followed by its '=' padding, in the files' contents (a Secret manifest's values, a kubeconfig's certificate and
// key data) that is as long as the base64 of some file's contents: encode looks up no other length. (live.ign's
// aio.ign holds thousands of other runs, its own data URLs' words among them.)
func base64Tokens(files []File) tokenSet {
	set := tokenSet{}
	wanted := map[int]bool{}
	for _, f := range files {
		if n := base64.StdEncoding.EncodedLen(len(f.Contents)); n >= minToken {
			wanted[n] = true
		}
	}
	for _, f := range files {
		b := f.Contents
		for i := 0; i < len(b); {
			if !base64Alphabet[b[i]] {
				i++
				continue
			}
			j := i
			for j < len(b) && base64Alphabet[b[j]] {
				j++
			}
			for k := 0; k < 2 && j < len(b) && b[j] == '='; k++ {
				j++
			}
			if j-i >= minToken && wanted[j-i] && (j == len(b) || !base64Alphabet[b[j]]) {
				if set[j-i] == nil {
					set[j-i] = map[string]struct{}{}
				}
				set[j-i][string(b[i:j])] = struct{}{}
			}
			i = j
		}
	}
	return set
}

// holds says whether s is one of the tokens.
func (t tokenSet) holds(s string) bool {
	_, ok := t[len(s)][s]
	return ok
}

// base64Alphabet are the bytes of standard base64 without its padding.
var base64Alphabet = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = true
	}
	return t
}()

// encode is the data URL of data (see Ignition): base64 when tokens hold data's base64 (xz then finds it there),
// or when data is not text and base64 is shorter; otherwise plain, escaped (escapeDataURL). The plain URL is built
// in one allocation, after one pass over data that finds both its escaped length and whether it is text
// (scanPlain): aio.ign's contents and live.ign's aio.ign are megabytes.
func encode(data []byte, tokens tokenSet) string {
	const plainPrefix, b64Prefix = "data:,", "data:;base64,"
	if n := base64.StdEncoding.EncodedLen(len(data)); n >= minToken && len(tokens[n]) > 0 {
		if b64 := base64.StdEncoding.EncodeToString(data); tokens.holds(b64) {
			return b64Prefix + b64
		}
	}
	escaped, text := scanPlain(data)
	if !text && len(b64Prefix)+base64.StdEncoding.EncodedLen(len(data)) < len(plainPrefix)+escaped {
		return b64Prefix + base64.StdEncoding.EncodeToString(data)
	}
	return appendEscaped(plainPrefix, data, escaped)
}

// scanPlain is len(escapeDataURL(data)) and whether data is text: UTF-8 without control characters other than
// tab, newline and carriage return.
func scanPlain(data []byte) (escaped int, text bool) {
	escaped, text = len(data), true
	nonASCII := false
	for _, c := range data {
		switch dataURLClass[c] {
		case classLiteral:
			continue
		case classControl:
			text = false
		case classNonASCII:
			nonASCII = true
		}
		escaped += 2
	}
	if text && nonASCII {
		text = utf8.Valid(data)
	}
	return escaped, text
}

// escapeDataURL percent-escapes data for the data part of a "data:," URL: only what the data URL decoder Ignition
// uses (github.com/vincent-petithory/dataurl: lex.go's isURLCharRune, then rfc2396.go's Unescape, which takes every
// other byte as it is) refuses, and what the URL parser Ignition runs first (net/url) would take apart: controls,
// DEL, space, "<>#"{}|\^[]` and '%' itself, and every non-ASCII byte, become %XX. Everything else is left as it is,
// '+' and '?' included ('?' starts the URL's query, which Ignition's url.String() gives back unchanged).
func escapeDataURL(data []byte) string {
	return appendEscaped("", data, escapedLen(data))
}

// escapedLen is len(escapeDataURL(data)).
func escapedLen(data []byte) int {
	n, _ := scanPlain(data)
	return n
}

// appendEscaped is prefix + escapeDataURL(data), where len(escapeDataURL(data)) is n.
func appendEscaped(prefix string, data []byte, n int) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(prefix) + n)
	b.WriteString(prefix)
	for _, c := range data {
		if dataURLLiterals[c] {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

// The classes of bytes scanPlain tells apart: left as they are in a data URL, escaped, escaped and not text
// (controls other than tab, newline and carriage return; DEL), escaped and text only in valid UTF-8.
const (
	classLiteral = iota
	classEscaped
	classControl
	classNonASCII
)

var dataURLClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case dataURLLiteral(byte(c)):
			t[c] = classLiteral
		case c >= 0x80:
			t[c] = classNonASCII
		case (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f:
			t[c] = classControl
		default:
			t[c] = classEscaped
		}
	}
	return t
}()

// dataURLLiterals are the bytes escapeDataURL leaves as they are.
var dataURLLiterals = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = dataURLLiteral(byte(c))
	}
	return t
}()

func dataURLLiteral(c byte) bool {
	return c > 0x20 && c < 0x7f && strings.IndexByte("<>#\"{}|\\^[]`%", c) < 0
}
