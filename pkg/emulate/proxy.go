package emulate

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	configlisters "github.com/openshift/client-go/config/listers/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// ProxyStatus stands in for the cluster-network-operator's status of proxy.config.openshift.io/cluster, which the
// control-plane operators read (not spec), as its proxy config controller writes it (pkg/controller/proxyconfig/
// status.go, syncProxyStatus; pkg/util/proxyconfig/no_proxy.go, MergeUserSystemNoProxy):
//   - the HTTP(S) proxy as given;
//   - when spec sets any of httpProxy, httpsProxy and noProxy, a noProxy list: "*" alone when the user's noProxy is
//     "*"; otherwise 127.0.0.1, localhost, .svc, .cluster.local, the internal API host, the install-config's
//     machineCIDR and machine networks (0.0.0.0/0 left out), EVERY service network and every cluster network of the
//     Network status (both families on dual stack), and the user's entries; sorted, deduplicated, comma-joined. The
//     platform entries (metadata hosts, cloud subdomains) are for cloud platforms; this cluster is platform none.
//
// No etcd host: the operator added etcd-<i>.<etcd discovery domain> per control-plane replica until January 2021
// (cluster-network-operator commit 2e41b30, "remove unused etcd records from proxy config"); with the empty
// discovery domain of a platform-none cluster that was the entry "etcd-0.".
func ProxyStatus(c *loops.Cluster, in *clusterconfig.Inputs) loops.Loop {
	cfg := c.ConfigInformers.Config().V1()
	return loops.Loop{Name: "emulate/cluster-network-operator-proxy", Sync: func(ctx context.Context) error {
		p, err := cfg.Proxies().Lister().Get("cluster")
		if err != nil {
			return err
		}
		want := configv1.ProxyStatus{HTTPProxy: p.Spec.HTTPProxy, HTTPSProxy: p.Spec.HTTPSProxy}
		if p.Spec.HTTPProxy != "" || p.Spec.HTTPSProxy != "" || p.Spec.NoProxy != "" {
			if want.NoProxy, err = noProxy(p, cfg.Infrastructures().Lister(), cfg.Networks().Lister(), in); err != nil {
				return err
			}
		}
		if p.Status == want {
			return nil
		}
		next := p.DeepCopy()
		next.Status = want
		_, err = c.Config.ConfigV1().Proxies().UpdateStatus(ctx, next, metav1.UpdateOptions{})
		return err
	}}
}

// noProxyEverything is the user's noProxy that the operator keeps as the whole list.
const noProxyEverything = "*"

// noProxy is the status noProxy of a proxy whose spec sets something (see ProxyStatus); like the operator, it fails
// while the Network status has no service or cluster network yet.
func noProxy(p *configv1.Proxy, infras configlisters.InfrastructureLister, networks configlisters.NetworkLister, in *clusterconfig.Inputs) (string, error) {
	if p.Spec.NoProxy == noProxyEverything {
		return noProxyEverything, nil
	}
	set := map[string]bool{"127.0.0.1": true, "localhost": true, ".svc": true, ".cluster.local": true}
	if n := in.InstallConfig.Networking; n != nil {
		const everywhere = "0.0.0.0/0"
		if n.MachineCIDR != "" && n.MachineCIDR != everywhere {
			set[n.MachineCIDR] = true
		}
		for _, m := range n.MachineNetwork {
			if m.CIDR != everywhere {
				set[m.CIDR] = true
			}
		}
	}
	infra, err := infras.Get("cluster")
	if err != nil {
		return "", err
	}
	u, err := url.Parse(infra.Status.APIServerInternalURL)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("infrastructure status.apiServerInternalURL %q: no host", infra.Status.APIServerInternalURL)
	}
	set[u.Hostname()] = true
	n, err := networks.Get("cluster")
	if err != nil {
		return "", err
	}
	if len(n.Status.ServiceNetwork) == 0 || len(n.Status.ClusterNetwork) == 0 {
		return "", fmt.Errorf("network status has no service or cluster network yet")
	}
	for _, s := range n.Status.ServiceNetwork {
		set[s] = true
	}
	for _, cn := range n.Status.ClusterNetwork {
		set[cn.CIDR] = true
	}
	for _, e := range strings.Split(p.Spec.NoProxy, ",") {
		if e != "" {
			set[e] = true
		}
	}
	list := make([]string, 0, len(set))
	for e := range set {
		list = append(list, e)
	}
	sort.Strings(list)
	return strings.Join(list, ","), nil
}
