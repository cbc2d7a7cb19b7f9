package clusterconfig

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/loops"
)

// ProxyStatus stands in for the cluster-network-operator's status of proxy.config.openshift.io/cluster, which the
// control-plane operators read (not spec): the HTTP(S) proxy as given, and, when a proxy is set, a noProxy list
// that keeps in-cluster traffic direct: the user's entries, localhost names, the cluster's service domains, the
// internal API name, one etcd-<i>.<etcd discovery domain> per control-plane replica, every cluster and machine
// network and the FIRST service network only (the primary family's: on dual stack the other family's service
// network is not added). Sorted, comma separated. Facts from cluster-network-operator
// pkg/util/proxyconfig/no_proxy.go (MergeUserSystemNoProxy).
func ProxyStatus(c *loops.Cluster, in *Inputs) loops.Loop {
	cfg := c.ConfigInformers.Config().V1()
	return loops.Loop{Name: "emulate/cluster-network-operator-proxy", Sync: func(ctx context.Context) error {
		p, err := cfg.Proxies().Lister().Get("cluster")
		if err != nil {
			return err
		}
		want := configv1.ProxyStatus{HTTPProxy: p.Spec.HTTPProxy, HTTPSProxy: p.Spec.HTTPSProxy}
		if want.HTTPProxy != "" || want.HTTPSProxy != "" {
			set := map[string]bool{"127.0.0.1": true, "localhost": true, ".cluster.local": true, ".svc": true}
			for _, e := range strings.Split(p.Spec.NoProxy, ",") {
				if e = strings.TrimSpace(e); e != "" {
					set[e] = true
				}
			}
			infra, err := cfg.Infrastructures().Lister().Get("cluster")
			if err != nil {
				return err
			}
			if u, err := url.Parse(infra.Status.APIServerInternalURL); err == nil && u.Hostname() != "" {
				set[u.Hostname()] = true
			}
			n, err := cfg.Networks().Lister().Get("cluster")
			if err != nil {
				return err
			}
			for _, cn := range n.Spec.ClusterNetwork {
				set[cn.CIDR] = true
			}
			if len(n.Spec.ServiceNetwork) > 0 {
				set[n.Spec.ServiceNetwork[0]] = true
			}
			if r := in.InstallConfig.ControlPlane; r != nil && r.Replicas != nil {
				for i := int64(0); i < *r.Replicas; i++ {
					set[fmt.Sprintf("etcd-%d.%s", i, infra.Status.EtcdDiscoveryDomain)] = true
				}
			}
			for _, m := range in.InstallConfig.MachineCIDRs() {
				set[m.String()] = true
			}
			var list []string
			for e := range set {
				list = append(list, e)
			}
			sort.Strings(list)
			want.NoProxy = strings.Join(list, ",")
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
