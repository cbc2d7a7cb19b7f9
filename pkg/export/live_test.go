package export

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// live.ign holds aio.ign byte for byte as /etc/coreos/dest.ign, the installer config coreos-installer reads, the
// keyfiles, all 0600, and core's SSH keys; it passes Ignition's validation and the real ignition-validate.
func TestLiveIgnition(t *testing.T) {
	aio, err := Ignition(buildTestTree(t), IgnitionOptions{SSHAuthorizedKeys: []string{testKey1}})
	if err != nil {
		t.Fatal(err)
	}
	keyfile := []byte("[connection]\nid=static\ntype=ethernet\n\n[ipv4]\naddress1=192.168.126.10/24\nmethod=manual\n")
	for _, tc := range []struct {
		name      string
		o         LiveOptions
		installer string
	}{
		{"device and keyfile", LiveOptions{InstallDevice: "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", Keyfiles: []Keyfile{{"static.nmconnection", keyfile}},
			SSHAuthorizedKeys: []string{testKey1}},
			"# render-static: install RHCOS with aio.ign as the destination config, then reboot\nignition-file: /etc/coreos/dest.ign\n" +
				"dest-device: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4\ncopy-network: true\n"},
		{"no device, no keyfile", LiveOptions{},
			"# render-static: install RHCOS with aio.ign as the destination config, then reboot\nignition-file: /etc/coreos/dest.ign\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live, err := LiveIgnition(aio, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			cfg := parseIgnition(t, live)
			files := map[string][]byte{}
			for _, f := range cfg.Storage.Files {
				if f.Mode == nil || *f.Mode != 0o600 {
					t.Errorf("%s: mode %v, want 0600", f.Path, f.Mode)
				}
				files[f.Path] = decodeSource(t, f.Contents)
			}
			want := map[string][]byte{LiveDestPath: aio, LiveInstallerConfigPath: []byte(tc.installer)}
			for _, k := range tc.o.Keyfiles {
				want[filepath.Join(KeyfileDir, k.Name)] = k.Contents
			}
			if len(files) != len(want) {
				t.Errorf("%d files, want %d", len(files), len(want))
			}
			for p, data := range want {
				if !bytes.Equal(files[p], data) {
					t.Errorf("%s: %d bytes %.80q, want %d bytes %.80q", p, len(files[p]), files[p], len(data), data)
				}
			}
			if n := len(cfg.Passwd.Users); n != len(tc.o.SSHAuthorizedKeys) {
				t.Errorf("%d users for %d keys", n, len(tc.o.SSHAuthorizedKeys))
			}
			bin := testtools.Tool(t, "ignition-validate")
			p := filepath.Join(t.TempDir(), "live.ign")
			if err := os.WriteFile(p, live, 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, p).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("ignition-validate live.ign: %v\n%s", err, out)
			}
		})
	}
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

// validateCarrying gives Built.Validate's verdict on live.ign's config, however its wrapper (the files, units and
// users besides aio.ign) or the carried file's source is broken: an invalid wrapper fails as before, and a source
// that is not a valid data URL fails too (it is validated then).
func TestValidateCarryingAgreesWithValidate(t *testing.T) {
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
	} {
		b := liveBuilt(t)
		tc.mutate(b)
		before := *fileAt(b, LiveDestPath).Contents.Source
		got, want := b.validateCarrying(LiveDestPath), b.Validate()
		if (got == nil) != (want == nil) || (want == nil) != tc.valid {
			t.Errorf("%s: validateCarrying gives %v, Validate %v, want valid=%v", tc.name, got, want, tc.valid)
		}
		if after := *fileAt(b, LiveDestPath).Contents.Source; after != before {
			t.Errorf("%s: validateCarrying changed the config's source", tc.name)
		}
	}
}

// Every wellFormedDataURL string passes Ignition's URL validation (the argument in wellFormedDataURL's comment):
// one holding every literal byte and every escape in both cases, and random ones; escapeDataURL makes such strings
// of any bytes; and a string with any other byte, or a cut or non-hex escape, is not taken for one (validateCarrying
// then has Ignition validate it).
func TestWellFormedDataURLsPassIgnition(t *testing.T) {
	ignitionValid := func(s string) error { // Ignition's validation of a config whose one file has source s
		b := Built{config: types.Config{Ignition: types.Ignition{Version: types.MaxVersion.String()}}}
		b.config.Storage.Files = []types.File{{Node: rootNode("/etc/x", true),
			FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &s}, Mode: intPtr(0o600)}}}
		return b.Validate()
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
