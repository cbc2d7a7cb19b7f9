package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/render-static/render-static/internal/isoembed"
	"github.com/render-static/render-static/internal/nmkeyfile"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/state"
)

// The live ISO install (docs/install.md): every render also writes DIR/live.ign, the RHCOS live ISO's config
// that installs the node with aio.ign (export.LiveIgnition), and says what it takes in the ISO's embed area
// (internal/isoembed). Its inputs: the disk (installDevice) and the node's NetworkManager keyfiles
// (networkKeyfiles), which aio.ign and live.ign both write.

// checkInstallDevice refuses what coreos-installer could not open as a disk: anything but a clean absolute path
// under /dev (a path of letters, digits and ._:+@- as /dev/disk/by-id names are). A relative name
// (coreos-installer's deprecated "sda" form of coreos.inst.install_dev) is refused too, and so is a partition
// (partitionName: by its name, as the render cannot look at the node's devices).
func checkInstallDevice(dev string) error {
	if !strings.HasPrefix(dev, "/dev/") || len(dev) == len("/dev/") || path.Clean(dev) != dev {
		return fmt.Errorf("%q is not an absolute device path (/dev/..., e.g. /dev/sda or /dev/disk/by-id/...)", dev)
	}
	for _, c := range dev {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._:+@-", c)) {
			return fmt.Errorf("%q is not an absolute device path: %q is not a character of a device name", dev, c)
		}
	}
	if why, disk := partitionName(dev); why != "" {
		give := "give the disk (/dev/disk/by-id/... names one)"
		if disk != "" {
			give = "give the disk, " + disk
		}
		return fmt.Errorf("%q is a partition (%s), but coreos-installer writes a whole disk, its own partition table included: %s", dev, why, give)
	}
	return nil
}

// The names of partitions (partitionName). coreos-installer's install (src/install.rs) writes the OS image from the
// device's first byte, partition table included, rereads the device's partition table (src/blockdev.rs: the
// BLKRRPART ioctl, which a partition refuses) and mounts the image's boot partition among the device's own
// partitions, which a partition does not have: given a partition, it fails on the node, after it wrote over it. The
// render runs elsewhere than the node, where the device does not exist, so a partition is known by its name alone:
// the kernel names a disk's partitions by its name and a number, with a "p" between them when the disk's name ends
// in a digit (block/partitions/core.c, and the drivers' disk names: sd, vd, hd, xvd, dasd end in letters; nvme0n1,
// mmcblk0, md0, loop0, nbd0 in digits); udev's /dev/disk links name a partition by its disk's link and
// "-part<N>" (by-id, by-path: 60-persistent-storage.rules), and by-partuuid and by-partlabel name only partitions. A
// name outside these rules (device-mapper's, a by-uuid or by-label link) is taken as given.
var (
	letterDiskPartition = regexp.MustCompile(`^/dev/((?:sd|vd|hd|xvd|dasd)[a-z]+)([0-9]+)$`)
	digitDiskPartition  = regexp.MustCompile(`^/dev/((?:nvme[0-9]+n[0-9]+|mmcblk[0-9]+|md[0-9]+|loop[0-9]+|nbd[0-9]+))p([0-9]+)$`)
	udevPartition       = regexp.MustCompile(`^(/dev/disk/by-(?:id|path)/.+)-part[0-9]+$`)
)

// partitionName says why dev names a partition, and its disk where the name says it ("" when it does not), or ""
// when dev names no partition by the naming rules above.
func partitionName(dev string) (why, disk string) {
	for _, re := range []*regexp.Regexp{letterDiskPartition, digitDiskPartition} {
		if m := re.FindStringSubmatch(dev); m != nil {
			sep := strings.TrimSuffix(strings.TrimPrefix(dev, "/dev/"+m[1]), m[2]) // "" or "p"
			return fmt.Sprintf("the kernel names %s's partitions %s%s1, %s%s2, ...", m[1], m[1], sep, m[1], sep), "/dev/" + m[1]
		}
	}
	if m := udevPartition.FindStringSubmatch(dev); m != nil {
		return "udev names a disk's partitions <disk>-part1, <disk>-part2, ...", m[1]
	}
	for _, links := range []string{"/dev/disk/by-partuuid/", "/dev/disk/by-partlabel/"} {
		if strings.HasPrefix(dev, links) {
			return "udev's " + links + " links name partitions", ""
		}
	}
	return "", ""
}

