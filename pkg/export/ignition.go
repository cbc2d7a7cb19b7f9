package export

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/coreos/ignition/v2/config/validate"
	"github.com/klauspost/compress/gzip"

	"github.com/render-static/render-static/pkg/codec"
)

// IgnitionOptions are the parts of aio.ign that are not files, directories or units.
type IgnitionOptions struct {
	SSHAuthorizedKeys []string // for user "core"
	// Previous is an earlier aio.ign of the same output, encoded with the same EncoderID (nil: none). A file it
	// holds at the same path with the same contents (checked by decoding it) keeps the data URL it has there
	// instead of being compressed again: what encoding it would give (a re-render changes few files).
	Previous []byte
	// PreviousParsed is Previous already parsed (ParsePreviousIgnition), e.g. while the loops ran; it is used
	// instead of Previous when set.
	PreviousParsed *PreviousIgnition
}

// PreviousIgnition is an earlier aio.ign's file contents, parsed for IgnitionOptions.PreviousParsed.
type PreviousIgnition struct {
	sources map[string]types.Resource
	// decoded is what each base64 source decodes to, by path (ParseValidatePreviousIgnition; nil otherwise).
	decoded map[string][]byte
	// raw is the earlier aio.ign and valid the Built.Validate result of its config, there once checked is closed
	// (nil checked: not validated, see ParseValidatePreviousIgnition; an error too when marshalCompact does not give
	// raw back from its config byte for byte); config is raw parsed, when it passed (nil otherwise).
	raw     []byte
	valid   error
	config  *types.Config
	checked chan struct{}
}

// ParsePreviousIgnition parses an earlier aio.ign for IgnitionOptions.PreviousParsed (one that does not parse,
// or nil, gives nothing to reuse).
func ParsePreviousIgnition(ign []byte) *PreviousIgnition {
	return &PreviousIgnition{sources: previousSources(ign)}
}

// ParseValidatePreviousIgnition is ParsePreviousIgnition that also does ahead what a re-render of unchanged inputs,
// which makes exactly the earlier aio.ign, would do after its loops: on a goroutine of its own it keeps the config
// parsed from the earlier aio.ign when marshalling it gives the earlier aio.ign back (IgnitionUnvalidated then needs
// no marshalling of an identical config) and validates that config (Built.Validate; Validate then needs no
// validation of an identical config); and it decodes the earlier files' contents (IgnitionUnvalidated then compares
// contents without decompressing them). The caller does other work meanwhile (the loops). The earlier aio.ign is
// parsed once, with encoding/json (what marshalCompact wrote, it reads back exactly: the marshalling check).
func ParseValidatePreviousIgnition(ign []byte) *PreviousIgnition {
	p := &PreviousIgnition{raw: ign, checked: make(chan struct{})}
	var cfg types.Config
	parseErr := errors.New("no earlier config")
	if len(ign) > 0 {
		parseErr = json.Unmarshal(ign, &cfg)
	}
	go func() {
		defer close(p.checked)
		if parseErr != nil {
			p.valid = parseErr
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
	if parseErr == nil {
		p.sources = sourcesOf(cfg.Storage.Files)
	}
	p.decoded = make(map[string][]byte, len(p.sources))
	e := &encoder{}
	for path, r := range p.sources {
		if b, ok := e.decode(r); ok {
			p.decoded[path] = bytes.Clone(b)
		}
	}
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
// emit; the parse cost a fresh render ~45 ms of CPU, most of its Ignition validation.
func (b *Built) Validate() error {
	if b.config.Ignition.Version != types.MaxVersion.String() {
		return fmt.Errorf("building ignition config: version %q is not %s", b.config.Ignition.Version, types.MaxVersion)
	}
	if rpt := validate.ValidateWithContext(b.config, nil); len(rpt.Entries) > 0 {
		return fmt.Errorf("building ignition config: validating it reported:\n%s", reportText(rpt))
	}
	return nil
}

// EncoderID names how Ignition encodes contents (the compressor's module and version, which make the bytes, and the
// level): an earlier aio.ign may serve as IgnitionOptions.Previous only when it was made with the same one.
var EncoderID = compressorVersion() + " gzip level " + strconv.Itoa(gzipLevel)

// compressorModule makes the gzip streams: github.com/klauspost/compress (already linked, by the Prometheus client
// that library-go's events use) compresses a render's files in half the CPU of the standard library's
// compress/gzip at the same level, for 0.8 % more bytes (the bundled example's rootfs: 19 ms and 669,908 bytes
// against 37 ms and 664,820 at level 6). Its streams are standard gzip, which Ignition decompresses.
const compressorModule = "github.com/klauspost/compress"

// compressorVersion is compressorModule with the version linked into this binary (its replacement's, if
// replaced); with the Go release when the binary carries no module information.
func compressorVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path != compressorModule {
				continue
			}
			if d.Replace != nil {
				d = d.Replace
			}
			return compressorModule + " " + d.Version + " " + d.Sum
		}
	}
	return compressorModule + " (version unknown) " + runtime.Version()
}

