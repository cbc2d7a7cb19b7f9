package emulate

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
)

// TestProxyStatus: the stand-in for the cluster-network-operator's Proxy status (pkg/controller/proxyconfig/status.go,
// pkg/util/proxyconfig/no_proxy.go MergeUserSystemNoProxy) on single-stack and dual-stack clusters behind a proxy,
// with noProxy "*", and without a proxy. The expectations are the source's rule written out: the localhost names,
// the service domains, the internal API host, every machine network, EVERY service network of the Network status
// (both families on dual stack), every cluster network, the user's entries; sorted and comma-joined; no etcd host
// (the operator stopped adding etcd-<i>.<discovery domain> in 2021); "*" alone stays "*".
func TestProxyStatus(t *testing.T) {
	replicas := int64(1)
	base := func(service []string, clusters []string, p *installconfig.Proxy) *installconfig.InstallConfig {
		ic := &installconfig.InstallConfig{Metadata: installconfig.ObjectMeta{Name: "edge"}, BaseDomain: "example.net",
			ControlPlane: &installconfig.MachinePool{Replicas: &replicas}, Proxy: p,
			Networking: &installconfig.Networking{NetworkType: "OVNKubernetes", ServiceNetwork: service,
				MachineNetwork: []installconfig.MachineNetworkEntry{{CIDR: "10.0.0.0/24"}}}}
		for _, c := range clusters {
			ic.Networking.ClusterNetwork = append(ic.Networking.ClusterNetwork, installconfig.ClusterNetworkEntry{CIDR: c, HostPrefix: 23})
		}
		return ic
	}
	proxied := &installconfig.Proxy{HTTPProxy: "http://proxy.example.net:3128", NoProxy: ".corp.example.net,192.168.1.1"}
	for _, tc := range []struct {
		name string
		ic   *installconfig.InstallConfig
		want string
	}{
		{"single stack", base([]string{"172.30.0.0/16"}, []string{"10.128.0.0/14"}, proxied),
			".cluster.local,.corp.example.net,.svc,10.0.0.0/24,10.128.0.0/14,127.0.0.1,172.30.0.0/16,192.168.1.1,api-int.edge.example.net,localhost"},
		{"dual stack", base([]string{"172.30.0.0/16", "fd02::/112"}, []string{"10.128.0.0/14", "fd01::/48"}, proxied),
			".cluster.local,.corp.example.net,.svc,10.0.0.0/24,10.128.0.0/14,127.0.0.1,172.30.0.0/16,192.168.1.1,api-int.edge.example.net,fd01::/48,fd02::/112,localhost"},
		{"noProxy *", base([]string{"172.30.0.0/16"}, []string{"10.128.0.0/14"}, &installconfig.Proxy{HTTPSProxy: "https://proxy.example.net:3129", NoProxy: "*"}),
			"*"},
		{"no proxy", base([]string{"172.30.0.0/16"}, []string{"10.128.0.0/14"}, nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &clusterconfig.Inputs{InstallConfig: tc.ic}
			infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
				Status: configv1.InfrastructureStatus{APIServerInternalURL: tc.ic.APIServerInternalURL()}}
			c := testCluster(t, clusterconfig.Namespaces, infra, clusterconfig.NetworkConfig(tc.ic), clusterconfig.ProxyConfig(tc.ic))
			if err := NetworkStatus(c).Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			syncTwice(t, c, ProxyStatus(c, in))
			p, err := c.ConfigInformers.Config().V1().Proxies().Lister().Get("cluster")
			if err != nil {
				t.Fatal(err)
			}
			if p.Status.NoProxy != tc.want {
				t.Errorf("status.noProxy\n  %q\nwant\n  %q", p.Status.NoProxy, tc.want)
			}
			if strings.Contains(p.Status.NoProxy, "etcd-") {
				t.Errorf("status.noProxy %q names an etcd host", p.Status.NoProxy)
			}
			if p.Status.HTTPProxy != p.Spec.HTTPProxy || p.Status.HTTPSProxy != p.Spec.HTTPSProxy {
				t.Errorf("status proxies %q %q, spec %q %q", p.Status.HTTPProxy, p.Status.HTTPSProxy, p.Spec.HTTPProxy, p.Spec.HTTPSProxy)
			}
		})
	}
}
