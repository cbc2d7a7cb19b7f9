package apiserver_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/render-static/render-static/internal/testkit/rendertest"
)

// TestNetworkVariants: IPv6, dual-stack and proxy install-configs render kube-apiserver with the values their
// networks call for.
func TestNetworkVariants(t *testing.T) {
	type want struct {
		bindAddress, bindNetwork, servicesSubnet, checkEndpointsListen string
		etcdServers, restricted                                        []string
		proxyEnv                                                       map[string]string
	}
	cases := []struct {
		name, config string
		want         want
	}{
		{"ipv6", "testdata/installconfig/good/ipv6.yaml", want{
			bindAddress: "[::]:6443", bindNetwork: "tcp6", servicesSubnet: "fd02::/112", checkEndpointsListen: "[::]:17697",
			etcdServers: []string{"https://[fd00:0:0:1::10]:2379", "https://localhost:2379"},
			restricted:  []string{"fd01::/48", "fd02::/112"},
		}},
		{"dualstack", "testdata/installconfig/good/dualstack.yaml", want{
			bindAddress: "[::]:6443", bindNetwork: "tcp", servicesSubnet: "172.30.0.0/16,fd02::/112", checkEndpointsListen: "0.0.0.0:17697",
			etcdServers: []string{"https://192.168.126.10:2379", "https://localhost:2379"},
			restricted:  []string{"10.128.0.0/14", "fd01::/48", "172.30.0.0/16", "fd02::/112"},
		}},
		{"proxy", "testdata/installconfig/good/proxy.yaml", want{
			bindAddress: "0.0.0.0:6443", bindNetwork: "tcp4", servicesSubnet: "172.30.0.0/16", checkEndpointsListen: "0.0.0.0:17697",
			etcdServers: []string{"https://10.0.0.5:2379", "https://localhost:2379"},
			restricted:  []string{"10.128.0.0/14", "172.30.0.0/16"},
			proxyEnv: map[string]string{
				"HTTP_PROXY":  "http://proxy.corp.example.net:3128",
				"HTTPS_PROXY": "https://user:pass@proxy.corp.example.net:3129",
				"NO_PROXY":    ".cluster.local,.corp.example.net,.svc,10.0.0.0/24,10.0.0.0/8,10.128.0.0/14,127.0.0.1,172.30.0.0/16,192.168.1.1,api-int.hub-site-7.corp.example.net,localhost",
			},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			config := rendertest.Repo(tc.config)
			r := render(t, config, "", true)
			if r.rev != 1 {
				t.Fatalf("revision %d, want 1", r.rev)
			}
			conf := decodeYAML(t, r.file(t, revDir+"/configmaps/config/config.yaml"))
			check := func(what string, got, want interface{}) {
				t.Helper()
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			check("servingInfo.bindAddress", rendertest.Dig(conf, "servingInfo", "bindAddress"), tc.want.bindAddress)
			check("servingInfo.bindNetwork", rendertest.Dig(conf, "servingInfo", "bindNetwork"), tc.want.bindNetwork)
			check("servicesSubnet", rendertest.Dig(conf, "servicesSubnet"), tc.want.servicesSubnet)
			check("etcd-servers", rendertest.Dig(conf, "apiServerArguments", "etcd-servers"), tc.want.etcdServers)
			check("restrictedCIDRs", rendertest.Dig(conf, "admission", "pluginConfig", "network.openshift.io/RestrictedEndpointsAdmission", "configuration", "restrictedCIDRs"), tc.want.restricted)
			domain := r.in.InstallConfig.ClusterDomain()
			check("service-account-jwks-uri", rendertest.Dig(conf, "apiServerArguments", "service-account-jwks-uri"), []string{"https://api." + domain + ":6443/openid/v1/jwks"})

			pod := podOf(t, r.file(t, "etc/kubernetes/manifests/kube-apiserver-pod.yaml"))
			ce := rendertest.Container(pod, "kube-apiserver-check-endpoints")
			if ce == nil {
				t.Fatal("no check-endpoints container")
			}
			check("check-endpoints --listen", listenArg(ce.Args), tc.want.checkEndpointsListen)
			// Every container (not the init container) carries the proxy environment.
			for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
				env := map[string]string{}
				for _, e := range c.Env {
					if strings.HasSuffix(e.Name, "_PROXY") {
						env[e.Name] = e.Value
					}
				}
				if (len(tc.want.proxyEnv) == 0 || rendertest.Container(pod, c.Name) == nil) && len(env) > 0 {
					t.Errorf("%s: proxy env %v, want none", c.Name, env)
				}
				if rendertest.Container(pod, c.Name) == nil {
					continue
				}
				for k, v := range tc.want.proxyEnv {
					check(c.Name+" "+k, env[k], v)
				}
			}
		})
	}
}

func listenArg(args []string) string {
	for i, a := range args {
		if a == "--listen" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
