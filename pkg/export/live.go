package export

import (
	"fmt"
	"path"
	"strings"
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
	// Carries names the config live.ign installs, for the installer config's comment ("": aio.ign; a worker's
	// live.ign carries its worker.ign).
	Carries string
}

// InstallerConfig is live.ign's installer config (docs/customizing-install.md, "Config file format": the
// long option names of `coreos-installer install`, whose parser refuses any other key).
func InstallerConfig(o LiveOptions) []byte {
	var b strings.Builder
	carries := o.Carries
	if carries == "" {
		carries = "aio.ign"
	}
	b.WriteString("# render-static: install RHCOS with " + carries + " as the destination config, then reboot\n")
	b.WriteString("ignition-file: " + LiveDestPath + "\n")
	if o.InstallDevice != "" {
		b.WriteString("dest-device: " + o.InstallDevice + "\n")
	}
	if len(o.Keyfiles) > 0 {
		b.WriteString("copy-network: true\n")
	}
	return []byte(b.String())
}

// LiveIgnition builds live.ign, a spec 3.2.0 config for the RHCOS live ISO (embedded in it: docs/install.md):
// aio.ign as the destination config (LiveDestPath, 0600: it holds the cluster's keys), the installer config
// (InstallerConfig, LiveInstallerConfigPath, 0600), the keyfiles under KeyfileDir (0600, as NetworkManager wants
// them) and user "core" with the SSH keys. Its files are encoded as aio.ign's are (encode: plain, so that xz
// compresses aio.ign inside it as well as alone). The config is validated as aio.ign is (Built.Validate, which does
// not decode the 3.4 MB data URL of aio.ign: validSources).
func LiveIgnition(aio []byte, o LiveOptions) ([]byte, error) {
	t := NewTree()
	add := func(p string, data []byte) error {
		if err := t.addFile(p, 0o600, data, false, false); err != nil { // t lives as long as this call, which changes nothing
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
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("live.ign: %w", err)
	}
	return b.Raw, nil
}
