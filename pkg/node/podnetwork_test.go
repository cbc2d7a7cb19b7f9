package node

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/podnetwork"
)

// TestPodNetworkTree: the control-plane node's tree carries the built-in pod network as pkg/podnetwork makes it
// (conflist, routes, kube-proxy's pod, config and kubeconfig) with aio-pod-network, enabled and ordered before
// CRI-O and the kubelet; kube-proxy's kubeconfig names the kubelet's server and CA; the kubelet reads drop-ins
// from a directory the tree makes; aio-update knows the routes file and the unit. A network of the user's
// (networkType Calico): none of it.
func TestPodNetworkTree(t *testing.T) {
	forEachConfig(t, func(t *testing.T, tc testConfig, f *fixture, tr *export.Tree) {
		kubelet, err := clientcmd.Load(fileOf(t, tr, KubeletKubeconfigPath).Contents)
		if err != nil {
			t.Fatal(err)
		}
		kcl := kubelet.Clusters[kubelet.Contexts[kubelet.CurrentContext].Cluster]
		files, err := podnetwork.NodeFiles(f.in, podnetwork.Nodes(f.in)[0], kcl.CertificateAuthorityData)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 5 {
			t.Fatalf("%d pod network files", len(files))
		}
		for _, want := range files {
			got := fileOf(t, tr, want.Path)
			if !bytes.Equal(got.Contents, want.Data) || got.Mode != want.Mode {
				t.Errorf("%s: mode %o, contents\n%s\nwant mode %o\n%s", want.Path, got.Mode, got.Contents, want.Mode, want.Data)
			}
		}
		kp, err := clientcmd.Load(fileOf(t, tr, podnetwork.KubeProxyKubeconfigPath).Contents)
		if err != nil {
			t.Fatal(err)
		}
		kpc := kp.Clusters[kp.Contexts[kp.CurrentContext].Cluster]
		if kpc.Server != kcl.Server || !bytes.Equal(kpc.CertificateAuthorityData, kcl.CertificateAuthorityData) {
			t.Errorf("kube-proxy's server %s and CA differ from the kubelet's %s", kpc.Server, kcl.Server)
		}
		if u := unitOf(t, tr, PodNetworkUnit); !u.Enabled || !strings.Contains(u.Contents, "\nBefore=kubelet.service crio.service\n") ||
			!strings.Contains(u.Contents, "\nType=oneshot\nRemainAfterExit=yes\n") ||
			!strings.Contains(u.Contents, `Environment="AIO_POD_NETWORK_ROUTES=`+podnetwork.RoutesPath+`"`) ||
			!strings.Contains(u.Contents, "\nExecStart="+PodNetworkScript+"\n") {
			t.Errorf("%s (enabled %v):\n%s", PodNetworkUnit, u.Enabled, u.Contents)
		}
		if f := fileOf(t, tr, PodNetworkScript); f.Mode != 0755 {
			t.Errorf("%s mode %o", PodNetworkScript, f.Mode)
		}
		if !strings.Contains(unitOf(t, tr, KubeletUnit).Contents, "--config-dir="+KubeletConfigDir+" ") ||
			!slices.ContainsFunc(tr.Dirs(), func(d export.File) bool { return d.Path == KubeletConfigDir }) {
			t.Errorf("the kubelet reads no drop-in directory %s, or the tree does not make it", KubeletConfigDir)
		}
		if env := string(fileOf(t, tr, AIOUpdateConfig).Contents); !strings.Contains(env, "AIO_UPDATE_POD_NETWORK_ROUTES='"+podnetwork.RoutesPath+"'\n") ||
			!strings.Contains(env, "AIO_UPDATE_POD_NETWORK_UNIT='"+PodNetworkUnit+"'\n") {
			t.Errorf("aio-update's settings:\n%s", env)
		}
		crio := string(fileOf(t, tr, CRIODropinPath).Contents)
		if !strings.Contains(crio, "[crio.network]\nnetwork_dir = \"/etc/kubernetes/cni/net.d/\"\nplugin_dirs = [\"/var/lib/cni/bin\", \"/usr/libexec/cni\"]\n") {
			t.Errorf("CRI-O drop-in:\n%s", crio)
		}

		// A network of the user's.
		f.in.InstallConfig.Networking.NetworkType = "Calico"
		byo := f.tree(t)
		f.in.InstallConfig.Networking.NetworkType = "OVNKubernetes"
		for _, fl := range byo.Files() {
			if slices.ContainsFunc(files, func(p podnetwork.File) bool { return p.Path == fl.Path }) || fl.Path == PodNetworkScript {
				t.Errorf("networkType Calico renders %s", fl.Path)
			}
		}
		for _, u := range byo.Units() {
			if u.Name == PodNetworkUnit {
				t.Errorf("networkType Calico renders %s", u.Name)
			}
		}
		if env := string(fileOf(t, byo, AIOUpdateConfig).Contents); strings.Contains(env, "POD_NETWORK") {
			t.Errorf("networkType Calico: aio-update's settings name the pod network:\n%s", env)
		}
	})
}

