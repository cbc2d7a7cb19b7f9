package podnetwork

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/clientcmd"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
)

func repo(p string) string { return filepath.Join("..", "..", p) }

// family is one install-config of each IP family, with the IPs of its control-plane node and two workers.
type family struct {
	name, config string
	nodeIPs      []string // control-plane node, worker-0, worker-1 (dual stack: "v4,v6")
}

var families = []family{
	{"ipv4", "examples/sno/install-config.yaml", []string{"192.168.126.10", "192.168.126.11", "192.168.126.12"}},
	{"ipv6", "testdata/installconfig/good/ipv6.yaml", []string{"fd00:0:0:1::10", "fd00:0:0:1::11", "fd00:0:0:1::12"}},
	{"dualstack", "testdata/installconfig/good/dualstack.yaml", []string{"192.168.126.10,fd00::10", "192.168.126.11,fd00::11", "192.168.126.12,fd00::12"}},
}

// inputs are the render's inputs of an install-config with a control-plane node and workers worker-0, worker-1.
func inputs(t *testing.T, fam family, flavor clusterconfig.Flavor) *clusterconfig.Inputs {
	t.Helper()
	ips := func(s string) []netip.Addr {
		a, err := installconfig.ParseNodeIPs(s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ic, err := installconfig.Load(repo(fam.config), ips(fam.nodeIPs[0]))
	if err != nil {
		t.Fatal(err)
	}
	return &clusterconfig.Inputs{InstallConfig: ic, NodeName: "master-0", NodeIPs: ips(fam.nodeIPs[0]), Flavor: flavor,
		Images:  clusterconfig.AddOnImages(flavor),
		Workers: []clusterconfig.Worker{{Name: "worker-0", IPs: ips(fam.nodeIPs[1])}, {Name: "worker-1", IPs: ips(fam.nodeIPs[2])}}}
}

// conflist is the part of a CNI conflist the tests read.
type conflist struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []struct {
		Type             string          `json:"type"`
		Bridge           string          `json:"bridge"`
		IsGateway        bool            `json:"isGateway"`
		IsDefaultGateway bool            `json:"isDefaultGateway"`
		HairpinMode      bool            `json:"hairpinMode"`
		IPMasq           *bool           `json:"ipMasq"`
		Capabilities     map[string]bool `json:"capabilities"`
		IPAM             *struct {
			Type    string                `json:"type"`
			DataDir string                `json:"dataDir"`
			Ranges  [][]map[string]string `json:"ranges"`
		} `json:"ipam"`
	} `json:"plugins"`
}

// TestConflist: every node's conflist parses as JSON: bridge cni0 as the pods' gateway, hairpin, no masquerade,
// host-local with its leases under /run and one range set per family holding the node's own subnet (node i: the
// i-th subnet of hostPrefix of the first cluster network of each family), then portmap.
func TestConflist(t *testing.T) {
	want := map[string][][]string{ // by family: each node's ranges
		"ipv4":      {{"10.128.0.0/23"}, {"10.128.2.0/23"}, {"10.128.4.0/23"}},
		"ipv6":      {{"fd01::/64"}, {"fd01:0:0:1::/64"}, {"fd01:0:0:2::/64"}},
		"dualstack": {{"10.128.0.0/23", "fd01::/64"}, {"10.128.2.0/23", "fd01:0:0:1::/64"}, {"10.128.4.0/23", "fd01:0:0:2::/64"}},
	}
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			in := inputs(t, fam, clusterconfig.FlavorOpenShift)
			for i, n := range Nodes(in) {
				b, err := Conflist(in, n)
				if err != nil {
					t.Fatal(err)
				}
				var c conflist
				dec := json.NewDecoder(strings.NewReader(string(b)))
				if err := dec.Decode(&c); err != nil {
					t.Fatalf("%s: %v\n%s", n.Name, err, b)
				}
				if c.CNIVersion != "0.4.0" || c.Name != "aio-pod-network" || len(c.Plugins) != 2 {
					t.Fatalf("%s: %s", n.Name, b)
				}
				br, pm := c.Plugins[0], c.Plugins[1]
				if br.Type != "bridge" || br.Bridge != "cni0" || !br.IsGateway || !br.IsDefaultGateway || !br.HairpinMode ||
					br.IPMasq == nil || *br.IPMasq || br.IPAM == nil || br.IPAM.Type != "host-local" || br.IPAM.DataDir != "/run/cni-ipam-state" {
					t.Errorf("%s: bridge plugin %s", n.Name, b)
				}
				var got []string
				for _, set := range br.IPAM.Ranges {
					if len(set) != 1 {
						t.Errorf("%s: range set %v: want one range", n.Name, set)
					}
					for _, r := range set {
						got = append(got, r["subnet"])
					}
				}
				if !slices.Equal(got, want[fam.name][i]) {
					t.Errorf("%s (node %d): subnets %v, want %v", n.Name, n.Index, got, want[fam.name][i])
				}
				if pm.Type != "portmap" || !pm.Capabilities["portMappings"] {
					t.Errorf("%s: portmap plugin %s", n.Name, b)
				}
			}
		})
	}
}

