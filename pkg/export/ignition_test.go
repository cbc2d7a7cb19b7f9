package export

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coreos/ignition/v2/config/v3_2"
	"github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/vincent-petithory/dataurl"

	"github.com/render-static/render-static/pkg/codec"
)

const (
	testKey1 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTestsOnly0000000000000000000000 one@example"
	testKey2 = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQFakeKeyForTestsOnly two@example"

	kubeletUnit = "[Unit]\nDescription=Kubelet\n[Service]\nExecStart=/usr/bin/kubelet\n[Install]\nWantedBy=multi-user.target\n"
)

// randomBytes returns n bytes from a fixed-seed generator (incompressible, but the same every run).
func randomBytes(n int) []byte {
	r := rand.NewChaCha8([32]byte{1, 2, 3})
	b := make([]byte, n)
	_, _ = r.Read(b)
	return b
}

// testPEM is a PEM file whose base64 the test Secret manifest holds (testFiles).
var testPEM = "-----BEGIN CERTIFICATE-----\n" + base64.StdEncoding.EncodeToString(randomBytes(700)) + "\n-----END CERTIFICATE-----\n"

// testFiles are the contents the round-trip test packs, by path.
func testFiles() map[string]struct {
	mode fs.FileMode
	data []byte
	b64  bool // whether base64 must be chosen
} {
	type f = struct {
		mode fs.FileMode
		data []byte
		b64  bool
	}
	secret := "apiVersion: v1\ndata:\n  tls.crt: " + base64.StdEncoding.EncodeToString([]byte(testPEM)) + "\nkind: Secret\n"
	return map[string]f{
		"/etc/empty":                              {0o644, nil, false},
		"/etc/hello.txt":                          {0o644, []byte("hello world\n"), false},
		"/etc/special.txt":                        {0o640, []byte("100% a+b=c #x ?y <z> \"q\" \\ ü\t\r\n{}|^[]`~"), false},
		"/etc/kubernetes/manifests/big.yaml":      {0o644, bytes.Repeat([]byte("- name: repeated-line\n  value: 1234567890\n"), 4000), false},
		"/usr/local/bin/random.bin":               {0o755, randomBytes(8192), true},
		"/etc/kubernetes/secrets/tls.key":         {0o600, randomBytes(100), true},
		"/etc/kubernetes/bootstrap/run-me.sh":     {0o700, []byte("#!/bin/sh\necho hi\n"), false},
		"/var/lib/kubelet/config.json":            {0o400, []byte(`{"auths":{}}`), false},
		"/etc/kubernetes/static-pod-resources/x1": {0o644, []byte{0, 1, 2, 3, 255, 254}, true},
		"/etc/kubernetes/secrets/tls.crt":         {0o600, []byte(testPEM), true},
		"/opt/openshift/manifests/secret.yaml":    {0o600, []byte(secret), false},
		"/etc/kubernetes/pem-alone.crt":           {0o644, []byte(strings.Replace(testPEM, "CERTIFICATE", "OTHER", 2)), false},
	}
}

func buildTestTree(t *testing.T) *Tree {
	t.Helper()
	tr := NewTree()
	for p, f := range testFiles() {
		if err := tr.AddFile(p, f.mode, f.data); err != nil {
			t.Fatal(err)
		}
	}
	mustAddDir(t, tr, "/etc/kubernetes/secrets", 0o700)
	mustAddDir(t, tr, "/var/lib/etcd", 0o700)
	mustAddDir(t, tr, "/var/log/empty", 0o755)
	mustAddUnit(t, tr, Unit{Name: "kubelet.service", Contents: kubeletUnit, Enabled: true,
		Dropins: []Dropin{{"20-extra.conf", "[Service]\nEnvironment=B=2\n"}, {"10-env.conf", "[Service]\nEnvironment=A=1\n"}}})
	mustAddUnit(t, tr, Unit{Name: "crio.service", Enabled: true})
	mustAddUnit(t, tr, Unit{Name: "zincati.service", Dropins: []Dropin{{"10-off.conf", "[Unit]\nConditionPathExists=/nonexistent\n"}}})
	mustAddUnit(t, tr, Unit{Name: "helper.service", Contents: "[Service]\nType=oneshot\nExecStart=/bin/true\n"})
	return tr
}

