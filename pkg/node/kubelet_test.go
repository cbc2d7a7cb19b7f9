package node

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
)

// decodeKubeletConfigStrict decodes kubelet.conf the strict way: apiVersion/kind through a scheme that knows only
// the kubelet's v1beta1 types, unknown or duplicate fields rejected.
func decodeKubeletConfigStrict(t *testing.T, data []byte) *kubeletv1beta1.KubeletConfiguration {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := kubeletv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	obj, gvk, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("kubelet.conf does not decode strictly as %s: %v\n%s", kubeletv1beta1.SchemeGroupVersion, err, data)
	}
	cfg, ok := obj.(*kubeletv1beta1.KubeletConfiguration)
	if !ok || gvk.Kind != "KubeletConfiguration" || gvk.GroupVersion() != kubeletv1beta1.SchemeGroupVersion {
		t.Fatalf("kubelet.conf decodes to %T (%s)", obj, gvk)
	}
	var again kubeletv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict(data, &again); err != nil {
		t.Fatalf("kubelet.conf: %v", err)
	}
	return cfg
}

func TestKubeletConfiguration(t *testing.T) {
	forEachConfig(t, func(t *testing.T, tc testConfig, f *fixture, tr *export.Tree) {
		conf := fileOf(t, tr, KubeletConfigPath)
		cfg := decodeKubeletConfigStrict(t, conf.Contents)
		if strings.Contains(string(conf.Contents), ": 0s") || strings.Contains(string(conf.Contents), "null") {
			t.Errorf("kubelet.conf carries unset values:\n%s", conf.Contents)
		}
		checks := []struct {
			what      string
			got, want any
		}{
			{"staticPodPath", cfg.StaticPodPath, "/etc/kubernetes/manifests"},
			{"containerRuntimeEndpoint", cfg.ContainerRuntimeEndpoint, "unix:///var/run/crio/crio.sock"},
			{"cgroupDriver", cfg.CgroupDriver, "systemd"},
			{"authentication.x509.clientCAFile", cfg.Authentication.X509.ClientCAFile, KubeletClientCAPath},
			{"authentication.anonymous.enabled", *cfg.Authentication.Anonymous.Enabled, false},
			{"authentication.webhook.enabled", *cfg.Authentication.Webhook.Enabled, true},
			{"authorization.mode", cfg.Authorization.Mode, kubeletv1beta1.KubeletAuthorizationModeWebhook},
			{"serverTLSBootstrap", cfg.ServerTLSBootstrap, true},
			{"rotateCertificates", cfg.RotateCertificates, true},
			{"clusterDNS", strings.Join(cfg.ClusterDNS, ","), tc.clusterDNS},
			{"address", cfg.Address, tc.address},
			{"readOnlyPort", cfg.ReadOnlyPort, int32(0)},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
			}
		}
		if conf.Mode != 0644 {
			t.Errorf("kubelet.conf mode %o", conf.Mode)
		}

		// The client CA is kube-apiserver's kubelet client CA.
		if ca := fileOf(t, tr, KubeletClientCAPath); string(ca.Contents) != string(f.kubeletC.certPEM) {
			t.Errorf("%s is not openshift-kube-apiserver-operator/kube-apiserver-to-kubelet-client-ca", KubeletClientCAPath)
		}

		// kubelet.service: enabled, after CRI-O, node name and IPs (primary first) as flags.
		u := unitOf(t, tr, KubeletUnit)
		var ips []string
		for _, ip := range f.in.NodeIPs {
			ips = append(ips, ip.String())
		}
		for _, want := range []string{
			"--node-ip=" + strings.Join(ips, ","), "--hostname-override=sno-0", "--config=" + KubeletConfigPath,
			"--kubeconfig=" + KubeletKubeconfigPath, "Requires=crio.service", "After=network-online.target crio.service",
			"node-role.kubernetes.io/master", "WantedBy=multi-user.target",
		} {
			if !strings.Contains(u.Contents, want) {
				t.Errorf("kubelet.service lacks %q:\n%s", want, u.Contents)
			}
		}
		if !u.Enabled {
			t.Error("kubelet.service is not enabled")
		}

		// CRI-O reads the pull secret from /var/lib/kubelet/config.json (0600).
		ps := fileOf(t, tr, PullSecretPath)
		if ps.Mode != 0600 || strings.TrimSpace(string(ps.Contents)) != strings.TrimSpace(f.in.InstallConfig.PullSecret) {
			t.Errorf("%s: mode %o, contents %q", PullSecretPath, ps.Mode, ps.Contents)
		}
		crio := string(fileOf(t, tr, CRIODropinPath).Contents)
		for _, want := range []string{`global_auth_file = "/var/lib/kubelet/config.json"`, `pause_image = "` + f.in.Images.Image("pod") + `"`} {
			if !strings.Contains(crio, want) {
				t.Errorf("CRI-O drop-in lacks %s:\n%s", want, crio)
			}
		}
	})
}