// Ignition builds an Ignition spec 3.2.0 config from t:
//
//   - every file root:root (uid/gid 0), overwrite true, with its mode, and its contents as a data URL:
//     base64 of gzip with compression "gzip" when that is shorter than the plain form, otherwise the
//     shorter of "data:,<percent-escaped>" and "data:;base64,<base64>";
//   - every explicit directory root:root with its mode (implied directories are left to Ignition, which
//     creates missing parents 0755 root:root);
//   - every unit with its contents and drop-ins; enabled units get "enabled": true, the others leave
//     "enabled" unset (Ignition then does not touch their enablement);
//   - user "core" with opts.SSHAuthorizedKeys (no passwd section when there are no keys).
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
	prev := opts.PreviousParsed
	if prev == nil {
		prev = ParsePreviousIgnition(opts.Previous)
	}
	encoded, err := encodeAll(files, prev)
	if err != nil {
		return nil, fmt.Errorf("building ignition config: %w", err)
	}
	for i, f := range files {
		src, compressed := encoded[i].src, encoded[i].compressed
		res := types.Resource{Source: &src}
		if compressed {
			res.Compression = strPtr("gzip")
		}
		cfg.Storage.Files = append(cfg.Storage.Files, types.File{
			Node:          rootNode(f.Path, true),
			FileEmbedded1: types.FileEmbedded1{Contents: res, Mode: intPtr(int(f.Mode.Perm()))},
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

	if raw := prev.same(&cfg); raw != nil {
		return &Built{Raw: raw, config: cfg}, nil
	}
	raw, err := codec.MarshalCompactJSON(cfg)
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

func intPtr(i int) *int       { return &i }
func strPtr(s string) *string { return &s }
func boolPtr(b bool) *bool    { return &b }

type encodedFile struct {
	src        string
	compressed bool
}

// encodeAll encodes every file's contents, one worker per core, each reusing its gzip writer (a gzip writer
// allocates about a megabyte). The result is in files' order and the same as encoding one after another. A file
// whose previous encoding (by path) decodes to its contents keeps that encoding. Files with the same contents
// (every manifest is both in /opt/openshift/manifests and in the installer's manifests, the etcd certificates
// once per revision) are encoded once: an encoding is a function of the contents alone.
func encodeAll(files []File, prev *PreviousIgnition) ([]encodedFile, error) {
	out := make([]encodedFile, len(files))
	same := newContentIndex(len(files))
	sameAs := make([]int, len(files))
	var distinct []int
	for i, f := range files {
		if j, ok := same.firstOf(i, f.Contents, nil); ok {
			sameAs[i] = j
			continue
		}
		sameAs[i] = i
		distinct = append(distinct, i)
	}
	workers := min(runtime.GOMAXPROCS(0), len(distinct))
	errs := parallelEach(len(distinct), workers, func() *encoder { return &encoder{} }, func(e *encoder, n int) error {
		i := distinct[n]
		if prev.reusable(e, files[i].Path, files[i].Contents) {
			r := prev.sources[files[i].Path]
			out[i].src, out[i].compressed = *r.Source, r.Compression != nil
			return nil
		}
		var err error
		if out[i].src, out[i].compressed, err = e.encode(files[i].Contents); err != nil {
			return fmt.Errorf("%s: %w", files[i].Path, err)
		}
		return nil
	})
	for i := range files {
		out[i] = out[sameAs[i]]
	}
	return out, errors.Join(errs...)
}

// previousSources are the file contents of an earlier aio.ign by path, as encode writes them (a data URL, gzip or
// none); nil when there is none or it does not parse.
func previousSources(ign []byte) map[string]types.Resource {
	if len(ign) == 0 {
		return nil
	}
	var cfg struct {
		Storage struct {
			Files []types.File `json:"files"`
		} `json:"storage"`
	}
	if json.Unmarshal(ign, &cfg) != nil {
		return nil
	}
	return sourcesOf(cfg.Storage.Files)
}

// sourcesOf is previousSources of an earlier aio.ign's files.
func sourcesOf(files []types.File) map[string]types.Resource {
	out := make(map[string]types.Resource, len(files))
	for _, f := range files {
		r := f.Contents
		if r.Source == nil || (r.Compression != nil && *r.Compression != "gzip") || r.Verification.Hash != nil ||
			r.HTTPHeaders != nil {
			continue
		}
		out[f.Path] = r
	}
	return out
}

// reusable says whether the earlier file at path (p may be nil) decodes to data: its encoding is then kept.
func (p *PreviousIgnition) reusable(e *encoder, path string, data []byte) bool {
	if p == nil {
		return false
	}
	if d, ok := p.decoded[path]; ok {
		return bytes.Equal(d, data)
	}
	r, ok := p.sources[path]
	return ok && e.holds(r, data)
}

// holds says whether the resource r (from previousSources) decodes to data.
func (e *encoder) holds(r types.Resource, data []byte) bool {
	if esc, ok := strings.CutPrefix(*r.Source, "data:,"); ok && r.Compression == nil {
		return escapeDataURL(data) == esc
	}
	d, ok := e.decodeAtMost(r, int64(len(data))+1)
	return ok && bytes.Equal(d, data)
}

// decode is what a base64 resource r (from previousSources) decodes to, in e's buffer (valid until e's next use);
// false for other resources.
func (e *encoder) decode(r types.Resource) ([]byte, bool) {
	return e.decodeAtMost(r, 1<<30)
}

// decodeAtMost is decode reading at most limit bytes of a compressed resource.
func (e *encoder) decodeAtMost(r types.Resource, limit int64) ([]byte, bool) {
	b64, ok := strings.CutPrefix(*r.Source, "data:;base64,")
	if !ok {
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, false
	}
	if r.Compression == nil {
		return raw, true
	}
	if e.zr == nil {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, false
		}
		e.zr = zr
	} else if e.zr.Reset(bytes.NewReader(raw)) != nil {
		return nil, false
	}
	e.zbuf.Reset()
	if _, err := e.zbuf.ReadFrom(io.LimitReader(e.zr, limit)); err != nil {
		return nil, false
	}
	return e.zbuf.Bytes(), true
}

// gzipLevel is a fast level: on a render's files (YAML, PEM, scripts) klauspost/compress's level 3 takes two thirds
// of the CPU of its default (5) for 2 % more bytes (the bundled example's rootfs: 694,425 against 680,660 bytes,
// 15.7 against 21.9 ms), level 1 a little less again for 8.7 % more, and BestCompression about 3.5 times the CPU
// of the default for 1.3 % fewer bytes than it.
const gzipLevel = 3

// encoder is one worker's reusable gzip state.
type encoder struct {
	zbuf bytes.Buffer
	zw   *gzip.Writer
	zr   *gzip.Reader
}

// encodeContents returns the data URL for data and whether it holds gzip-compressed bytes.
func encodeContents(data []byte) (string, bool, error) {
	return (&encoder{}).encode(data)
}

// encode picks the shortest of three data URLs: percent-escaped ("data:,"), base64 ("data:;base64,") and gzip then
// base64 (ties keep the earlier). Their lengths are known without building them (the gzip stream aside), so only
// the chosen one is built.
func (e *encoder) encode(data []byte) (string, bool, error) {
	const plainPrefix, b64Prefix = "data:,", "data:;base64,"
	escaped := escapedLen(data)
	best, bestLen := 0, len(plainPrefix)+escaped // 0 plain, 1 base64
	if l := len(b64Prefix) + base64.StdEncoding.EncodedLen(len(data)); l < bestLen {
		best, bestLen = 1, l
	}
	// A gzip stream is at least 20 bytes (10 header, 8 trailer, 2 of deflate): its URL cannot be shorter than that.
	if len(data) > 0 && bestLen > len(b64Prefix)+base64.StdEncoding.EncodedLen(20) {
		e.zbuf.Reset()
		if e.zw == nil {
			zw, err := gzip.NewWriterLevel(&e.zbuf, gzipLevel)
			if err != nil {
				return "", false, err
			}
			e.zw = zw
		} else {
			e.zw.Reset(&e.zbuf)
		}
		if _, err := e.zw.Write(data); err != nil {
			return "", false, err
		}
		if err := e.zw.Close(); err != nil {
			return "", false, err
		}
		if len(b64Prefix)+base64.StdEncoding.EncodedLen(e.zbuf.Len()) < bestLen {
			return b64Prefix + base64.StdEncoding.EncodeToString(e.zbuf.Bytes()), true, nil
		}
	}
	if best == 1 {
		return b64Prefix + base64.StdEncoding.EncodeToString(data), false, nil
	}
	return plainPrefix + escapeDataURLLen(data, escaped), false, nil
}

// escapeDataURL percent-escapes data for the data part of a "data:," URL. Bytes left as they are:
// ASCII letters and digits and -._~!$&'()*,;=:@/ — all valid unescaped in a URL and taken literally
// by data URL decoders. Everything else (including '%', '+', '?', '#', space and non-ASCII) becomes %XX.
func escapeDataURL(data []byte) string {
	return escapeDataURLLen(data, escapedLen(data))
}

// escapedLen is len(escapeDataURL(data)).
func escapedLen(data []byte) int {
	n := len(data)
	for _, c := range data {
		if !dataURLLiterals[c] {
			n += 2
		}
	}
	return n
}

// escapeDataURLLen is escapeDataURL(data), whose length is n.
func escapeDataURLLen(data []byte, n int) string {
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, n)
	for _, c := range data {
		if dataURLLiterals[c] {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&0xf])
	}
	return string(b)
}

// dataURLLiterals are the bytes escapeDataURL leaves as they are.
var dataURLLiterals = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = dataURLLiteral(byte(c))
	}
	return t
}()

func dataURLLiteral(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*,;=:@/", c) >= 0
}