// KeyfileSuffix is what a keyfile's name must end in: NetworkManager ignores files under system-connections it
// takes for backups or editors' files (nm-keyfile-utils.c, nm_keyfile_utils_ignore_filename), and names its own
// keyfiles so.
const KeyfileSuffix = ".nmconnection"

// readKeyfiles has NetworkManager read each keyfile (nmkeyfile.Read) of a node's keyfiles input field (field: the
// control-plane node's InNetworkKeyfiles, a worker's workers[i].networkKeyfiles) and checks that every node IP is
// a static address of one of them; problems name the IPs' input as ipInput (installconfig.Ref(InNodeIP), a
// worker's workers[i].nodeIP). Every problem names its keyfile (its Source) and what is wrong; with none given,
// there is nothing to check. What NetworkManager accepts but looks like a mistake is a warning (keyfileWarnings,
// against the install-config's machine networks, machine).
func readKeyfiles(field, ipInput string, keyfiles []clusterconfig.Keyfile, nodeIPs []netip.Addr, machine []netip.Prefix) ([]clusterconfig.Keyfile, installconfig.ErrorList, installconfig.ErrorList) {
	if len(keyfiles) == 0 {
		return nil, nil, nil
	}
	var errs installconfig.ErrorList
	add := func(format string, args ...any) {
		errs = append(errs, installconfig.FieldError{Field: field, Detail: fmt.Sprintf(format, args...)})
	}
	seen := map[string]string{}
	conns := make([]*nmkeyfile.Connection, 0, len(keyfiles))
	for _, k := range keyfiles {
		src := k.Source
		if src == "" {
			src = k.Name
		}
		src = printable(src)
		switch {
		case strings.IndexFunc(k.Name, unicode.IsControl) >= 0:
			add("%s: %q cannot be a keyfile's name: it holds a control character (a newline, a tab, ...), which would split or garble the lines that name it", src, k.Name)
			continue
		case k.Name == "" || strings.ContainsAny(k.Name, "/\x00") || strings.HasPrefix(k.Name, "."):
			add("%s: %q cannot be a keyfile's name under %s", src, k.Name, export.KeyfileDir)
			continue
		case !strings.HasSuffix(k.Name, KeyfileSuffix) || k.Name == KeyfileSuffix:
			add("%s: the name must end in %s (NetworkManager skips other names it takes for backups and editors' files)", src, KeyfileSuffix)
			continue
		case seen[k.Name] != "":
			add("%s: a second keyfile named %s (the first: %s): both would be %s/%s", src, k.Name, seen[k.Name], export.KeyfileDir, k.Name)
			continue
		}
		seen[k.Name] = src
		c, err := nmkeyfile.Read(context.Background(), k.Contents)
		if errors.Is(err, nmkeyfile.ErrNoNmcli) {
			add("%s: cannot be checked: %v; render-static has NetworkManager's own parser read every keyfile (nmcli --offline, NetworkManager 1.42 or later): install NetworkManager where you render (Debian, Ubuntu: network-manager; Fedora, RHEL: NetworkManager)", src, err)
			continue
		}
		if err != nil {
			add("%s: %v", src, err)
			continue
		}
		conns = append(conns, c)
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}
	for _, ip := range nodeIPs {
		found := false
		for _, c := range conns {
			found = found || c.Static(ip)
		}
		if found {
			continue
		}
		var have []string
		for i, c := range conns {
			have = append(have, fmt.Sprintf("%s: %s", keyfiles[i].Name, describeIP(c, ip)))
		}
		add("%s (%s) is not a static address of any keyfile, and the node must keep it (it is in the node's certificates): %s",
			ip, ipInput, strings.Join(have, "; "))
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}
	var warnings installconfig.ErrorList
	for i, c := range conns {
		src := keyfiles[i].Source
		if src == "" {
			src = keyfiles[i].Name
		}
		for _, w := range keyfileWarnings(c, ipInput, nodeIPs, machine) {
			warnings = append(warnings, installconfig.FieldError{Field: field, Detail: src + ": " + w})
		}
	}
	return keyfiles, nil, warnings
}