// TestRoutes: hub and spoke. The control-plane node routes each worker's pod CIDRs via that worker's IP of the
// family; a worker routes every cluster network via the control-plane node's IP of the family; every node's file
// names the cluster networks.
func TestRoutes(t *testing.T) {
	want := map[string][]string{
		"ipv4/master-0": {"cluster 10.128.0.0/14", "route 10.128.2.0/23 192.168.126.11", "route 10.128.4.0/23 192.168.126.12"},
		"ipv4/worker-1": {"cluster 10.128.0.0/14", "route 10.128.0.0/14 192.168.126.10"},
		"ipv6/master-0": {"cluster fd01::/48", "route fd01:0:0:1::/64 fd00:0:0:1::11", "route fd01:0:0:2::/64 fd00:0:0:1::12"},
		"ipv6/worker-0": {"cluster fd01::/48", "route fd01::/48 fd00:0:0:1::10"},
		"dualstack/master-0": {"cluster 10.128.0.0/14", "cluster fd01::/48",
			"route 10.128.2.0/23 192.168.126.11", "route fd01:0:0:1::/64 fd00::11",
			"route 10.128.4.0/23 192.168.126.12", "route fd01:0:0:2::/64 fd00::12"},
		"dualstack/worker-0": {"cluster 10.128.0.0/14", "cluster fd01::/48", "route 10.128.0.0/14 192.168.126.10", "route fd01::/48 fd00::10"},
	}
	checked := 0
	for _, fam := range families {
		in := inputs(t, fam, clusterconfig.FlavorOpenShift)
		for _, n := range Nodes(in) {
			w, ok := want[fam.name+"/"+n.Name]
			if !ok {
				continue
			}
			checked++
			b, err := Routes(in, n)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if !strings.HasPrefix(l, "#") {
					got = append(got, l)
				}
			}
			if !slices.Equal(got, w) {
				t.Errorf("%s/%s routes:\n%s\nwant %q", fam.name, n.Name, b, w)
			}
		}
	}
	if checked != len(want) {
		t.Errorf("checked %d nodes, want %d", checked, len(want))
	}
}