// TestHosts: api and api-int resolve to the node's primary IP (the family kube-apiserver listens on), after
// RHCOS's loopback entries.
func TestHosts(t *testing.T) {
	for _, tc := range testConfigs {
		t.Run(tc.name, func(t *testing.T) {
			in := testInputs(t, tc.config, tc.nodeIPs)
			hosts := string(Hosts(in))
			if !strings.HasPrefix(hosts, "127.0.0.1   localhost") || !strings.Contains(hosts, "\n::1         localhost") {
				t.Errorf("/etc/hosts lost the loopback entries:\n%s", hosts)
			}
			var entries []string
			for _, l := range strings.Split(strings.TrimSpace(hosts), "\n") {
				if strings.Contains(l, " api") {
					entries = append(entries, l)
				}
			}
			if len(entries) != 1 || entries[0] != tc.apiHosts {
				t.Errorf("API entries %q, want %q", entries, tc.apiHosts)
			}
		})
	}
}

// TestProxy: with a proxy in the install-config CRI-O pulls through it, and never for the node, the cluster's
// networks and api-int.
func TestProxy(t *testing.T) {
	f := newFixture(t, "testdata/installconfig/good/proxy.yaml", "", true)
	f.converge(t)
	u := unitOf(t, f.tree(t), "crio.service")
	if u.Contents != "" || u.Enabled || len(u.Dropins) != 1 {
		t.Fatalf("crio.service: %+v", u)
	}
	d := u.Dropins[0].Contents
	for _, want := range []string{
		`Environment="HTTP_PROXY=http://proxy.corp.example.net:3128"`,
		`Environment="HTTPS_PROXY=https://user:pass@proxy.corp.example.net:3129"`,
		"api-int.hub-site-7.corp.example.net", "10.0.0.5", "172.30.0.0/16", "10.128.0.0/14", ".corp.example.net", ".cluster.local",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("proxy drop-in lacks %s:\n%s", want, d)
		}
	}
	g := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	g.converge(t)
	for _, u := range g.tree(t).Units() {
		if u.Name == "crio.service" {
			t.Errorf("a proxy drop-in without a proxy: %+v", u)
		}
	}
}

// TestNodeLabelsByFlavor: OpenShift's kubelet registers with every node label; an upstream kubelet gets only the
// labels outside kubernetes.io/k8s.io on its command line (it refuses the others) and aiokube sets the rest
// through the API, so the node ends up with the same labels either way.
func TestNodeLabelsByFlavor(t *testing.T) {
	for _, flavor := range []clusterconfig.Flavor{clusterconfig.FlavorOpenShift, clusterconfig.FlavorUpstream} {
		in := testInputs(t, "examples/sno/install-config.yaml", "192.168.126.10")
		in.Flavor = flavor
		var cmdline string
		for _, f := range kubeletFlags(in) {
			if v, ok := strings.CutPrefix(f, "--node-labels="); ok {
				cmdline = v
			}
		}
		reg, api := RegistrationLabels(in), APILabels(in)
		if cmdline != strings.Join(reg, ",") {
			t.Errorf("%s: --node-labels=%s, want %s", flavor, cmdline, strings.Join(reg, ","))
		}
		if len(reg)+len(api) != len(NodeLabels(in)) {
			t.Errorf("%s: registration %v + API %v do not cover %v", flavor, reg, api, NodeLabels(in))
		}
		for _, l := range reg {
			if flavor == clusterconfig.FlavorUpstream && restrictedLabel(l) {
				t.Errorf("upstream kubelet would refuse --node-labels %s", l)
			}
		}
		switch flavor {
		case clusterconfig.FlavorOpenShift:
			if len(api) != 0 {
				t.Errorf("openshift: labels through the API %v, want none", api)
			}
		case clusterconfig.FlavorUpstream:
			want := []string{"node-role.kubernetes.io/control-plane=", "node-role.kubernetes.io/master=", "node-role.kubernetes.io/worker="}
			if strings.Join(api, " ") != strings.Join(want, " ") {
				t.Errorf("upstream: labels through the API %v, want %v", api, want)
			}
		}
	}
	for l, want := range map[string]bool{"node-role.kubernetes.io/master": true, "node.openshift.io/os_id=rhcos": false,
		"foo.k8s.io/x=1": true, "example.com/a": false, "plain": false} {
		if restrictedLabel(l) != want {
			t.Errorf("restrictedLabel(%q) = %v, want %v", l, !want, want)
		}
	}
}
