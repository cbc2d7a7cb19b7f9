package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// Bad live ISO inputs exit 1 naming the flag, the file, the key and what is wrong, every problem at once, and write
// nothing.
func TestLiveInputsRefused(t *testing.T) {
	testtools.Tool(t, "nmcli")
	tmp := t.TempDir()
	other := testtools.Keyfile(t, tmp, "other.nmconnection", "192.168.126.11/24")
	garbage := filepath.Join(tmp, "garbage.nmconnection")
	noAddress := filepath.Join(tmp, "manual.nmconnection")
	badName := filepath.Join(tmp, "eth0")
	for p, data := range map[string]string{garbage: "garbage\n", noAddress: "[connection]\nid=m\ntype=ethernet\n[ipv4]\nmethod=manual\n",
		badName: "[connection]\nid=e\ntype=ethernet\n"} {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ic := repo("examples/sno/install-config.yaml")
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{"relative device", []string{"--install-device", "sda"},
			[]string{`--install-device: "sda" is not an absolute device path (/dev/..., e.g. /dev/sda or /dev/disk/by-id/...)`}},
		{"device outside /dev", []string{"--install-device", "/dev/../etc/passwd"},
			[]string{`--install-device: "/dev/../etc/passwd" is not an absolute device path`}},
		{"device with a space", []string{"--install-device", "/dev/sd a"},
			[]string{`--install-device: "/dev/sd a" is not an absolute device path: ' ' is not a character of a device name`}},
		{"partition", []string{"--install-device", "/dev/sda1"},
			[]string{`--install-device: "/dev/sda1" is a partition (the kernel names sda's partitions sda1, sda2, ...), but coreos-installer writes a whole disk, its own partition table included: give the disk, /dev/sda`}},
		{"broadcast address", []string{"--node-ip", "192.168.126.255"},
			[]string{"--node-ip: 192.168.126.255 is the broadcast address of networking.machineNetwork[0] 192.168.126.0/24, not a host's: give the node an address from 192.168.126.1 to 192.168.126.254"}},
		{"bad keyfile", []string{"--network-keyfile", garbage},
			[]string{"--network-keyfile: " + garbage + ": NetworkManager refuses it: Key file contains line “…” which is not a key-value pair, group, or comment"}},
		{"keyfile NetworkManager does not verify", []string{"--network-keyfile", noAddress},
			[]string{"--network-keyfile: " + noAddress + ": NetworkManager refuses it: ipv4.addresses: this property cannot be empty for '…'"}},
		{"keyfile name", []string{"--network-keyfile", badName},
			[]string{"--network-keyfile: " + badName + ": the name must end in .nmconnection"}},
		{"keyfile without the node IP", []string{"--network-keyfile", other},
			[]string{"--network-keyfile: 192.168.126.10 (--node-ip) is not a static address of any keyfile, and the node must keep it (it is in the node's certificates): other.nmconnection: ipv4.method=manual, ipv4.addresses 192.168.126.11/24"}},
		{"all at once", []string{"--install-device", "sda", "--network-keyfile", garbage, "--network-keyfile", other},
			[]string{"invalid input (2 problems)", "--install-device: ", "--network-keyfile: " + garbage + ": NetworkManager refuses it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "aio")
			code, stdout, stderr := runCLI(append([]string{"--install-config", ic, "--node-ip", "192.168.126.10", "--dir", dir}, tc.flags...)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s%s", code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Lstat(dir); !os.IsNotExist(err) {
				t.Errorf("%s was written (%v)", dir, err)
			}
		})
	}
}

// A dual-stack node's two IPs may come from one keyfile; a re-render takes the saved device and keyfiles, and
// live.ign stays byte-identical (its embed size is the saved one); a new device changes only the installer config.
func TestLiveInputsSaved(t *testing.T) {
	testtools.Tool(t, "xz")
	tmp := t.TempDir()
	kf := testtools.Keyfile(t, tmp, "ds.nmconnection", "192.168.126.10/24", "fd00::10/64")
	dir := filepath.Join(tmp, "aio")
	testtools.Long(t, "renders the dual-stack install-config twice")
	code, first, stderr := runCLI("--install-config", repo("testdata/installconfig/good/dualstack.yaml"), "--node-ip", "192.168.126.10,fd00::10",
		"--dir", dir, "--install-device", "/dev/nvme0n1", "--network-keyfile", kf)
	if code != 0 {
		t.Fatalf("render: exit %d: %s", code, stderr)
	}
	for _, w := range []string{"embeds in ", "  install:          to /dev/nvme0n1, then reboot; network: ds.nmconnection (live system and installed node)"} {
		if !strings.Contains(first, w) {
			t.Errorf("summary lacks %q:\n%s", w, first)
		}
	}
	live, err := os.ReadFile(filepath.Join(dir, "live.ign"))
	if err != nil {
		t.Fatal(err)
	}
	code, again, stderr := runCLI("--dir", dir)
	if code != 0 {
		t.Fatalf("re-render: exit %d: %s", code, stderr)
	}
	if !strings.Contains(again, "install device, network keyfiles (not given, so the state's)") {
		t.Errorf("the re-render's summary does not say it took the saved device and keyfiles:\n%s", again)
	}
	if live2, _ := os.ReadFile(filepath.Join(dir, "live.ign")); !bytes.Equal(live, live2) {
		t.Error("live.ign of a re-render with the same inputs differs")
	}
	line := func(s string) string {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "  live.ign:") {
				return l
			}
		}
		return ""
	}
	if line(first) == "" || line(first) != line(again) {
		t.Errorf("live.ign lines differ:\n%s\n%s", line(first), line(again))
	}
	code, third, stderr := runCLI("--dir", dir, "--install-device", "/dev/sdb")
	if code != 0 {
		t.Fatalf("re-render with another device: exit %d: %s", code, stderr)
	}
	if !strings.Contains(third, "install device /dev/nvme0n1 -> /dev/sdb") {
		t.Errorf("the summary does not say the device changed:\n%s", third)
	}
	live3, _ := os.ReadFile(filepath.Join(dir, "live.ign"))
	if bytes.Equal(live, live3) || !bytes.Contains(live3, []byte("dest-device:%20/dev/sdb")) {
		t.Error("live.ign does not install to the new device")
	}
}