// decodeSource decodes an Ignition resource the way Ignition does (internal/resource/url.go): the URL parsed with
// net/url, its String() decoded as a data URL; nothing is compressed.
func decodeSource(t *testing.T, res types.Resource) []byte {
	t.Helper()
	if res.Source == nil {
		t.Fatal("nil source")
	}
	if res.Compression != nil {
		t.Fatalf("compression %q set", *res.Compression)
	}
	u, err := url.Parse(*res.Source)
	if err != nil {
		t.Fatalf("parsing URL %.60q: %v", *res.Source, err)
	}
	du, err := dataurl.DecodeString(u.String())
	if err != nil {
		t.Fatalf("decoding data URL %.60q: %v", *res.Source, err)
	}
	return du.Data
}

func parseIgnition(t *testing.T, raw []byte) types.Config {
	t.Helper()
	cfg, rpt, err := v3_2.Parse(raw)
	if err != nil {
		t.Fatalf("v3_2.Parse: %v\n%s", err, rpt.String())
	}
	if len(rpt.Entries) != 0 {
		t.Fatalf("v3_2.Parse reported %d entries:\n%s", len(rpt.Entries), rpt.String())
	}
	return cfg
}

func TestIgnitionRoundTrip(t *testing.T) {
	tr := buildTestTree(t)
	raw, err := Ignition(tr, IgnitionOptions{SSHAuthorizedKeys: []string{testKey1, " " + testKey2 + "\n", testKey1}})
	if err != nil {
		t.Fatalf("Ignition: %v", err)
	}
	cfg := parseIgnition(t, raw)
	if cfg.Ignition.Version != "3.2.0" {
		t.Errorf("version %q, want 3.2.0", cfg.Ignition.Version)
	}

	want := testFiles()
	if len(cfg.Storage.Files) != len(want) {
		t.Errorf("%d files in config, want %d", len(cfg.Storage.Files), len(want))
	}
	for i, f := range cfg.Storage.Files {
		if i > 0 && cfg.Storage.Files[i-1].Path >= f.Path {
			t.Errorf("files not sorted: %s before %s", cfg.Storage.Files[i-1].Path, f.Path)
		}
		w, ok := want[f.Path]
		if !ok {
			t.Errorf("unexpected file %s", f.Path)
			continue
		}
		if f.User.ID == nil || *f.User.ID != 0 || f.Group.ID == nil || *f.Group.ID != 0 || f.User.Name != nil || f.Group.Name != nil {
			t.Errorf("%s: owner is not uid/gid 0: %+v %+v", f.Path, f.User, f.Group)
		}
		if f.Overwrite == nil || !*f.Overwrite {
			t.Errorf("%s: overwrite not true", f.Path)
		}
		if f.Mode == nil || fs.FileMode(*f.Mode) != w.mode {
			t.Errorf("%s: mode %v, want %#o", f.Path, f.Mode, w.mode)
		}
		if len(f.Append) != 0 {
			t.Errorf("%s: has append", f.Path)
		}
		if b64 := strings.HasPrefix(*f.Contents.Source, "data:;base64,"); b64 != w.b64 {
			t.Errorf("%s: base64 chosen = %v, want %v (source %.40q)", f.Path, b64, w.b64, *f.Contents.Source)
		}
		if got := decodeSource(t, f.Contents); !bytes.Equal(got, w.data) {
			t.Errorf("%s: contents do not round-trip: got %d bytes %.40q, want %d bytes %.40q", f.Path, len(got), got, len(w.data), w.data)
		}
	}

	wantDirs := map[string]int{"/etc/kubernetes/secrets": 0o700, "/var/lib/etcd": 0o700, "/var/log/empty": 0o755}
	if len(cfg.Storage.Directories) != len(wantDirs) {
		t.Errorf("directories: %+v", cfg.Storage.Directories)
	}
	for _, d := range cfg.Storage.Directories {
		if d.Mode == nil || *d.Mode != wantDirs[d.Path] {
			t.Errorf("dir %s: mode %v, want %#o", d.Path, d.Mode, wantDirs[d.Path])
		}
		if d.User.ID == nil || *d.User.ID != 0 || d.Group.ID == nil || *d.Group.ID != 0 {
			t.Errorf("dir %s: not root:root", d.Path)
		}
	}

	units := map[string]types.Unit{}
	var names []string
	for _, u := range cfg.Systemd.Units {
		units[u.Name] = u
		names = append(names, u.Name)
	}
	if want := []string{"crio.service", "helper.service", "kubelet.service", "zincati.service"}; !reflect.DeepEqual(names, want) {
		t.Errorf("units %v, want %v", names, want)
	}
	k := units["kubelet.service"]
	if k.Contents == nil || *k.Contents != kubeletUnit || k.Enabled == nil || !*k.Enabled {
		t.Errorf("kubelet.service: %+v", k)
	}
	if len(k.Dropins) != 2 || k.Dropins[0].Name != "10-env.conf" || *k.Dropins[1].Contents != "[Service]\nEnvironment=B=2\n" {
		t.Errorf("kubelet.service drop-ins: %+v", k.Dropins)
	}
	if c := units["crio.service"]; c.Contents != nil || c.Enabled == nil || !*c.Enabled {
		t.Errorf("crio.service: %+v", c)
	}
	if z := units["zincati.service"]; z.Contents != nil || z.Enabled != nil || len(z.Dropins) != 1 {
		t.Errorf("zincati.service: %+v", z)
	}
	if h := units["helper.service"]; h.Enabled != nil {
		t.Errorf("helper.service: enabled set for a unit not enabled: %+v", h)
	}

	if len(cfg.Passwd.Users) != 1 || cfg.Passwd.Users[0].Name != "core" {
		t.Fatalf("users: %+v", cfg.Passwd.Users)
	}
	gotKeys := cfg.Passwd.Users[0].SSHAuthorizedKeys
	if want := []types.SSHAuthorizedKey{testKey1, testKey2}; !reflect.DeepEqual(gotKeys, want) {
		t.Errorf("core keys %q, want %q", gotKeys, want)
	}
}

