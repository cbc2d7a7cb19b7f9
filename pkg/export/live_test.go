package export

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

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