// TestKubeProxy: kube-proxy's static pod (host network, privileged, system-node-critical, the flavor's image and
// binary, its config, the kubelet's certificates, the modules and iptables' lock; no revision label), its
// configuration (strictly a v1alpha1 KubeProxyConfiguration: iptables, every cluster network, the node's name,
// the primary family's binds, conntrack left alone) and its kubeconfig (api-int, the serving CA, the kubelet's
// rotating client certificate by file).
func TestKubeProxy(t *testing.T) {
	for _, fam := range families {
		for _, flavor := range []clusterconfig.Flavor{clusterconfig.FlavorOpenShift, clusterconfig.FlavorUpstream} {
			t.Run(fam.name+"/"+string(flavor), func(t *testing.T) {
				in := inputs(t, fam, flavor)
				n := Nodes(in)[1]
				files, err := NodeFiles(in, n, []byte("serving CA"))
				if err != nil {
					t.Fatal(err)
				}
				byPath := map[string]File{}
				for _, f := range files {
					byPath[f.Path] = f
				}
				if got := slices.Sorted(func(yield func(string) bool) {
					for p := range byPath {
						if !yield(p) {
							return
						}
					}
				}); !slices.Equal(got, []string{ConflistPath, KubeProxyConfigPath, KubeProxyKubeconfigPath, KubeProxyPodPath, RoutesPath}) {
					t.Errorf("files %v", got)
				}

				var pod corev1.Pod
				if err := yaml.UnmarshalStrict(byPath[KubeProxyPodPath].Data, &pod); err != nil {
					t.Fatal(err)
				}
				c := pod.Spec.Containers[0]
				wantImage, wantBin := "quay.io/openshift/origin-kube-proxy:4.20", "/usr/bin/kube-proxy"
				if flavor == clusterconfig.FlavorUpstream {
					wantImage, wantBin = "registry.k8s.io/kube-proxy:v1.34.3", "/usr/local/bin/kube-proxy"
				}
				if pod.Namespace != "kube-system" || pod.Name != "kube-proxy" || !pod.Spec.HostNetwork || pod.Spec.PriorityClassName != "system-node-critical" ||
					len(pod.Spec.Containers) != 1 || c.Image != wantImage || !slices.Equal(c.Command, []string{wantBin, "--config=" + KubeProxyConfigPath}) ||
					c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
					t.Errorf("kube-proxy pod:\n%s", byPath[KubeProxyPodPath].Data)
				}
				if _, ok := pod.Labels["revision"]; ok {
					t.Error("kube-proxy's pod has a revision label: it is no operator's revisioned pod")
				}
				mounts := map[string]bool{}
				for _, m := range c.VolumeMounts {
					mounts[m.MountPath] = m.ReadOnly
				}
				if ro, ok := mounts[KubeProxyDir]; !ok || !ro {
					t.Errorf("config dir not mounted read-only: %v", mounts)
				}
				if ro, ok := mounts[KubeletCertDir]; !ok || !ro {
					t.Errorf("the kubelet's certificate dir not mounted read-only: %v", mounts)
				}
				if ro, ok := mounts["/lib/modules"]; !ok || !ro {
					t.Errorf("/lib/modules not mounted read-only: %v", mounts)
				}
				if _, ok := mounts["/run/xtables.lock"]; !ok {
					t.Errorf("/run/xtables.lock not mounted: %v", mounts)
				}

				var cfg kubeproxyv1alpha1.KubeProxyConfiguration
				if err := yaml.UnmarshalStrict(byPath[KubeProxyConfigPath].Data, &cfg); err != nil {
					t.Fatalf("%v\n%s", err, byPath[KubeProxyConfigPath].Data)
				}
				wantCIDR := map[string]string{"ipv4": "10.128.0.0/14", "ipv6": "fd01::/48", "dualstack": "10.128.0.0/14,fd01::/48"}[fam.name]
				bind, healthz := "0.0.0.0", "0.0.0.0:10256"
				if fam.name == "ipv6" {
					bind, healthz = "::", "[::]:10256"
				}
				if cfg.APIVersion != "kubeproxy.config.k8s.io/v1alpha1" || cfg.Kind != "KubeProxyConfiguration" || cfg.Mode != "iptables" ||
					cfg.ClusterCIDR != wantCIDR || cfg.HostnameOverride != "worker-0" || cfg.BindAddress != bind ||
					cfg.HealthzBindAddress != healthz || cfg.MetricsBindAddress != "127.0.0.1:10249" ||
					cfg.ClientConnection.Kubeconfig != KubeProxyKubeconfigPath || cfg.Conntrack.MaxPerCore == nil || *cfg.Conntrack.MaxPerCore != 0 {
					t.Errorf("kube-proxy config:\n%s", byPath[KubeProxyConfigPath].Data)
				}

				kc := byPath[KubeProxyKubeconfigPath]
				if kc.Mode != 0600 {
					t.Errorf("kubeconfig mode %o", kc.Mode)
				}
				cc, err := clientcmd.Load(kc.Data)
				if err != nil {
					t.Fatal(err)
				}
				ctx := cc.Contexts[cc.CurrentContext]
				cl, user := cc.Clusters[ctx.Cluster], cc.AuthInfos[ctx.AuthInfo]
				if cl.Server != in.InstallConfig.APIServerInternalURL() || string(cl.CertificateAuthorityData) != "serving CA" ||
					user.ClientCertificate != "/var/lib/kubelet/pki/kubelet-client-current.pem" || user.ClientKey != user.ClientCertificate ||
					len(user.ClientCertificateData) != 0 || len(user.ClientKeyData) != 0 {
					t.Errorf("kube-proxy kubeconfig:\n%s", kc.Data)
				}
			})
		}
	}
}