// printable is s, quoted (Go's escapes) when it holds a control character, so that a path with a newline stays on
// its line of a message.
func printable(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// keyfileWarnings are what a keyfile NetworkManager accepted says that looks like a mistake, each with what to do.
// Neither openshift-install nor coreos-installer reads a keyfile's addresses (the installer's machine network is
// checked against the node's addresses only: pkg/types/validation/installconfig.go; coreos-installer copies
// keyfiles as they are: src/install.rs), and NetworkManager accepts both, so they are warnings, not errors:
//   - a gateway outside the subnet of every static address of its family: NetworkManager accepts it and routes
//     through it as if it were on the link, which only a network built so (an on-link gateway outside the subnet,
//     as some hosting providers give) answers; otherwise the node has no way out of its subnet;
//   - a node IP's prefix in the keyfile that is not the prefix of the machine network holding it: the node takes
//     the keyfile's subnet for its link, the cluster the machine network (noProxy, what the installer validates),
//     fine only when the machine network is meant to span several subnets.
func keyfileWarnings(c *nmkeyfile.Connection, ipInput string, nodeIPs []netip.Addr, machine []netip.Prefix) []string {
	var out []string
	for _, f := range []struct {
		name string
		cfg  nmkeyfile.IPConfig
	}{{"ipv4", c.IPv4}, {"ipv6", c.IPv6}} {
		if !f.cfg.Gateway.IsValid() || len(f.cfg.Addresses) == 0 {
			continue
		}
		on := false
		var addrs []string
		for _, p := range f.cfg.Addresses {
			on = on || p.Masked().Contains(f.cfg.Gateway)
			addrs = append(addrs, p.String())
		}
		if !on {
			out = append(out, fmt.Sprintf("%s.gateway %s is outside the subnet of every %s.addresses (%s): NetworkManager routes through it as if it were on the link, "+
				"which works only where the network puts it there; otherwise the node has no route out of its subnet: check the gateway and the addresses' prefix",
				f.name, f.cfg.Gateway, f.name, strings.Join(addrs, ", ")))
		}
	}
	for _, ip := range nodeIPs {
		var mine netip.Prefix
		for _, p := range append(append([]netip.Prefix(nil), c.IPv4.Addresses...), c.IPv6.Addresses...) {
			if p.Addr() == ip {
				mine = p
				break
			}
		}
		if !mine.IsValid() {
			continue
		}
		for _, m := range machine {
			if !m.Contains(ip) || m.Bits() == mine.Bits() {
				continue
			}
			out = append(out, fmt.Sprintf("%s (%s) is %s here, a /%d, but its machine network %s (networking.machineNetwork) is a /%d: the node takes %s for its link, the cluster %s; "+
				"give the keyfile the machine network's prefix (%s/%d), or the install-config the node's subnet, unless the machine network is meant to span several subnets",
				ip, ipInput, mine, mine.Bits(), m, m.Bits(), mine.Masked(), m, ip, m.Bits()))
			break
		}
	}
	return out
}

// describeIP says what a connection has of ip's family: "ipv4.method=auto, ipv4.addresses none".
func describeIP(c *nmkeyfile.Connection, ip netip.Addr) string {
	fam, cfg := "ipv4", c.IPv4
	if ip.Is6() && !ip.Is4In6() {
		fam, cfg = "ipv6", c.IPv6
	}
	method := cfg.Method
	if method == "" {
		method = "(none: a " + c.Type + " connection has no " + fam + " setting)"
	}
	addrs := "none"
	if len(cfg.Addresses) > 0 {
		var s []string
		for _, p := range cfg.Addresses {
			s = append(s, p.String())
		}
		addrs = strings.Join(s, ",")
	}
	return fmt.Sprintf("%s.method=%s, %s.addresses %s", fam, method, fam, addrs)
}

// exportKeyfiles are a node's keyfiles as its Ignition configs (aio.ign or worker.ign, and live.ign) write them.
func exportKeyfiles(keyfiles []clusterconfig.Keyfile) []export.Keyfile {
	out := make([]export.Keyfile, 0, len(keyfiles))
	for _, k := range keyfiles {
		out = append(out, export.Keyfile{Name: k.Name, Contents: k.Contents})
	}
	return out
}

// addKeyfiles lays a node's keyfiles out in its tree: 0600 under /etc/NetworkManager/system-connections, where
// NetworkManager reads them (and refuses files others may read).
func addKeyfiles(tree *export.Tree, keyfiles []clusterconfig.Keyfile) error {
	for _, k := range exportKeyfiles(keyfiles) {
		if err := tree.AddFile(path.Join(export.KeyfileDir, k.Name), 0o600, k.Contents); err != nil {
			return err
		}
	}
	return nil
}

// liveIgnition is live.ign for aio.ign and the inputs.
func liveIgnition(aio []byte, in *clusterconfig.Inputs) ([]byte, error) {
	return export.LiveIgnition(aio, export.LiveOptions{InstallDevice: in.InstallDevice, Keyfiles: exportKeyfiles(in.NetworkKeyfiles),
		SSHAuthorizedKeys: in.InstallConfig.SSHKeys()})
}

// LiveEmbed is what live.ign takes in the live ISO's embed area, or why that is not known.
type LiveEmbed struct {
	Bytes int    // 0: not measured
	Err   string // why not
	// Saved is what the state keeps of it (nil: not measured).
	Saved *state.LiveEmbed
	// xzTime is how long xz took to measure it (0: xz did not run); Output.embedded moves it to Summary.XZTime.
	xzTime time.Duration
}

// Fits says whether live.ign fits the embed area (false when not measured).
func (e LiveEmbed) Fits() bool { return e.Bytes > 0 && e.Bytes <= isoembed.AreaSize }

// measureLive is the embed area's size of live (isoembed: coreos-installer's archive, compressed with xz as it
// compresses it); the earlier measure is taken when it is of the same live.ign and the same xz.
func measureLive(ctx context.Context, live []byte, earlier *state.LiveEmbed) LiveEmbed {
	sum := sha256.Sum256(live)
	id := hex.EncodeToString(sum[:])
	xz := isoembed.Version(ctx)
	if xz == "" {
		return LiveEmbed{Err: isoembed.ErrNoXZ.Error()}
	}
	if earlier != nil && earlier.SHA256 == id && earlier.XZ == xz && earlier.Bytes > 0 {
		return LiveEmbed{Bytes: earlier.Bytes, Saved: earlier}
	}
	t := time.Now()
	n, err := isoembed.Measure(ctx, map[string][]byte{isoembed.ConfigMember: live})
	if err != nil {
		return LiveEmbed{Err: err.Error()}
	}
	return LiveEmbed{Bytes: n, Saved: &state.LiveEmbed{SHA256: id, XZ: xz, Bytes: n}, xzTime: time.Since(t)}
}

// LiveInstall is what the summary says of a node's live.ign: its size (LiveBytes), what it takes in the live ISO's
// embed area (LiveEmbed), and how it installs the node (InstallDevice, the names of its Keyfiles).
type LiveInstall struct {
	LiveBytes     int
	LiveEmbed     LiveEmbed
	InstallDevice string
	Keyfiles      []string
}

// liveLines are the summary's lines about live.ign: its size and the embed area's, and how it installs.
func (s LiveInstall) liveLines() []string {
	if s.LiveBytes == 0 {
		return nil
	}
	var embed string
	switch e := s.LiveEmbed; {
	case e.Bytes == 0:
		embed = "embed size not measured: " + e.Err
	case e.Fits():
		embed = fmt.Sprintf("embeds in %d of the live ISO's %d bytes (xz as coreos-installer)", e.Bytes, isoembed.AreaSize)
	default:
		embed = fmt.Sprintf("DOES NOT FIT the live ISO's embed area: %d > %d bytes (xz as coreos-installer); boot PXE (coreos-installer pxe ignition wrap) or serve aio.ign over HTTP (docs/install.md, \"When live.ign does not fit\")", e.Bytes, isoembed.AreaSize)
	}
	install := "to " + s.InstallDevice + ", then reboot"
	if s.InstallDevice == "" {
		install = "no install device: boot the ISO with coreos.inst.install_dev=/dev/<disk>, or coreos-installer stops (destination device must be specified)"
	}
	if len(s.Keyfiles) > 0 {
		install += "; network: " + strings.Join(s.Keyfiles, ", ") + " (live system and installed node)"
	}
	return []string{fmt.Sprintf("%d bytes; %s", s.LiveBytes, embed), install}
}

// liveWarning is the warning the live.ign in dir gives when it does not fit the embed area; config is the
// Ignition config it installs, in the same folder (aio.ign, a worker's worker.ign).
func (s LiveInstall) liveWarning(dir, config string) string {
	e := s.LiveEmbed
	if e.Bytes == 0 || e.Fits() {
		return ""
	}
	return fmt.Sprintf("%s does not fit the live ISO's embed area: %d bytes once compressed as coreos-installer compresses it, the area holds %d; "+
		"boot the PXE images with it instead (coreos-installer pxe ignition wrap -i %s), or serve %s over HTTP and embed a pointer config (docs/install.md, \"When live.ign does not fit\")",
		path.Join(dir, "live.ign"), e.Bytes, isoembed.AreaSize, path.Join(dir, "live.ign"), path.Join(dir, config))
}
