// Package emulate holds the operator stand-ins: loops that do, offline, what operators that do not run in an
// all-in-one cluster would have done and the control-plane operators read (the network and proxy status, the
// service CA, the Node the kubelet registers, kube-controller-manager's legacy service-account tokens, the
// namespaces the cluster-version operator would create). Each is a loop named "emulate/<what it stands in for>",
// run before the components' loops (Emulations), but Namespaces, which runs after them and the node side's.
//
// One stand-in is not here: the approval and signing of the node's first client certificates
// ("emulate/node-client-csr-approval") stays in pkg/node (csr.go), as the keys it signs for are the node side's.
package emulate

import (
	"context"
	"reflect"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// Emulations are the loops that stand in for operators that do not run in an all-in-one cluster but whose
// outputs the control-plane operators read. Each is a loop of its own, named "emulate/<what it stands in for>",
// so the trace shows what was emulated.
func Emulations(c *loops.Cluster, in *clusterconfig.Inputs) []loops.Loop {
	return []loops.Loop{NetworkStatus(c), ProxyStatus(c, in), LegacyServiceAccountTokens(c),
		NodeEmulation(c, in),
		ServiceCA(c, in),
	}
}

// NetworkStatus stands in for the cluster-network-operator's status of network.config.openshift.io/cluster:
// the cluster and service networks and network type it applied, copied from spec (kube-apiserver's cert rotation
// and config observers read status, not spec).
func NetworkStatus(c *loops.Cluster) loops.Loop {
	lister := c.ConfigInformers.Config().V1().Networks().Lister()
	return loops.Loop{Name: "emulate/cluster-network-operator", Sync: func(ctx context.Context) error {
		n, err := lister.Get("cluster")
		if err != nil {
			return err
		}
		want := configv1.NetworkStatus{
			ClusterNetwork: append([]configv1.ClusterNetworkEntry(nil), n.Spec.ClusterNetwork...),
			ServiceNetwork: append([]string(nil), n.Spec.ServiceNetwork...),
			NetworkType:    n.Spec.NetworkType,
			ClusterNetworkMTU: func() int {
				if n.Status.ClusterNetworkMTU != 0 {
					return n.Status.ClusterNetworkMTU
				}
				return 1400
			}(),
		}
		if reflect.DeepEqual(n.Status, want) {
			return nil
		}
		next := n.DeepCopy()
		next.Status = want
		_, err = c.Config.ConfigV1().Networks().UpdateStatus(ctx, next, metav1.UpdateOptions{})
		return err
	}}
}