func TestIgnitionEncodingChoice(t *testing.T) {
	pem := []byte("-----BEGIN KEY-----\n" + strings.Repeat("QUJD", 30) + "\n-----END KEY-----\n")
	// The holder and the PEM, as a tree holds them: tokens are collected at the lengths of the files' base64.
	tokens := base64Tokens([]File{{Contents: []byte("k: " + base64.StdEncoding.EncodeToString(pem) + "\n")}, {Contents: pem}})
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty", "", "data:,"},
		{"text", "hello world\n", "data:,hello%20world%0A"},
		{"escapes", "a%b+c#d?e\"f{g}h|i\\j^k[l]m`n<o>p~", "data:,a%25b+c%23d?e%22f%7Bg%7Dh%7Ci%5Cj%5Ek%5Bl%5Dm%60n%3Co%3Ep~"},
		{"non-ASCII text", "é\t", "data:,%C3%A9%09"},
		{"binary", "\x00\x01\x02\xff\xfe\xfd", "data:;base64,AAEC//79"},
		{"binary, plain shorter", "abcdefghijklmnopqrstuvwxyz\x00", "data:,abcdefghijklmnopqrstuvwxyz%00"},
		{"repetitive", strings.Repeat("a", 1000), "data:," + strings.Repeat("a", 1000)},
		{"another file holds its base64", string(pem), "data:;base64," + base64.StdEncoding.EncodeToString(pem)},
		{"a PEM no file holds the base64 of", strings.Replace(string(pem), "KEY", "CERT", 2), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = "data:," + escapeDataURL([]byte(tc.data))
			}
			if src := encode([]byte(tc.data), tokens); src != want {
				t.Errorf("source %q, want %q", src, want)
			}
		})
	}
}