// TestCoreDNS: the objects of kubeadm's CoreDNS addon and the node-proxier binding, each decoded strictly: the
// kube-dns Service at the tenth address of the first service network (both families' on dual stack,
// PreferDualStack), the Corefile's zone and upstream, the Deployment's replicas, probes, DNS policy, tolerations
// and the flavor's image and command.
func TestCoreDNS(t *testing.T) {
	wantIPs := map[string][]string{"ipv4": {"172.30.0.10"}, "ipv6": {"fd02::a"}, "dualstack": {"172.30.0.10", "fd02::a"}}
	for _, fam := range families {
		for _, flavor := range []clusterconfig.Flavor{clusterconfig.FlavorOpenShift, clusterconfig.FlavorUpstream} {
			t.Run(fam.name+"/"+string(flavor), func(t *testing.T) {
				in := inputs(t, fam, flavor)
				ms, err := Manifests(in)
				if err != nil {
					t.Fatal(err)
				}
				var files []string
				objs := map[string][]byte{}
				for _, m := range ms {
					files = append(files, m.File)
					objs[m.GVK.Kind+"/"+m.Name] = m.YAML
				}
				slices.Sort(files)
				want := []string{
					"02_cluster_clusterrole.rbac.authorization.k8s.io_system:coredns.yaml",
					"02_cluster_clusterrolebinding.rbac.authorization.k8s.io_aio:node-proxier.yaml",
					"02_cluster_clusterrolebinding.rbac.authorization.k8s.io_system:coredns.yaml",
					"02_kube-system_serviceaccount_coredns.yaml",
					"05_kube-system_configmap_coredns.yaml",
					"05_kube-system_deployment.apps_coredns.yaml",
					"05_kube-system_service_kube-dns.yaml",
				}
				if !slices.Equal(files, want) {
					t.Errorf("manifests %q, want %q", files, want)
				}

				var svc corev1.Service
				if err := yaml.UnmarshalStrict(objs["Service/kube-dns"], &svc); err != nil {
					t.Fatal(err)
				}
				ips := wantIPs[fam.name]
				if svc.Namespace != "kube-system" || svc.Spec.ClusterIP != ips[0] || svc.Spec.Selector["k8s-app"] != "kube-dns" || len(svc.Spec.Ports) != 3 {
					t.Errorf("kube-dns:\n%s", objs["Service/kube-dns"])
				}
				if len(ips) > 1 {
					if !slices.Equal(svc.Spec.ClusterIPs, ips) || svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyPreferDualStack {
						t.Errorf("dual-stack kube-dns: clusterIPs %v policy %v", svc.Spec.ClusterIPs, svc.Spec.IPFamilyPolicy)
					}
				} else if len(svc.Spec.ClusterIPs) != 0 || svc.Spec.IPFamilyPolicy != nil {
					t.Errorf("single-stack kube-dns: clusterIPs %v policy %v", svc.Spec.ClusterIPs, svc.Spec.IPFamilyPolicy)
				}
				if got, _ := ClusterDNSIPs(in.InstallConfig); got[0].String() != ips[0] {
					t.Errorf("ClusterDNSIPs %v", got)
				}

				var cm corev1.ConfigMap
				if err := yaml.UnmarshalStrict(objs["ConfigMap/coredns"], &cm); err != nil {
					t.Fatal(err)
				}
				for _, line := range []string{"kubernetes cluster.local in-addr.arpa ip6.arpa {", "forward . /etc/resolv.conf {", "loop", "ready", "prometheus :9153",
					"disable success cluster.local"} {
					if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(line) + `\s*$`).MatchString(cm.Data["Corefile"]) {
						t.Errorf("Corefile lacks %q:\n%s", line, cm.Data["Corefile"])
					}
				}

				var d appsv1.Deployment
				if err := yaml.UnmarshalStrict(objs["Deployment/coredns"], &d); err != nil {
					t.Fatal(err)
				}
				ps := d.Spec.Template.Spec
				c := ps.Containers[0]
				wantImage, wantCmd := "quay.io/openshift/origin-coredns:4.20", []string{"coredns"}
				if flavor == clusterconfig.FlavorUpstream {
					wantImage, wantCmd = "registry.k8s.io/coredns/coredns:v1.12.1", nil
				}
				if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 || ps.DNSPolicy != corev1.DNSDefault || ps.ServiceAccountName != "coredns" ||
					c.Image != wantImage || !slices.Equal(c.Command, wantCmd) || !slices.Equal(c.Args, []string{"-conf", "/etc/coredns/Corefile"}) ||
					c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/ready" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/health" ||
					c.Resources.Limits.Memory().String() != "170Mi" || *c.SecurityContext.ReadOnlyRootFilesystem != true {
					t.Errorf("coredns Deployment:\n%s", objs["Deployment/coredns"])
				}
				var tolerated []string
				for _, tol := range ps.Tolerations {
					tolerated = append(tolerated, tol.Key+":"+string(tol.Effect))
				}
				if !slices.Equal(tolerated, []string{"CriticalAddonsOnly:", "node-role.kubernetes.io/control-plane:NoSchedule", "node-role.kubernetes.io/master:NoSchedule"}) {
					t.Errorf("tolerations %v", tolerated)
				}

				var crb rbacv1.ClusterRoleBinding
				if err := yaml.UnmarshalStrict(objs["ClusterRoleBinding/aio:node-proxier"], &crb); err != nil {
					t.Fatal(err)
				}
				if crb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:node-proxier"}) ||
					!reflect.DeepEqual(crb.Subjects, []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "system:nodes"}}) {
					t.Errorf("node-proxier binding:\n%s", objs["ClusterRoleBinding/aio:node-proxier"])
				}
			})
		}
	}
}