// stubTools writes stand-ins for the commands aio-pod-network runs, each recording its arguments in $STUB_LOG (nft:
// the file it reads too, in $STUB_LOG.nft); it returns their directory.
func stubTools(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"ip":       `echo "ip $*" >>"$STUB_LOG"`,
		"sysctl":   `echo "sysctl $*" >>"$STUB_LOG"`,
		"modprobe": `echo "modprobe $*" >>"$STUB_LOG"`,
		"nft":      `echo "nft $*" >>"$STUB_LOG"; [[ $1 == -f ]] && cp "$2" "$STUB_LOG.nft"; exit "${STUB_NFT_EXIT:-0}"`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/usr/bin/env bash\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPodNetworkScript runs the installed aio-pod-network against a root laid out with the node's routes file, with
// stand-ins for ip, nft, sysctl and modprobe: forwarding and bridge netfilter per the cluster's families (the module
// loaded only when /proc/sys/net/bridge is missing), each route by `ip route replace`, the masquerade table
// replaced in one nft transaction (checked by the real nft's --check), the kubelet's resolv.conf drop-in written
// when /etc/resolv.conf holds only loopback nameservers and systemd-resolved's file exists, removed otherwise; a
// second run does the same; a bad routes file and a failing nft end the run with the reason.
func TestPodNetworkScript(t *testing.T) {
	nft := testtools.Tool(t, "nft")
	forEachConfig(t, func(t *testing.T, tc testConfig, f *fixture, tr *export.Tree) {
		if tc.name == "proxy" {
			return
		}
		f.in.Workers = nil
		dir := t.TempDir()
		script := filepath.Join(dir, "aio-pod-network.sh")
		if err := os.WriteFile(script, fileOf(t, tr, PodNetworkScript).Contents, 0o755); err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		put := func(p, data string) {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Routes as the control-plane node has them with one worker (what a day-2 worker's update brings).
		routes := string(fileOf(t, tr, podnetwork.RoutesPath).Contents)
		var wantRoutes []string
		switch tc.name {
		case "ipv4":
			routes += "route 10.128.2.0/23 192.168.126.11\n"
			wantRoutes = []string{"ip route replace 10.128.2.0/23 via 192.168.126.11"}
		case "ipv6":
			routes += "route fd01:0:0:1::/64 fd00:0:0:1::11\n"
			wantRoutes = []string{"ip route replace fd01:0:0:1::/64 via fd00:0:0:1::11"}
		case "dualstack":
			routes += "route 10.128.2.0/23 192.168.126.11\nroute fd01:0:0:1::/64 fd00::11\n"
			wantRoutes = []string{"ip route replace 10.128.2.0/23 via 192.168.126.11", "ip route replace fd01:0:0:1::/64 via fd00::11"}
		}
		put(podnetwork.RoutesPath, routes)
		put("/etc/resolv.conf", "# Generated by systemd-resolved\nnameserver 127.0.0.53\noptions edns0 trust-ad\n")
		put("/run/systemd/resolve/resolv.conf", "nameserver 192.168.126.1\n")
		log := filepath.Join(dir, "calls.log")
		bin := stubTools(t)
		run := func(extra ...string) (string, error) {
			cmd := exec.Command("bash", script)
			cmd.Env = append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "STUB_LOG=" + log, "AIO_POD_NETWORK_ROOT=" + root,
				"AIO_POD_NETWORK_ROUTES=" + podnetwork.RoutesPath, "AIO_POD_NETWORK_KUBELET_DROPIN=" + PodNetworkResolvDropin}, extra...)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		calls := func() []string { // the temporary file nft reads named FILE
			b, _ := os.ReadFile(log)
			_ = os.Remove(log)
			out := strings.Split(strings.TrimSpace(string(b)), "\n")
			for i, c := range out {
				if strings.HasPrefix(c, "nft -f ") {
					out[i] = "nft -f FILE"
				}
			}
			return out
		}

		out, err := run()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var sysctls []string
		switch tc.name {
		case "ipv4":
			sysctls = []string{"net.ipv4.ip_forward=1 net.ipv4.conf.all.accept_redirects=0 net.ipv4.conf.all.send_redirects=0"}
		case "ipv6":
			sysctls = []string{"net.ipv6.conf.all.forwarding=1 net.ipv6.conf.all.accept_redirects=0"}
		case "dualstack":
			sysctls = []string{"net.ipv4.ip_forward=1 net.ipv4.conf.all.accept_redirects=0 net.ipv4.conf.all.send_redirects=0 net.ipv6.conf.all.forwarding=1 net.ipv6.conf.all.accept_redirects=0"}
		}
		want := []string{"sysctl --quiet --write " + sysctls[0], "modprobe br_netfilter",
			"sysctl --quiet --write net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1"}
		want = append(want, wantRoutes...)
		got := calls()
		want = append(want, "nft -f FILE")
		if !slices.Equal(got, want) {
			t.Errorf("calls\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		rules, err := os.ReadFile(log + ".nft")
		if err != nil {
			t.Fatal(err)
		}
		var wantRules []string
		if tc.name != "ipv6" {
			wantRules = append(wantRules, "\t\tip saddr { 10.128.0.0/14 } ip daddr != { 10.128.0.0/14 } masquerade\n")
		}
		if tc.name != "ipv4" {
			wantRules = append(wantRules, "\t\tip6 saddr { fd01::/48 } ip6 daddr != { fd01::/48 } masquerade\n")
		}
		for _, w := range wantRules {
			if !strings.Contains(string(rules), w) {
				t.Errorf("nft rules lack %q:\n%s", w, rules)
			}
		}
		if !strings.HasPrefix(string(rules), "table inet aio-pod-network\ndelete table inet aio-pod-network\ntable inet aio-pod-network {\n") {
			t.Errorf("nft rules do not replace the table at once:\n%s", rules)
		}
		if b, err := exec.Command("unshare", "--net", nft, "--check", "-f", log+".nft").CombinedOutput(); err != nil {
			t.Errorf("nft --check: %v\n%s\n%s", err, b, rules)
		}
		dropin, err := os.ReadFile(filepath.Join(root, PodNetworkResolvDropin))
		if err != nil {
			t.Fatalf("no kubelet drop-in with a loopback-only /etc/resolv.conf: %v\n%s", err, out)
		}
		var kc kubeletv1beta1.KubeletConfiguration
		if err := yaml.UnmarshalStrict(dropin, &kc); err != nil || kc.ResolverConfig == nil || *kc.ResolverConfig != "/run/systemd/resolve/resolv.conf" ||
			kc.Kind != "KubeletConfiguration" || kc.APIVersion != "kubelet.config.k8s.io/v1beta1" {
			t.Errorf("kubelet drop-in (%v):\n%s", err, dropin)
		}

		// Again, with bridge netfilter on and a resolver the pods can use: the same calls but the module; the
		// drop-in removed.
		put("/proc/sys/net/bridge/bridge-nf-call-iptables", "1\n")
		put("/etc/resolv.conf", "nameserver 127.0.0.1\nnameserver 192.168.126.1\n")
		if out, err := run(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		again := calls()
		if want := slices.DeleteFunc(slices.Clone(got), func(s string) bool { return s == "modprobe br_netfilter" }); !slices.Equal(again, want) {
			t.Errorf("second run\n%s\nwant\n%s", strings.Join(again, "\n"), strings.Join(want, "\n"))
		}
		if _, err := os.Stat(filepath.Join(root, PodNetworkResolvDropin)); !os.IsNotExist(err) {
			t.Errorf("the kubelet drop-in stays with a usable nameserver: %v", err)
		}

		// Failures say why.
		if out, err := run("STUB_NFT_EXIT=1"); err == nil || !strings.Contains(out, "aio-pod-network: error: nft could not replace table inet aio-pod-network") {
			t.Errorf("a failing nft: %v\n%s", err, out)
		}
		put(podnetwork.RoutesPath, "cluster 10.128.0.0/14\nroute 10.128.2.0/23\n")
		if out, err := run(); err == nil || !strings.Contains(out, "aio-pod-network: error: /etc/kubernetes/pod-network/routes: bad line: route 10.128.2.0/23") {
			t.Errorf("a bad routes file: %v\n%s", err, out)
		}
	})
}
