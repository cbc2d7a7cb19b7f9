package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Every change the harness makes to what aio.ign lays down, or to how a RHCOS node would run it, is in this
// list with its reason; nothing else differs from the rendered files. TestUpstreamE2E prints it.
//
// Nothing of the render is rewritten on the node's disk: changed files are bind-mounted or overlaid in the
// node's private mount namespace only.
var Overrides = []struct{ What, Why string }{
	{"the container runtime is Debian's containerd 1.6 + runc, serving the CRI at the socket the rendered kubelet.conf names (CRI-O's)",
		"RHCOS runs CRI-O; Debian has no CRI-O package, containerd speaks the same CRI"},
	{"containerd: restrict_oom_score_adj = true",
		"this machine drops CAP_SYS_RESOURCE: runc cannot lower oom_score_adj below 0, which fails every container of a critical pod"},
	{"containerd: sandbox_image = the rendered CRI-O drop-in's pause_image, built here (imported; in the mirror case pulled by digest from the harness's mirror)",
		"containerd does not read CRI-O's drop-in; nothing comes from the internet here"},
	{"containerd: registry config_path = hosts.toml files made from the rendered /etc/containers/registries.conf, resolved by internal/registries (CRI-O's sysregistriesv2) for every image the node pulls: each mirror a [host.\"http://<mirror>[/v2/<prefix>]\"] (capabilities pull, and resolve only for a mirror images by tag go to; override_path with a prefix), the source registry last (mirror.go ContainerdHosts); none without a rendered registries.conf",
		"containerd does not read registries.conf (CRI-O does); the mirror is the harness's plain-HTTP registry (no certificate for its name exists here)"},
	{"the mirror case (dual stack): nothing is imported into containerd; the node's /etc/hosts gets the mirror's name on the mirror machine's addresses (a copy of the rendered file with those lines, bound over it)",
		"the node pulls every image by digest from the harness's registry (mirror.go); the name resolves only inside the node's namespaces, as a site's DNS would resolve it"},
	{"containerd: CNI conf_dir = the rendered CRI-O drop-in's network_dir (/etc/kubernetes/cni/net.d), bin_dir = /usr/libexec/cni (the one of its plugin_dirs RHCOS ships the reference plugins in; containerd 1.6 takes one directory)",
		"the node's pod network is the rendered CNI configuration (issue 37), read by containerd where CRI-O reads it"},
	{"/usr/libexec/cni is Debian's containernetworking-plugins 1.1.1 (/usr/lib/cni bind-mounted there, over an overlay on /usr/libexec)",
		"RHCOS ships the CNI reference plugins (bridge, host-local, portmap, loopback) under /usr/libexec/cni; Debian ships the same plugins under /usr/lib/cni"},
	{"aio-pod-network.service's ExecStart runs before containerd and the kubelet on every boot, and again on `systemctl start|restart aio-pod-network` (the stand-in, standins.go)",
		"no systemd runs here: the unit is ordered Before=kubelet.service crio.service, and the update of a day-2 worker restarts it"},
	{"kubelet.conf: cgroupDriver systemd -> cgroupfs, systemCgroups removed",
		"no systemd runs in the node's PID namespace, so there are no systemd slices to delegate to"},
	{"kubelet flags: --runtime-cgroups removed",
		"it names a systemd slice (/system.slice/crio.service) that does not exist here"},
	{"/usr/bin/kubelet and /usr/bin/kubectl are the upstream v1.34.3 builds (overlay on /usr/bin)",
		"RHCOS ships both; here they are built from the Go module proxy"},
	{"/usr/bin/systemctl and /usr/bin/crictl are stand-ins that hand their arguments to the harness (overlay on /usr/bin; standins.go): stop/start/restart of kubelet.service stop and start the harness's kubelet by PID with the unit's own commands, start/restart of aio-pod-network.service run its ExecStart (units.go), other units only succeed; crictl pods/stopp/rmp go through the harness's CRI client",
		"aiokube disables its own unit when done and aio-update recover restarts the kubelet and the static pods; no systemd runs here and Debian ships no crictl (RHCOS has both)"},
	{"/etc/resolv.conf: nameserver <the node's primary IP> (nothing listens on port 53 there)",
		"the private network namespace has no DNS server; a lookup must fail at once (port unreachable), not time out; and not a loopback address: the kubelet hands the node's resolv.conf to CoreDNS, whose forward to a loopback nameserver is itself (the loop coredns#2087 describes; its loop plugin exits)"},
	{"the CSR approver's unit runs every 5 s instead of its timer's 1 min; aiokube's waits are shortened (AIOKUBE_*_SECONDS, AIOKUBE_ATTEMPTS)",
		"bounded test time; the commands and the rest of their environment are the units' own"},
	{"kernel.panic, kernel.panic_on_oops and vm.overcommit_memory are restored after each boot",
		"the kubelet sets them, and they are global to the machine, not to the node's namespaces"},
	{"a worker (worker_test.go) runs in namespaces its control-plane node's test process starts, linked to it by a veth pair and a bridge inside the control-plane node's network namespace; its kubelet.conf: cgroupRoot /kubepods-<worker> (made before it starts, removed after it stops)",
		"two kubelets on one machine share the cgroup hierarchies: each must own its subtree (the control-plane node's stays /, its kubepods under it), or one would remove the other's pod cgroups"},
}