// TestBringYourOwnNetwork: a networkType of the user's renders none of it; OVNKubernetes and none given render it.
func TestBringYourOwnNetwork(t *testing.T) {
	for _, c := range []struct {
		networkType string
		builtin     bool
	}{{"", true}, {"OVNKubernetes", true}, {"Calico", false}, {"Cilium", false}} {
		in := inputs(t, families[0], clusterconfig.FlavorUpstream)
		in.InstallConfig.Networking.NetworkType = c.networkType
		files, err := NodeFiles(in, Nodes(in)[0], []byte("ca"))
		if err != nil {
			t.Fatal(err)
		}
		ms, err := Manifests(in)
		if err != nil {
			t.Fatal(err)
		}
		if Enabled(in) != c.builtin || (len(files) > 0) != c.builtin || (len(ms) > 0) != c.builtin {
			t.Errorf("networkType %q: enabled %v, %d files, %d manifests; want built-in %v", c.networkType, Enabled(in), len(files), len(ms), c.builtin)
		}
	}
}

// TestAddOnImages: one key each for both flavors, the default following the flavor.
func TestAddOnImages(t *testing.T) {
	if got := clusterconfig.AddOnImages(clusterconfig.FlavorUpstream); !reflect.DeepEqual(got, clusterconfig.Images{
		"kube-proxy": "registry.k8s.io/kube-proxy:v1.34.3", "coredns": "registry.k8s.io/coredns/coredns:v1.12.1"}) {
		t.Errorf("upstream %v", got)
	}
	if got := clusterconfig.AddOnImages(clusterconfig.FlavorOpenShift); !reflect.DeepEqual(got, clusterconfig.Images{
		"kube-proxy": "quay.io/openshift/origin-kube-proxy:4.20", "coredns": "quay.io/openshift/origin-coredns:4.20"}) {
		t.Errorf("openshift %v", got)
	}
}

// The manifests templates hold no left-over kubeadm template field.
func TestTemplatesRendered(t *testing.T) {
	in := inputs(t, families[2], clusterconfig.FlavorUpstream)
	ms, err := Manifests(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.Contains(string(m.YAML), "{{") || strings.Contains(string(m.YAML), "<no value>") {
			t.Errorf("%s:\n%s", m.File, m.YAML)
		}
	}
	if _, err := os.Stat(repo("manifests/podnetwork/coredns.yaml")); err != nil {
		t.Error(err)
	}
}

// TestDescribe: the summary's line names the built-in network's pieces, or says a network of the user's leaves the
// nodes NotReady until its plugin runs.
func TestDescribe(t *testing.T) {
	in := inputs(t, families[2], clusterconfig.FlavorUpstream)
	if got, want := Describe(in), "built-in: pods of master-0 on bridge cni0 (10.128.0.0/23, fd01::/64, each worker the next, routed through it); kube-proxy (iptables) on every node; CoreDNS at 172.30.0.10, fd02::a (docs/network.md)"; got != want {
		t.Errorf("dual stack:\n%s\nwant\n%s", got, want)
	}
	in.InstallConfig.Networking.NetworkType = "Cilium"
	if got, want := Describe(in), "Cilium, yours: no pod network, Service proxy or cluster DNS rendered; the nodes stay NotReady until its plugin runs (docs/network.md)"; got != want {
		t.Errorf("Cilium:\n%s\nwant\n%s", got, want)
	}
}
