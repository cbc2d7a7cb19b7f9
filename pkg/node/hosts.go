package node

import (
	"fmt"
	"strings"

	"github.com/render-static/render-static/pkg/clusterconfig"
)

// rhcosHosts is /etc/hosts as RHCOS ships it (the setup package's loopback names).
const rhcosHosts = `127.0.0.1   localhost localhost.localdomain localhost4 localhost4.localdomain4
::1         localhost localhost.localdomain localhost6 localhost6.localdomain6
`

// APINames are the names of the API that must resolve to the node on the node itself: the kubeconfigs of the
// kubelet, the control-plane components and the CSR approver use api-int, the admin kubeconfig api.
func APINames(in *clusterconfig.Inputs) []string {
	d := in.InstallConfig.ClusterDomain()
	return []string{"api." + d, "api-int." + d}
}

// Hosts is the node's /etc/hosts: RHCOS's loopback entries, and api/api-int on the node's primary IP.
//
// Only the primary IP: kube-apiserver listens on the wildcard address of the primary family only (bindNetwork
// tcp4 on 0.0.0.0:6443, or tcp6 on [::]:6443 when the first service network is IPv6, which the node's primary
// IP matches), so on a dual-stack node the other family's address would not reach it. The file is written
// whole (Ignition overwrites it) rather than appended to, so the result is the same on every boot of the
// config and can be tested; the loopback lines are the ones RHCOS ships.
func Hosts(in *clusterconfig.Inputs) []byte {
	return hosts(in, "this node")
}

// WorkerHosts is a worker's /etc/hosts: the same names on the control-plane node's primary IP, where
// kube-apiserver listens (the worker's kubelet uses api-int).
func WorkerHosts(in *clusterconfig.Inputs) []byte {
	return hosts(in, "the control-plane node "+in.NodeName)
}

func hosts(in *clusterconfig.Inputs, where string) []byte {
	var b strings.Builder
	b.WriteString(rhcosHosts)
	fmt.Fprintf(&b, "# render-static: the API of cluster %s is on %s.\n", in.InstallConfig.Metadata.Name, where)
	fmt.Fprintf(&b, "%s %s\n", in.NodeIP(), strings.Join(APINames(in), " "))
	return []byte(b.String())
}
