package export

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_2/types"
)

// The live ISO's side of an install, as coreos-installer does it (github.com/coreos/coreos-installer,
// docs/customizing-install.md and src/live/customize.rs, which `iso customize --dest-ignition --dest-device
// --network-keyfile` builds): the live system's Ignition config writes the destination config and an installer
// config under /etc/coreos/installer.d; any file there makes the live system run `coreos-installer install` at
// boot with every file of that directory as a --config-file (systemd/coreos-installer-generator,
// scripts/coreos-installer-service) and reboot once it succeeded (coreos-installer-reboot.service).
const (
	// LiveDestPath is where live.ign puts aio.ign: the path `iso customize --dest-ignition` uses.
	LiveDestPath = "/etc/coreos/dest.ign"
	// LiveInstallerConfigPath is live.ign's installer config (installer.d files are read in name order; `iso
	// customize` writes its own as 0000-customize.yaml).
	LiveInstallerConfigPath = "/etc/coreos/installer.d/0000-render-static.yaml"
	// KeyfileDir is where NetworkManager reads keyfiles, and the directory `coreos-installer install
	// --copy-network` copies from by default (src/cmdline/install.rs network_dir), into the installed system's
	// /boot/coreos-firstboot-network, which its first boot's initramfs uses.
	KeyfileDir = "/etc/NetworkManager/system-connections"
)

// Keyfile is a NetworkManager keyfile: its file name under KeyfileDir and its contents.
type Keyfile struct {
	Name     string
	Contents []byte
}

// LiveOptions are what live.ign does besides carrying aio.ign.
type LiveOptions struct {
	// InstallDevice is the disk coreos-installer writes (dest-device); "" leaves it to the boot's
	// coreos.inst.install_dev kernel argument (without it, coreos-installer stops: "destination device must be
	// specified", src/install.rs).
	InstallDevice string
	// Keyfiles are written for the live system's NetworkManager, and copied to the installed system (copy-network).
	Keyfiles []Keyfile
	// SSHAuthorizedKeys let user "core" log in to the live system while it installs.
	SSHAuthorizedKeys []string
}

// InstallerConfig is live.ign's installer config (docs/customizing-install.md, "Config file format": the
// long option names of `coreos-installer install`, whose parser refuses any other key).
func InstallerConfig(o LiveOptions) []byte {
	var b strings.Builder
	b.WriteString("# render-static: install RHCOS with aio.ign as the destination config, then reboot\n")
	b.WriteString("ignition-file: " + LiveDestPath + "\n")
	if o.InstallDevice != "" {
		b.WriteString("dest-device: " + o.InstallDevice + "\n")
	}
	if len(o.Keyfiles) > 0 {
		b.WriteString("copy-network: true\n")
	}
	return []byte(b.String())
}

// LiveIgnition builds live.ign, a spec 3.2.0 config for the RHCOS live ISO (embedded in it: README, "Installing"):
// aio.ign as the destination config (LiveDestPath, 0600: it holds the cluster's keys), the installer config
// (InstallerConfig, LiveInstallerConfigPath, 0600), the keyfiles under KeyfileDir (0600, as NetworkManager wants
// them) and user "core" with the SSH keys. Its files are encoded as aio.ign's are (encode: plain, so that xz
// compresses aio.ign inside it as well as alone). The config gets Ignition's verdict on it (Built.Validate),
// without decoding the 3.4 MB data URL of aio.ign once more (validateCarrying).
func LiveIgnition(aio []byte, o LiveOptions) ([]byte, error) {
	t := NewTree()
	add := func(p string, data []byte) error {
		if err := t.addFile(p, 0o600, data, false); err != nil { // t lives as long as this call, which changes nothing
			return fmt.Errorf("building live.ign: %w", err)
		}
		return nil
	}
	if err := add(LiveDestPath, aio); err != nil {
		return nil, err
	}
	if err := add(LiveInstallerConfigPath, InstallerConfig(o)); err != nil {
		return nil, err
	}
	for _, k := range o.Keyfiles {
		if err := add(path.Join(KeyfileDir, k.Name), k.Contents); err != nil {
			return nil, err
		}
	}
	b, err := IgnitionUnvalidated(t, IgnitionOptions{SSHAuthorizedKeys: o.SSHAuthorizedKeys})
	if err != nil {
		return nil, fmt.Errorf("live.ign: %w", err)
	}
	if err := b.validateCarrying(LiveDestPath); err != nil {
		return nil, fmt.Errorf("live.ign: %w", err)
	}
	return b.Raw, nil
}

// validateCarrying is b.Validate()'s verdict on a config whose file at path p carries a large contents (aio.ign
// in live.ign), without Ignition decoding that file's data URL: Ignition's validation (v3_2/types, v2.24.0) looks
// at a file's contents.source only to see whether it is nil (file.go validateOverwrite, resource.go
// validateVerification), whether its scheme allows HTTP headers (resource.go validateSchemeForHTTPHeaders: a
// data URL never does) and whether it is a valid URL (url.go validateURL, through validateURLNilOK); no duplicate
// check keys on it (a file's key is its path). So the verdict is that of the same config with that one source
// replaced by another valid data URL (placeholderSource), provided the real source is a valid URL. It is when it
// is wellFormedDataURL (that function says why); otherwise the whole config is validated as it is (Built.Validate,
// with Ignition's own report).
func (b *Built) validateCarrying(p string) error {
	files := b.config.Storage.Files
	i := slices.IndexFunc(files, func(f types.File) bool { return f.Path == p })
	if i < 0 || files[i].Contents.Source == nil || !wellFormedDataURL(*files[i].Contents.Source) {
		return b.Validate()
	}
	rest := *b
	rest.config.Storage.Files = slices.Clone(files)
	rest.config.Storage.Files[i].Contents.Source = strPtr(placeholderSource)
	return rest.Validate()
}

// placeholderSource is the valid data URL validateCarrying validates in place of a well-formed one: empty contents.
const placeholderSource = "data:,"

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
//     rest as data if every rune isURLCharRune (ASCII, not a control or DEL, not space or <>#"{}|\^[]`: every
//     literal, '%' and hex digit is one, lexData); the parser then unescapes it (asciiDataReader, Unescape), which
//     fails only on a non-ASCII rune or a '%' not followed by two hex digits.
//
// TestWellFormedDataURLsPassIgnition checks it on every literal and every escape.
func wellFormedDataURL(s string) bool {
	const prefix = "data:,"
	if !strings.HasPrefix(s, prefix) {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
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
