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
	{"containerd: sandbox_image = the rendered CRI-O drop-in's pause_image, built here; no CNI configuration",
		"nothing can be pulled here; without a network plugin the node stays NotReady and host-network pods run (the four static pods are host-network)"},
	{"kubelet.conf: cgroupDriver systemd -> cgroupfs, systemCgroups removed",
		"no systemd runs in the node's PID namespace, so there are no systemd slices to delegate to"},
	{"kubelet flags: --runtime-cgroups removed",
		"it names a systemd slice (/system.slice/crio.service) that does not exist here"},
	{"/usr/bin/kubelet and /usr/bin/kubectl are the upstream v1.34.3 builds (overlay on /usr/bin)",
		"RHCOS ships both; here they are built from the Go module proxy"},
	{"/usr/bin/systemctl and /usr/bin/crictl are stand-ins that hand their arguments to the harness (overlay on /usr/bin; standins.go): stop/start/restart of kubelet.service stop and start the harness's kubelet by PID with the unit's own commands, other units only succeed; crictl pods/stopp/rmp go through the harness's CRI client",
		"aiokube disables its own unit when done and aio-update recover restarts the kubelet and the static pods; no systemd runs here and Debian ships no crictl (RHCOS has both)"},
	{"/etc/resolv.conf: nameserver 127.0.0.1",
		"the private network namespace has no DNS server; a lookup must fail at once, not time out"},
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
	if err := writeFile("/etc/resolv.conf", []byte("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		return err
	}
	for _, b := range []string{"kubelet", "kubectl"} {
		if err := bind(filepath.Join(n.BinDir, b), "/usr/bin/"+b); err != nil {
			return err
		}
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
	cni := filepath.Join(n.Work, "cni")
	for _, d := range []string{"bin", "net.d"} {
		if err := os.MkdirAll(filepath.Join(cni, d), 0o755); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf(`version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, n.CRISocket, n.PauseImage, filepath.Join(cni, "bin"), filepath.Join(cni, "net.d")), nil
}
