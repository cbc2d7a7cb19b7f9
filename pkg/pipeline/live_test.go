package pipeline

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/isoembed"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/state"
)

// What the summary says of live.ign: it fits, it does not (with the size, the limit and the alternatives, and a
// warning), or it was not measured; and how it installs.
func TestLiveSummary(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       LiveInstall
		lines   []string
		warning string
	}{
		{"fits", LiveInstall{LiveBytes: 3400000, LiveEmbed: LiveEmbed{Bytes: 231000}, InstallDevice: "/dev/sda", Keyfiles: []string{"a.nmconnection", "b.nmconnection"}},
			[]string{"3400000 bytes; embeds in 231000 of the live ISO's 262144 bytes (xz as coreos-installer)",
				"to /dev/sda, then reboot; network: a.nmconnection, b.nmconnection (live system and installed node)"}, ""},
		{"does not fit", LiveInstall{LiveBytes: 4000000, LiveEmbed: LiveEmbed{Bytes: 262145}},
			[]string{"4000000 bytes; DOES NOT FIT the live ISO's embed area: 262145 > 262144 bytes (xz as coreos-installer); boot PXE (coreos-installer pxe ignition wrap) or serve aio.ign over HTTP (docs/install.md, \"When live.ign does not fit\")",
				"no install device: boot the ISO with coreos.inst.install_dev=/dev/<disk>, or coreos-installer stops (destination device must be specified)"},
			"aio/live.ign does not fit the live ISO's embed area: 262145 bytes once compressed as coreos-installer compresses it, the area holds 262144; boot the PXE images with it instead (coreos-installer pxe ignition wrap -i aio/live.ign), or serve aio/aio.ign over HTTP and embed a pointer config (docs/install.md, \"When live.ign does not fit\")"},
		{"not measured", LiveInstall{LiveBytes: 3400000, LiveEmbed: LiveEmbed{Err: isoembed.ErrNoXZ.Error()}, InstallDevice: "/dev/sda"},
			[]string{"3400000 bytes; embed size not measured: xz (XZ Utils) is not on PATH", "to /dev/sda, then reboot"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.liveLines(); strings.Join(got, "\n") != strings.Join(tc.lines, "\n") {
				t.Errorf("lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.lines, "\n"))
			}
			if got := tc.s.liveWarning("aio", "aio.ign"); got != tc.warning {
				t.Errorf("warning\n%s\nwant\n%s", got, tc.warning)
			}
		})
	}
}

// measureLive measures with xz, takes an earlier measure of the same live.ign by the same xz without running it,
// and says when xz is missing.
func TestMeasureLive(t *testing.T) {
	testtools.Tool(t, "xz")
	ctx := context.Background()
	live := []byte(`{"ignition":{"version":"3.2.0"}}`)
	m := measureLive(ctx, live, nil)
	if m.Bytes == 0 || m.Saved == nil || m.Saved.Bytes != m.Bytes || m.Saved.XZ == "" || !m.Fits() {
		t.Fatalf("measure %+v", m)
	}
	// An earlier measure of the same live.ign and xz is taken as it is (a made-up size shows it is not measured).
	earlier := *m.Saved
	earlier.Bytes = 12345
	if again := measureLive(ctx, live, &earlier); again.Bytes != 12345 {
		t.Errorf("the earlier measure of the same live.ign was not taken: %+v", again)
	}
	for name, e := range map[string]state.LiveEmbed{"another live.ign": {SHA256: "00", XZ: earlier.XZ, Bytes: 12345},
		"another xz": {SHA256: earlier.SHA256, XZ: "xz 0.0", Bytes: 12345}} {
		if again := measureLive(ctx, live, &e); again.Bytes != m.Bytes {
			t.Errorf("%s: measured %+v, want %d", name, again, m.Bytes)
		}
	}
	t.Setenv("PATH", t.TempDir())
	if none := measureLive(ctx, live, &earlier); none.Bytes != 0 || none.Err != isoembed.ErrNoXZ.Error() || none.Fits() {
		t.Errorf("without xz: %+v", none)
	}
}

// Where NetworkManager is not installed, a keyfile is refused (nothing else could read it for NetworkManager),
// naming the file and what to install.
func TestKeyfileWithoutNetworkManager(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, errs := readKeyfiles(InNetworkKeyfiles, installconfig.Ref(InNodeIP), []clusterconfig.Keyfile{{Name: "static.nmconnection", Source: "site/static.nmconnection", Contents: []byte("[connection]\n")}},
		[]netip.Addr{netip.MustParseAddr("192.168.126.10")})
	if len(errs) != 1 || errs[0].Field != InNetworkKeyfiles ||
		!strings.HasPrefix(errs[0].Detail, "site/static.nmconnection: cannot be checked: NetworkManager's nmcli is not on PATH;") ||
		!strings.Contains(errs[0].Detail, "Debian, Ubuntu: network-manager") {
		t.Errorf("problems: %v", errs)
	}
}

// The install-config's bootstrapInPlace.installationDisk is the default install device, as in the installer's
// single-node flow: checked as the input is (problems name the install-config's field), overridden by the input,
// and not saved as the input, so that a later install-config's disk is taken.
func TestInstallationDiskIsTheDefaultInstallDevice(t *testing.T) {
	ic, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(ic, []byte("installationDisk: /dev/vda")) {
		t.Fatalf("the example no longer sets bootstrapInPlace.installationDisk /dev/vda")
	}
	base := Options{InstallConfig: "install-config.yaml", InstallConfigData: ic, NodeIP: "192.168.126.10", Dir: "aio"}
	in, err := Validate(base)
	if err != nil {
		t.Fatal(err)
	}
	if in.InstallDevice != "/dev/vda" {
		t.Errorf("install device %q, want the install-config's /dev/vda", in.InstallDevice)
	}
	if _, saved := SaveInputs(base, in)[InInstallDevice]; saved {
		t.Errorf("the install-config's disk was saved as the install device input")
	}
	given := base
	given.InstallDevice = "/dev/sdb"
	if in, err := Validate(given); err != nil || in.InstallDevice != "/dev/sdb" {
		t.Errorf("the input did not override the install-config's disk: %v %+v", err, in)
	}
	odd := base
	odd.InstallConfigData = bytes.Replace(ic, []byte("installationDisk: /dev/vda"), []byte("installationDisk: /dev/disk/by-id/wwn#1"), 1)
	_, err = Validate(odd)
	list, _ := err.(installconfig.ErrorList)
	if len(list) != 1 || list[0].Field != InstallationDiskField || !strings.Contains(list[0].Detail, "not a character of a device name") {
		t.Errorf("an install-config disk coreos-installer cannot open: %v", err)
	}
}