// PrintOverrides logs the list.
func PrintOverrides(logf func(string, ...any)) {
	var b strings.Builder
	for i, o := range Overrides {
		fmt.Fprintf(&b, "\n  %2d. %s\n      because %s", i+1, o.What, o.Why)
	}
	logf("the harness's overrides of the rendered node (test/e2e/overrides.go):%s", b.String())
}

// applyFileOverrides makes the file changes of Overrides in the node's view (overlays and bind mounts only).
func applyFileOverrides(n *Node) error {
	ns := n.Nameserver
	if ns == "" {
		ns = "127.0.0.1"
	}
	if err := writeFile("/etc/resolv.conf", []byte("nameserver "+ns+"\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		return err
	}
	if n.ExtraHosts != "" {
		// A copy of the rendered /etc/hosts with the lines added, bound over it (the node's disk keeps the original).
		hosts, err := os.ReadFile("/etc/hosts")
		if err != nil {
			return err
		}
		patched := filepath.Join(n.Work, "hosts")
		if err := os.WriteFile(patched, append(hosts, []byte(n.ExtraHosts)...), 0o644); err != nil {
			return err
		}
		if err := bind(patched, "/etc/hosts"); err != nil {
			return err
		}
	}
	for _, b := range []string{"kubelet", "kubectl"} {
		if err := bind(filepath.Join(n.BinDir, b), "/usr/bin/"+b); err != nil {
			return err
		}
	}
	if err := n.cniDirs(); err != nil {
		return err
	}
	for _, tool := range []string{"systemctl", "crictl"} {
		if err := writeFile("/usr/bin/"+tool, []byte(standInScript(tool)), 0o755); err != nil {
			return err
		}
	}
	// kubelet.conf: a patched copy bind-mounted over the rendered one (the node's disk keeps the original).
	u, err := ReadKubeletUnit("/")
	if err != nil {
		return err
	}
	cfgPath := kubeletConfigPath(u.Start)
	if cfgPath == "" {
		return fmt.Errorf("the rendered kubelet.service passes no --config")
	}
	var cfg map[string]any
	if err := readYAML(cfgPath, &cfg); err != nil {
		return err
	}
	cfg["cgroupDriver"] = "cgroupfs"
	delete(cfg, "systemCgroups")
	if n.CgroupRoot != "" {
		cfg["cgroupRoot"] = n.CgroupRoot
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	patched := filepath.Join(n.Work, "kubelet.conf")
	if err := os.WriteFile(patched, out, 0o644); err != nil {
		return err
	}
	if err := bind(patched, cfgPath); err != nil {
		return err
	}
	ep, _ := cfg["containerRuntimeEndpoint"].(string)
	sock, ok := strings.CutPrefix(ep, "unix://")
	if !ok {
		return fmt.Errorf("kubelet.conf containerRuntimeEndpoint %q is not a unix socket", ep)
	}
	n.CRISocket = sock
	n.PauseImage, err = crioPauseImage("/")
	return err
}

// applyFlagOverrides returns the kubelet's argv without the flags Overrides removes.
func applyFlagOverrides(argv []string) []string {
	return slices.DeleteFunc(slices.Clone(argv), func(a string) bool { return strings.HasPrefix(a, "--runtime-cgroups=") })
}

// containerdConfig is containerd's configuration for the node (see Overrides): its state on the node's disk
// (/var/lib/containerd) and in /run, the CRI at the kubelet's endpoint, cgroupfs, the rendered pause image.
func containerdConfig(n *Node) (string, error) {
	if n.CRISocket == "" || n.PauseImage == "" {
		return "", fmt.Errorf("containerd: no CRI socket or pause image (Mount first)")
	}
	registry := ""
	if n.RegistryHosts != "" {
		registry = fmt.Sprintf("  [plugins.\"io.containerd.grpc.v1.cri\".registry]\n    config_path = %q\n", n.RegistryHosts)
	}
	return fmt.Sprintf(`version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
%s  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, n.CRISocket, n.PauseImage, registry, n.CNIBinDir, n.CNIConfDir), nil
}

// The CNI directories of the rendered CRI-O drop-in ([crio.network]), and where Debian's plugins are.
const (
	crioNetworkDir = "/etc/kubernetes/cni/net.d" // the machine-config operator's network_dir, when no drop-in sets one
	rhcosCNIBinDir = "/usr/libexec/cni"          // where RHCOS ships the reference plugins
	DebianCNIDir   = "/usr/lib/cni"              // Debian's containernetworking-plugins
)

// cniDirs sets containerd's CNI directories from the rendered CRI-O drop-in (Overrides) and puts Debian's plugins
// where RHCOS has its own.
func (n *Node) cniDirs() error {
	n.CNIConfDir, n.CNIBinDir = crioNetworkDir, rhcosCNIBinDir
	if v, err := crioSetting("/", "network_dir"); err != nil {
		return err
	} else if d := crioStrings(v); len(d) > 0 {
		n.CNIConfDir = strings.TrimSuffix(d[0], "/")
	}
	if v, err := crioSetting("/", "plugin_dirs"); err != nil {
		return err
	} else if d := crioStrings(v); len(d) > 0 && !slices.Contains(d, rhcosCNIBinDir) {
		return fmt.Errorf("the rendered CRI-O plugin_dirs %q do not name %s, where the harness puts the CNI plugins", d, rhcosCNIBinDir)
	}
	if _, err := os.Stat(filepath.Join(DebianCNIDir, "bridge")); err != nil {
		return fmt.Errorf("the CNI reference plugins are not installed (%v): run hack/install-test-deps.sh (containernetworking-plugins)", err)
	}
	return bind(DebianCNIDir, n.CNIBinDir)
}