func TestIgnitionNoUserWithoutKeys(t *testing.T) {
	tr := NewTree()
	mustAddFile(t, tr, "/etc/x", 0o644, "x")
	raw, err := Ignition(tr, IgnitionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseIgnition(t, raw)
	if len(cfg.Passwd.Users) != 0 {
		t.Errorf("users without keys: %+v", cfg.Passwd.Users)
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	if _, ok := generic["passwd"]; ok {
		t.Errorf("passwd section present without keys: %s", raw)
	}
	for _, bad := range [][]string{{""}, {"  "}, {testKey1 + "\n" + testKey2}} {
		if out, err := Ignition(tr, IgnitionOptions{SSHAuthorizedKeys: bad}); err == nil || out != nil {
			t.Errorf("keys %q: got err=%v, %d bytes", bad, err, len(out))
		}
	}
}

func TestIgnitionEmptyTree(t *testing.T) {
	raw, err := Ignition(NewTree(), IgnitionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parseIgnition(t, raw)
}

func TestIgnitionDeterministic(t *testing.T) {
	tr := buildTestTree(t)
	opts := IgnitionOptions{SSHAuthorizedKeys: []string{testKey1}}
	a, err := Ignition(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Ignition(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two calls on the same tree differ")
	}
	// A tree with the same contents added in the opposite order gives the same bytes.
	src := buildTestTree(t)
	rev := NewTree()
	files := src.Files()
	for i := len(files) - 1; i >= 0; i-- {
		mustAddFile(t, rev, files[i].Path, files[i].Mode, string(files[i].Contents))
	}
	units := src.Units()
	for i := len(units) - 1; i >= 0; i-- {
		mustAddUnit(t, rev, units[i])
	}
	dirs := src.Dirs()
	for i := len(dirs) - 1; i >= 0; i-- {
		mustAddDir(t, rev, dirs[i].Path, dirs[i].Mode)
	}
	c, err := Ignition(rev, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, c) {
		t.Error("same tree built in another order gives different bytes")
	}
}

func TestIgnitionRejectsInvalidConfig(t *testing.T) {
	for name, u := range map[string]Unit{
		// Ignition warns: an enabled unit without [Install] cannot be enabled.
		"no install section": {Name: "x.service", Contents: "[Service]\nExecStart=/bin/true\n", Enabled: true},
		// Ignition errors: not a unit file.
		"unparsable contents": {Name: "y.service", Contents: "[Unit\nDescription=broken\n"},
		"unparsable drop-in":  {Name: "z.service", Dropins: []Dropin{{"10-x.conf", "[Service\n"}}},
	} {
		t.Run(name, func(t *testing.T) {
			tr := NewTree()
			mustAddUnit(t, tr, u)
			out, err := Ignition(tr, IgnitionOptions{})
			if err == nil || out != nil {
				t.Fatalf("got err=%v and %d bytes, want an error and no output", err, len(out))
			}
			t.Logf("error (expected): %v", err)
			if !strings.Contains(err.Error(), "systemd") {
				t.Errorf("error does not carry the report text: %v", err)
			}
		})
	}
}

// TestIgnitionValidateTool runs the real ignition-validate on a produced config.
func TestIgnitionValidateTool(t *testing.T) {
	bin := testtools.Tool(t, "ignition-validate")
	raw, err := Ignition(buildTestTree(t), IgnitionOptions{SSHAuthorizedKeys: []string{testKey1, testKey2}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "aio.ign")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, path).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, path, err, out)
	}
	if len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("ignition-validate printed findings:\n%s", out)
	}
	ver, _ := exec.Command(bin, "-version").CombinedOutput()
	t.Logf("%s: exit 0, no output", strings.TrimSpace(string(ver)))
}

// TestIgnitionParallelEncodingMatchesSerial: the workers encode every file of a large, varied tree exactly as
// encode does one file after another, in the tree's order; a fifth of the files repeat the contents of an earlier
// one (encoded once), and some hold the base64 of another file (which is then encoded as base64).
func TestIgnitionParallelEncodingMatchesSerial(t *testing.T) {
	tr := NewTree()
	r := rand.New(rand.NewPCG(1, 2))
	var made []string
	for i := 0; i < 300; i++ {
		name := filepath.Join("/etc/test", strings.Repeat("d", i%7), "f"+string(rune('a'+i%26))+strings.Repeat("x", i))
		switch {
		case i > 0 && r.IntN(5) == 0:
			mustAddFile(t, tr, name, 0644, made[r.IntN(len(made))])
			continue
		case i > 0 && r.IntN(5) == 0:
			mustAddFile(t, tr, name, 0644, "data: "+base64.StdEncoding.EncodeToString([]byte(made[r.IntN(len(made))]))+"\n")
			continue
		}
		var b strings.Builder
		for j := 0; j < r.IntN(4000); j++ {
			if r.IntN(3) == 0 {
				b.WriteByte(byte(r.IntN(256)))
			} else {
				b.WriteString("key: value\n")
			}
		}
		made = append(made, b.String())
		mustAddFile(t, tr, name, 0644, b.String())
	}
	files := tr.Files()
	got := encodeAll(files)
	if len(got) != len(files) {
		t.Fatalf("%d encodings for %d files", len(got), len(files))
	}
	tokens := base64Tokens(files)
	kinds := map[string]int{}
	for i, f := range files {
		if got[i] != encode(f.Contents, tokens) {
			t.Fatalf("%s: parallel encoding differs from encode", f.Path)
		}
		kinds[strings.SplitN(got[i], ",", 2)[0]]++
	}
	if len(kinds) != 2 {
		t.Errorf("encodings %v: the tree does not exercise both", kinds)
	}
}

// TestIgnitionReusesIdenticalPrevious: with an earlier aio.ign parsed ahead (ParseValidatePreviousIgnition),
// Ignition gives exactly what it gives without it, whatever the earlier aio.ign holds (another tree's config, a
// config with paths swapped, garbage); and an identical earlier aio.ign is given back as its very bytes.
func TestIgnitionReusesIdenticalPrevious(t *testing.T) {
	build := func(changed bool) *Tree {
		tr := NewTree()
		for i := 0; i < 40; i++ {
			contents := strings.Repeat(fmt.Sprintf("line %d: value\n", i), i*10)
			if changed && i%5 == 0 {
				contents += "changed\n"
			}
			if changed && i == 7 {
				continue
			}
			mustAddFile(t, tr, fmt.Sprintf("/etc/test/f%02d", i), 0644, contents)
		}
		if changed {
			mustAddFile(t, tr, "/etc/test/new", 0600, "new\n")
		}
		return tr
	}
	opts := IgnitionOptions{SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA test"}}
	first, err := Ignition(build(false), opts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Ignition(build(true), opts)
	if err != nil {
		t.Fatal(err)
	}
	swapped := strings.Replace(string(first), `"path":"/etc/test/f01"`, `"path":"/etc/test/fxx"`, 1)
	swapped = strings.Replace(swapped, `"path":"/etc/test/f02"`, `"path":"/etc/test/f01"`, 1)
	for name, prev := range map[string][]byte{"previous render": first, "same tree": want, "swapped paths": []byte(swapped),
		"garbage": []byte("{not json"), "none": nil} {
		o := opts
		p := ParseValidatePreviousIgnition(prev)
		<-p.checked
		o.PreviousParsed = p
		got, err := Ignition(build(true), o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: aio.ign differs from one made without an earlier one", name)
		}
		if reused := len(got) > 0 && len(prev) > 0 && &got[0] == &prev[0]; reused != (name == "same tree") {
			t.Errorf("%s: the earlier aio.ign itself given back: %v", name, reused)
		}
	}
}

// TestPreviousIgnitionValidate: Validate gives parseBackValidate's verdict on every config: a config identical to
// a valid earlier aio.ign passes (its validation ran in ParseValidatePreviousIgnition), one identical to an invalid
// earlier config fails as parseBackValidate fails it, and any other config is validated itself.
func TestPreviousIgnitionValidate(t *testing.T) {
	valid, err := IgnitionUnvalidated(buildTestTree(t), IgnitionOptions{SSHAuthorizedKeys: []string{testKey1}})
	if err != nil {
		t.Fatal(err)
	}
	bad := NewTree()
	mustAddUnit(t, bad, Unit{Name: "y.service", Contents: "[Unit\nDescription=broken\n"})
	invalid, err := IgnitionUnvalidated(bad, IgnitionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if parseBackValidate(invalid.Raw) == nil {
		t.Fatal("the broken unit's config passes parseBackValidate")
	}
	otherValid, err := IgnitionUnvalidated(NewTree(), IgnitionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, prev := range [][]byte{valid.Raw, invalid.Raw, nil, []byte("{not json")} {
		for _, p := range []*PreviousIgnition{ParseValidatePreviousIgnition(prev), nil} {
			for _, b := range []*Built{valid, invalid, otherValid} {
				got, want := p.Validate(b), parseBackValidate(b.Raw)
				if (got == nil) != (want == nil) {
					t.Errorf("previous of %d bytes: Validate of %d bytes gives %v, parseBackValidate %v", len(prev), len(b.Raw), got, want)
				}
			}
		}
	}
}

// TestBuiltValidateAgreesWithParse: Built.Validate, which validates the config that was marshalled, gives the
// verdict of parseBackValidate, which parses the JSON back as Ignition does on the node; and the JSON parses back
// to the very config that was validated, so that what Ignition validates on the node is what was validated here.
func TestBuiltValidateAgreesWithParse(t *testing.T) {
	trees := map[string]func() *Tree{
		"files, directories, units, drop-ins": func() *Tree { return buildTestTree(t) },
		"empty":                               NewTree,
		"broken unit": func() *Tree {
			tr := NewTree()
			mustAddUnit(t, tr, Unit{Name: "y.service", Contents: "[Unit\nDescription=broken\n"})
			return tr
		},
		"broken drop-in": func() *Tree {
			tr := NewTree()
			mustAddUnit(t, tr, Unit{Name: "z.service", Contents: "[Unit]\n", Dropins: []Dropin{{Name: "10-x.conf", Contents: "[Service\n"}}})
			return tr
		},
		"binary, compressible, empty and executable files": func() *Tree {
			tr := NewTree()
			mustAddFile(t, tr, "/etc/a/bin", 0o600, "\x00\xff\x1f\x8b{}\"%")
			mustAddFile(t, tr, "/etc/a/text", 0o644, strings.Repeat("compressible {}\n", 500))
			mustAddFile(t, tr, "/etc/a/empty", 0o644, "")
			mustAddFile(t, tr, "/usr/local/bin/s", 0o755, "#!/bin/sh\n")
			return tr
		},
	}
	for name, mk := range trees {
		for _, keys := range [][]string{nil, {testKey1}} {
			b, err := IgnitionUnvalidated(mk(), IgnitionOptions{SSHAuthorizedKeys: keys})
			if err != nil {
				t.Logf("%s: not built: %v", name, err)
				continue
			}
			got, want := b.Validate(), parseBackValidate(b.Raw)
			if (got == nil) != (want == nil) {
				t.Errorf("%s: Built.Validate gives %v, parseBackValidate %v", name, got, want)
			}
			parsed, _, err := v3_2.Parse(b.Raw)
			if err != nil {
				continue // invalid, and both said so
			}
			if !reflect.DeepEqual(parsed, b.config) {
				t.Errorf("%s: the JSON parses back to a config other than the one validated", name)
			}
		}
	}
	// A config of another version fails both ways.
	b, err := IgnitionUnvalidated(NewTree(), IgnitionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.config.Ignition.Version = "3.1.0"
	if b.Validate() == nil {
		t.Error("a config of version 3.1.0 passes Built.Validate")
	}
}

// referenceTokens is base64Tokens written the plain way: every maximal run of base64 characters and its padding,
// of any length from minToken on.
func referenceTokens(files []File) tokenSet {
	set := tokenSet{}
	run := regexp.MustCompile(`[A-Za-z0-9+/]+={0,2}`)
	for _, f := range files {
		for _, m := range run.FindAllIndex(f.Contents, -1) {
			if m[1]-m[0] < minToken || m[1] < len(f.Contents) && base64Alphabet[f.Contents[m[1]]] {
				continue
			}
			if set[m[1]-m[0]] == nil {
				set[m[1]-m[0]] = map[string]struct{}{}
			}
			set[m[1]-m[0]][string(f.Contents[m[0]:m[1]])] = struct{}{}
		}
	}
	return set
}

// referenceEncode is encode written the plain way: every candidate built, with a fresh escape of each byte.
func referenceEncode(data []byte, tokens tokenSet) string {
	b64 := "data:;base64," + base64.StdEncoding.EncodeToString(data)
	if len(b64)-len("data:;base64,") >= minToken && tokens.holds(b64[len("data:;base64,"):]) {
		return b64
	}
	var esc strings.Builder
	text := utf8.Valid(data)
	for _, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			text = false
		}
		if c > 0x20 && c < 0x7f && !strings.ContainsRune("<>#\"{}|\\^[]`%", rune(c)) {
			esc.WriteByte(c)
		} else {
			fmt.Fprintf(&esc, "%%%02X", c)
		}
	}
	if plain := "data:," + esc.String(); text || len(plain) <= len(b64) {
		return plain
	}
	return b64
}

// encode picks exactly what building every candidate picks, with the tokens base64Tokens keeps and with every
// token there is (referenceTokens), over contents of every size and make-up (empty, a few bytes, text, binary,
// repetitive, the base64 of another file), and what it picks decodes, as Ignition
// decodes it (decodeSource), to the contents.
func TestEncodeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabets := []string{"abc", "key: value\n", "%+ ?#\x00\xff", "-._~!$&'()*,;=:@/", "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b",
		"<>\"{}|\\^[]`é\t\r\x7f"}
	var all []File
	for i := 0; i < 3000; i++ {
		var data []byte
		n := r.IntN(8)
		switch i % 3 {
		case 1:
			n = r.IntN(200)
		case 2:
			n = r.IntN(6000)
		}
		alpha := alphabets[r.IntN(len(alphabets))]
		for j := 0; j < n; j++ {
			if r.IntN(10) == 0 {
				data = append(data, byte(r.IntN(256)))
			} else {
				data = append(data, alpha[r.IntN(len(alpha))])
			}
		}
		if i%7 == 0 && len(all) > 0 {
			data = []byte("v: " + base64.StdEncoding.EncodeToString(all[r.IntN(len(all))].Contents) + "\n")
		}
		all = append(all, File{Contents: data})
	}
	tokens, every := base64Tokens(all), referenceTokens(all)
	seen := map[string]bool{}
	for _, f := range all {
		want := referenceEncode(f.Contents, every)
		got := encode(f.Contents, tokens)
		if got != want {
			t.Fatalf("contents %q: encoded as %q, want %q", f.Contents, got, want)
		}
		if esc := escapeDataURL(f.Contents); len(esc) != escapedLen(f.Contents) {
			t.Fatalf("escapedLen(%q) = %d, len(escapeDataURL) = %d", f.Contents, escapedLen(f.Contents), len(esc))
		}
		if back := decodeSource(t, types.Resource{Source: &got}); !bytes.Equal(back, f.Contents) {
			t.Fatalf("contents %q: %q decodes to %q", f.Contents, got, back)
		}
		seen[strings.SplitN(want, ",", 2)[0]] = true
	}
	if len(seen) != 2 {
		t.Errorf("the contents exercised %v, want both encodings", seen)
	}
}

// parseBackValidate checks an Ignition config as Ignition does with aio.ign on the node: v3_2.Parse parses the
// JSON and runs the library's whole validation (validate.ValidateWithContext) on what it parsed, with the JSON as
// context; any report entry (error, warning or info) fails. A render validates what it built (Built.Validate); the
// tests check that both agree.
func parseBackValidate(raw []byte) error {
	_, rpt, err := v3_2.Parse(raw)
	if err != nil || len(rpt.Entries) > 0 {
		msg := reportText(rpt)
		if err != nil {
			msg = err.Error() + "\n" + msg
		}
		return fmt.Errorf("building ignition config: parsing the result back reported:\n%s", msg)
	}
	return nil
}

// liveBuilt is live.ign's config for the test aio.ign, as LiveIgnition builds it, before its validation.
func liveBuilt(t *testing.T) *Built {
	t.Helper()
	aio, err := Ignition(buildTestTree(t), IgnitionOptions{SSHAuthorizedKeys: []string{testKey1}})
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTree()
	mustAddFile(t, tr, LiveDestPath, 0o600, string(aio))
	mustAddFile(t, tr, LiveInstallerConfigPath, 0o600, string(InstallerConfig(LiveOptions{InstallDevice: "/dev/sda"})))
	b, err := IgnitionUnvalidated(tr, IgnitionOptions{SSHAuthorizedKeys: []string{testKey1}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Built.Validate, which does not decode well-formed data URLs (validSources), gives the verdict of Ignition's
// validation of the whole config (validateWhole) and of parsing it back (parseBackValidate) on live.ign's config
// and on aio.ign's, however broken: an invalid wrapper (the files, units and users besides aio.ign in live.ign)
// fails, and so does a source that is not a valid data URL; the config validated is left as it was.
func TestValidateAgreesWithWholeValidation(t *testing.T) {
	fileAt := func(b *Built, p string) *types.File {
		for i := range b.config.Storage.Files {
			if b.config.Storage.Files[i].Path == p {
				return &b.config.Storage.Files[i]
			}
		}
		t.Fatalf("no file %s", p)
		return nil
	}
	setSource := func(src string) func(b *Built) {
		return func(b *Built) { fileAt(b, LiveDestPath).Contents.Source = strPtr(src) }
	}
	for _, tc := range []struct {
		name   string
		mutate func(b *Built)
		valid  bool
	}{
		{"as built", func(*Built) {}, true},
		{"wrapper: installer config with setuid", func(b *Built) { fileAt(b, LiveInstallerConfigPath).Mode = intPtr(0o4600) }, false},
		{"wrapper: carried file with an invalid mode", func(b *Built) { fileAt(b, LiveDestPath).Mode = intPtr(0o10000) }, false},
		{"wrapper: relative path", func(b *Built) { fileAt(b, LiveInstallerConfigPath).Path = "etc/x" }, false},
		{"wrapper: carried file's path twice", func(b *Built) {
			b.config.Storage.Files = append(b.config.Storage.Files, *fileAt(b, LiveDestPath))
		}, false},
		{"wrapper: a directory where the carried file is", func(b *Built) {
			b.config.Storage.Directories = append(b.config.Storage.Directories, types.Directory{Node: rootNode(LiveDestPath, false)})
		}, false},
		{"wrapper: broken unit", func(b *Built) {
			b.config.Systemd.Units = append(b.config.Systemd.Units, types.Unit{Name: "x.service", Contents: strPtr("[Unit\n")})
		}, false},
		{"wrapper: carried file with HTTP headers", func(b *Built) {
			fileAt(b, LiveDestPath).Contents.HTTPHeaders = types.HTTPHeaders{{Name: "A", Value: strPtr("b")}}
		}, false},
		{"wrapper: carried file's verification hash of another algorithm", func(b *Built) {
			fileAt(b, LiveDestPath).Contents.Verification.Hash = strPtr("md5-00")
		}, false},
		{"carried source: a space", setSource("data:,a b"), false},
		{"carried source: a bad escape", setSource("data:,ab%zz"), false},
		{"carried source: a cut escape", setSource("data:,ab%4"), false},
		{"carried source: a fragment", setSource("data:,a#b"), false},
		{"carried source: non-ASCII", setSource("data:,\u00e9"), false},
		{"carried source: another scheme", setSource("ftp://example.com/aio.ign"), false},
		{"carried source: base64", setSource("data:;base64,YWlvCg=="), true},
		{"carried source: bad base64", setSource("data:;base64,YWlvCg="), false},
		{"carried source: a query", setSource("data:,a?b%20c"), true},
		{"carried source: empty", setSource(""), true},
		{"aio.ign: a well-formed source with an invalid mode", func(b *Built) {
			*b = *aioBuilt(t)
			fileAt(b, "/etc/hello.txt").Mode = intPtr(0o10000)
		}, false},
		{"aio.ign: a bad source among well-formed ones", func(b *Built) {
			*b = *aioBuilt(t)
			fileAt(b, "/etc/hello.txt").Contents.Source = strPtr("data:,hello%2")
		}, false},
		{"aio.ign: a bad base64 source", func(b *Built) {
			*b = *aioBuilt(t)
			fileAt(b, "/usr/local/bin/random.bin").Contents.Source = strPtr("data:;base64,%%%")
		}, false},
		{"aio.ign as built", func(b *Built) { *b = *aioBuilt(t) }, true},
	} {
		b := liveBuilt(t)
		tc.mutate(b)
		var sources []string
		for _, f := range b.config.Storage.Files {
			sources = append(sources, *f.Contents.Source)
		}
		raw, err := codec.MarshalCompactJSON(b.config)
		if err != nil {
			t.Fatal(err)
		}
		got, whole, parsed := b.Validate(), b.validateWhole(), parseBackValidate(raw)
		if (got == nil) != (whole == nil) || (whole == nil) != (parsed == nil) || (got == nil) != tc.valid {
			t.Errorf("%s: Validate gives %v, validateWhole %v, parseBackValidate %v; want valid=%v", tc.name, got, whole, parsed, tc.valid)
		}
		if got != nil && whole != nil && got.Error() != whole.Error() {
			t.Errorf("%s: Validate reports\n%v\nvalidateWhole\n%v", tc.name, got, whole)
		}
		for i, f := range b.config.Storage.Files {
			if *f.Contents.Source != sources[i] {
				t.Errorf("%s: Validate changed %s's source", tc.name, f.Path)
			}
		}
	}
}

// aioBuilt is the test tree's aio.ign config, before its validation.
func aioBuilt(t *testing.T) *Built {
	t.Helper()
	b, err := IgnitionUnvalidated(buildTestTree(t), IgnitionOptions{SSHAuthorizedKeys: []string{testKey1}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every wellFormedDataURL string passes Ignition's URL validation (the argument in wellFormedDataURL's comment):
// one holding every literal byte and every escape in both cases, and random ones; escapeDataURL makes such strings
// of any bytes; and a string with any other byte, or a cut or non-hex escape, is not taken for one (Ignition then
// validates it: validSources).
func TestWellFormedDataURLsPassIgnition(t *testing.T) {
	ignitionValid := func(s string) error { // Ignition's validation of a config whose one file has source s
		b := Built{config: types.Config{Ignition: types.Ignition{Version: types.MaxVersion.String()}}}
		b.config.Storage.Files = []types.File{{Node: rootNode("/etc/x", true),
			FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &s}, Mode: intPtr(0o600)}}}
		return b.validateWhole()
	}
	var pieces []string
	for c := 0; c < 256; c++ {
		if dataURLLiterals[c] {
			pieces = append(pieces, string(rune(c)))
		}
		pieces = append(pieces, fmt.Sprintf("%%%02X", c), fmt.Sprintf("%%%02x", c))
	}
	all := "data:," + strings.Join(pieces, "")
	r := rand.New(rand.NewPCG(5, 6))
	cases := []string{"data:,", all}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		b.WriteString("data:,")
		for n := r.IntN(40); n > 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		cases = append(cases, b.String())
	}
	raw := make([]byte, 256)
	for i := range raw {
		raw[i] = byte(i)
	}
	cases = append(cases, "data:,"+escapeDataURL(raw), "data:,"+escapeDataURL(randomBytes(5000)))
	for _, s := range cases {
		if !wellFormedDataURL(s) {
			t.Fatalf("%.80q is not taken for well-formed", s)
		}
		if err := ignitionValid(s); err != nil {
			t.Fatalf("%.80q: Ignition refuses it: %v", s, err)
		}
	}
	for c := 0; c < 256; c++ {
		if !dataURLLiterals[c] && c != '%' && wellFormedDataURL("data:,a"+string([]byte{byte(c)})+"b") {
			t.Errorf("byte %#x is taken for well-formed", c)
		}
	}
	for _, s := range []string{"data:,%", "data:,%4", "data:,a%4", "data:,%g0", "data:,%0g", "data:;base64,YQ==", "data:text/plain,a", "Data:,a", "http://x", ""} {
		if wellFormedDataURL(s) {
			t.Errorf("%q is taken for well-formed", s)
		}
	}
}
