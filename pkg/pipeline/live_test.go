package pipeline

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
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
	_, errs, _ := readKeyfiles(InNetworkKeyfiles, installconfig.Ref(InNodeIP), []clusterconfig.Keyfile{{Name: "static.nmconnection", Source: "site/static.nmconnection", Contents: []byte("[connection]\n")}},
		[]netip.Addr{netip.MustParseAddr("192.168.126.10")}, nil)
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

// TestInstallDeviceIsAWholeDisk: coreos-installer writes a whole disk, so a partition is refused as the install
// device, by its name alone (the render runs elsewhere than the node, where no device exists): the kernel's names
// of partitions (sda1, vdb2, xvda3, dasda1; nvme0n1p1, mmcblk0p1, md0p1, loop0p1) and udev's links to them
// (/dev/disk/by-id/...-partN, by-path/...-partN, by-partuuid/, by-partlabel/). The message names the disk to give
// where the name says it.
func TestInstallDeviceIsAWholeDisk(t *testing.T) {
	for _, dev := range []string{"/dev/sda", "/dev/vda", "/dev/sdaa", "/dev/xvda", "/dev/nvme0n1", "/dev/nvme10n2", "/dev/mmcblk0",
		"/dev/md0", "/dev/dm-0", "/dev/mapper/mpatha", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", "/dev/disk/by-id/nvme-eui.0025388b71b2a1c0",
		"/dev/disk/by-path/pci-0000:00:1f.2-ata-1", "/dev/disk/by-path/pci-0000:03:00.0-nvme-1", "/dev/sr0", "/dev/disk/by-id/md-name-part1x"} {
		if err := checkInstallDevice(dev); err != nil {
			t.Errorf("%s refused: %v", dev, err)
		}
	}
	for dev, want := range map[string]string{
		"/dev/sda1":      `"/dev/sda1" is a partition (the kernel names sda's partitions sda1, sda2, ...), but coreos-installer writes a whole disk, its own partition table included: give the disk, /dev/sda`,
		"/dev/vdb12":     "give the disk, /dev/vdb",
		"/dev/xvda3":     "give the disk, /dev/xvda",
		"/dev/dasda1":    "give the disk, /dev/dasda",
		"/dev/nvme0n1p1": `"/dev/nvme0n1p1" is a partition (the kernel names nvme0n1's partitions nvme0n1p1, nvme0n1p2, ...), but coreos-installer writes a whole disk, its own partition table included: give the disk, /dev/nvme0n1`,
		"/dev/mmcblk0p2": "give the disk, /dev/mmcblk0",
		"/dev/md127p1":   "give the disk, /dev/md127",
		"/dev/loop0p1":   "give the disk, /dev/loop0",
		"/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1":   `"/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1" is a partition (udev names a disk's partitions <disk>-part1, <disk>-part2, ...), but coreos-installer writes a whole disk, its own partition table included: give the disk, /dev/disk/by-id/wwn-0x5000c500a1b2c3d4`,
		"/dev/disk/by-path/pci-0000:00:1f.2-ata-1-part2": "give the disk, /dev/disk/by-path/pci-0000:00:1f.2-ata-1",
		"/dev/disk/by-partuuid/0f4e3c2a-01":              `"/dev/disk/by-partuuid/0f4e3c2a-01" is a partition (udev's /dev/disk/by-partuuid/ links name partitions), but coreos-installer writes a whole disk, its own partition table included: give the disk (/dev/disk/by-id/... names one)`,
		"/dev/disk/by-partlabel/root":                    "is a partition (udev's /dev/disk/by-partlabel/ links name partitions)",
	} {
		err := checkInstallDevice(dev)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", dev, err, want)
		}
	}
}

// TestKeyfileWarnings: what NetworkManager accepts in a keyfile but looks like a mistake renders, with a warning
// naming the input (the control-plane node's networkKeyfiles, a worker's workers[i].networkKeyfiles), the keyfile
// and what to do: a gateway outside the subnet of every address of its family, and a node IP whose prefix is not its
// machine network's. Keyfiles made with nmcli, as a user makes them; one that agrees with the install-config warns
// of nothing.
func TestKeyfileWarnings(t *testing.T) {
	tmp := t.TempDir()
	good := testtools.KeyfileWith(t, tmp, "good.nmconnection", []string{"ipv4.gateway", "192.168.126.1"}, "192.168.126.10/24")
	wide := testtools.KeyfileWith(t, tmp, "wide.nmconnection", []string{"ipv4.gateway", "10.0.0.1"}, "192.168.126.10/16")
	w0 := testtools.KeyfileWith(t, tmp, "w0.nmconnection", []string{"ipv4.gateway", "192.168.127.1"}, "192.168.126.11/24")
	o := Options{InstallConfig: "install-config.yaml", InstallConfigData: withReplicas(t, "1"), NodeIP: "192.168.126.10", NodeName: "master-0",
		Dir: "aio", InfraID: "sno-x7k2p", NetworkKeyfiles: []string{good}, Workers: filepath.Join(tmp, "workers.yaml"),
		WorkersData: []byte("- nodeName: worker-0\n  nodeIP: 192.168.126.11\n  networkKeyfiles: [w0.nmconnection]\n")}
	for _, tc := range []struct {
		name     string
		keyfiles []string
		want     []string
	}{
		{"agrees", []string{good}, []string{
			"workers[0].networkKeyfiles: " + w0 + ": ipv4.gateway 192.168.127.1 is outside the subnet of every ipv4.addresses (192.168.126.11/24): NetworkManager routes through it as if it were on the link, " +
				"which works only where the network puts it there; otherwise the node has no route out of its subnet: check the gateway and the addresses' prefix"}},
		{"disagrees", []string{wide}, []string{
			"{networkKeyfiles}: " + wide + ": ipv4.gateway 10.0.0.1 is outside the subnet of every ipv4.addresses (192.168.126.10/16): NetworkManager routes through it as if it were on the link, " +
				"which works only where the network puts it there; otherwise the node has no route out of its subnet: check the gateway and the addresses' prefix",
			"{networkKeyfiles}: " + wide + ": 192.168.126.10 ({nodeIP}) is 192.168.126.10/16 here, a /16, but its machine network 192.168.126.0/24 (networking.machineNetwork) is a /24: " +
				"the node takes 192.168.0.0/16 for its link, the cluster 192.168.126.0/24; give the keyfile the machine network's prefix (192.168.126.10/24), or the install-config the node's subnet, " +
				"unless the machine network is meant to span several subnets",
			"workers[0].networkKeyfiles: " + w0 + ": ipv4.gateway 192.168.127.1 is outside the subnet of every ipv4.addresses (192.168.126.11/24)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := o
			o.NetworkKeyfiles = tc.keyfiles
			in, err := Validate(o)
			if err != nil {
				t.Fatal(err)
			}
			got := warnings(in)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings:\n%s\nwant %d", strings.Join(got, "\n"), len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("warning %d:\n%s\nwant:\n%s", i, got[i], w)
				}
			}
		})
	}
}
