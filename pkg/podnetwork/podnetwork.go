// Package podnetwork is the render's built-in pod network and its add-ons, what makes an ordinary workload run
// (issue 37, docs/network.md):
//
//   - the pod network: no daemon, no overlay. The render allocates every node's pod CIDR (PodCIDRs: node i gets
//     the i-th subnet of hostPrefix of the first cluster network of each family; the control-plane node is 0, the
//     workers follow in the order the render knows them), and every node gets a CNI conflist (the reference
//     plugins bridge, host-local and portmap) and the routes data file (hub and spoke: the control-plane node
//     routes each worker's pod CIDR via that worker, a worker routes the cluster networks via the control-plane
//     node) that aio-pod-network.service (pkg/node, manifests/node/scripts/aio-pod-network.sh) installs with the
//     forwarding, bridge netfilter and egress masquerade;
//   - the Service proxy: kube-proxy as a static pod on every node, in iptables mode, with the node's own rotating
//     client certificate (kubeproxy.go);
//   - the cluster DNS: kubeadm's CoreDNS addon, exported as API objects the first-boot apply creates (dns.go).
//
// None of it is rendered when the install-config names a network of the user's (BuiltinPodNetwork).
// pkg/node puts the files in each node's tree; pkg/pipeline exports the objects (Manifests).
package podnetwork

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/netip"
	"strings"

	"github.com/render-static/render-static/pkg/clusterconfig"
)

// Paths on the node. The e2e harness reads the same names from /work/i37-design.md.
const (
	// NetworkName is the CNI network's name; ConflistPath the conflist CRI-O (and containerd) read from
	// CNIConfDir, the machine-config operator's network_dir for CRI-O.
	NetworkName  = "aio-pod-network"
	CNIConfDir   = "/etc/kubernetes/cni/net.d"
	ConflistPath = CNIConfDir + "/10-aio-pod-network.conflist"
	// BridgeName is the bridge the CNI bridge plugin makes, the pods' gateway on the node.
	BridgeName = "cni0"
	// IPAMDataDir keeps host-local's leases under /run: a reboot starts with none, as it starts with no pod.
	IPAMDataDir = "/run/cni-ipam-state"
	// RoutesPath is the data aio-pod-network installs (Routes).
	RoutesPath = "/etc/kubernetes/pod-network/routes"

	// KubeProxyPodPath is kube-proxy's static pod; KubeProxyConfigPath its KubeProxyConfiguration and
	// KubeProxyKubeconfigPath its kubeconfig, both in KubeProxyDir, which the pod mounts.
	KubeProxyPodPath        = "/etc/kubernetes/manifests/kube-proxy.yaml"
	KubeProxyDir            = "/etc/kubernetes/kube-proxy"
	KubeProxyConfigPath     = KubeProxyDir + "/config.yaml"
	KubeProxyKubeconfigPath = KubeProxyDir + "/kubeconfig"
	// KubeletCertDir is the kubelet's --cert-dir (its default; kubelet.service sets none) and KubeletClientCurrent
	// the client certificate and key it keeps there: the render's first one (the kubelet's kubeconfig embeds it,
	// and the kubelet's certificate manager stores it here at its first start: client-go
	// util/certificate/certificate_manager.go getCurrentCertificateOrBootstrap), then each rotated one.
	KubeletCertDir       = "/var/lib/kubelet/pki"
	KubeletClientCurrent = KubeletCertDir + "/kubelet-client-current.pem"
)

// File is a file of a node's tree.
type File struct {
	Path string
	Mode fs.FileMode
	Data []byte
}

// Node is a node of the cluster as the pod network numbers them: Index 0 is the control-plane node, 1..n the
// workers in the order of clusterconfig.Inputs.Workers (the workers file's, then those the worker command added,
// in the order added: the state keeps that order).
type Node struct {
	Name  string
	IPs   []netip.Addr
	Index int
}

// Nodes are every node of the render, the control-plane node first.
func Nodes(in *clusterconfig.Inputs) []Node {
	out := []Node{{Name: in.NodeName, IPs: in.NodeIPs, Index: 0}}
	for i, w := range in.Workers {
		out = append(out, Node{Name: w.Name, IPs: w.IPs, Index: i + 1})
	}
	return out
}

// NodeNamed is the node of that name.
func NodeNamed(in *clusterconfig.Inputs, name string) (Node, error) {
	for _, n := range Nodes(in) {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("podnetwork: %s is no node of this render", name)
}

// Enabled says whether the render brings the pod network and its add-ons: the install-config's networkType is
// OVNKubernetes or not given (installconfig BuiltinPodNetwork).
func Enabled(in *clusterconfig.Inputs) bool { return in.InstallConfig.BuiltinPodNetwork() }

// ipOf is the node's IP of a family.
func (n Node) ipOf(is6 bool) (netip.Addr, bool) {
	for _, ip := range n.IPs {
		if ip.Is6() == is6 {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// Conflist is the node's CNI configuration: the bridge plugin (bridge cni0, the pods' default gateway, hairpin
// for a pod reaching itself through a Service, no masquerade of its own: aio-pod-network masquerades only what
// leaves the cluster networks) with host-local handing out the node's pod CIDR of each family, one range set per
// family; then portmap for hostPort. cniVersion 0.4.0: what Debian's containernetworking-plugins 1.1.1 and RHCOS's
// speak (the CNI spec's SPEC.md; the plugins' bridge/README.md, host-local/README.md, portmap/README.md).
func Conflist(in *clusterconfig.Inputs, n Node) ([]byte, error) {
	cidrs, err := in.InstallConfig.PodCIDRs(n.Index)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	ranges := make([][]map[string]string, 0, len(cidrs))
	for _, c := range cidrs {
		ranges = append(ranges, []map[string]string{{"subnet": c.String()}})
	}
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       NetworkName,
		"plugins": []any{
			map[string]any{
				"type":             "bridge",
				"bridge":           BridgeName,
				"isGateway":        true,
				"isDefaultGateway": true,
				"hairpinMode":      true,
				"ipMasq":           false,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": IPAMDataDir,
					"ranges":  ranges,
				},
			},
			map[string]any{
				"type":         "portmap",
				"capabilities": map[string]bool{"portMappings": true},
			},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Routes is the node's routes data file, which aio-pod-network reads: "cluster CIDR" lines (every cluster
// network: forwarding is turned on for their families, and pod traffic leaving them is masqueraded) and
// "route CIDR GATEWAY" lines (ip route replace CIDR via GATEWAY). Hub and spoke: the control-plane node routes
// each worker's pod CIDRs via that worker's IP of the same family; a worker routes every cluster network via the
// control-plane node's IP of its family (its own pod CIDR, on cni0, is more specific). So a worker added later
// changes the control-plane node's file only, and every path between two nodes' pods is symmetric.
func Routes(in *clusterconfig.Inputs, n Node) ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# The pod network's routes of node %s, written by render-static; read by aio-pod-network (docs/network.md).\n", n.Name)
	b.WriteString("# cluster CIDR: a cluster network; route CIDR GATEWAY: CIDR via GATEWAY.\n")
	for _, c := range in.InstallConfig.ClusterCIDRs() {
		fmt.Fprintf(&b, "cluster %s\n", c.Masked())
	}
	nodes := Nodes(in)
	if n.Index == 0 {
		for _, w := range nodes[1:] {
			cidrs, err := in.InstallConfig.PodCIDRs(w.Index)
			if err != nil {
				return nil, fmt.Errorf("worker %s: %w", w.Name, err)
			}
			for _, c := range cidrs {
				gw, ok := w.ipOf(c.Addr().Is6())
				if !ok {
					return nil, fmt.Errorf("worker %s has no IP of the family of its pod CIDR %s", w.Name, c)
				}
				fmt.Fprintf(&b, "route %s %s\n", c, gw)
			}
		}
		return []byte(b.String()), nil
	}
	for _, c := range in.InstallConfig.ClusterCIDRs() {
		gw, ok := nodes[0].ipOf(c.Addr().Is6())
		if !ok {
			return nil, fmt.Errorf("the control-plane node has no IP of the family of cluster network %s", c)
		}
		fmt.Fprintf(&b, "route %s %s\n", c.Masked(), gw)
	}
	return []byte(b.String()), nil
}

// Describe says in one line what network the cluster runs, for the render's summary: the built-in one (the
// control-plane node's pod CIDRs, the Service proxy, the cluster DNS), or, for a networkType of the user's, that
// none is rendered and the nodes stay NotReady until that network's plugin runs.
func Describe(in *clusterconfig.Inputs) string {
	ic := in.InstallConfig
	if !Enabled(in) {
		return fmt.Sprintf("%s, yours: no pod network, Service proxy or cluster DNS rendered; the nodes stay NotReady until its plugin runs (docs/network.md)",
			ic.Networking.NetworkType)
	}
	var cidrs []string
	if c, err := ic.PodCIDRs(0); err == nil {
		for _, p := range c {
			cidrs = append(cidrs, p.String())
		}
	}
	var dns []string
	if ips, err := ClusterDNSIPs(ic); err == nil {
		for _, ip := range ips {
			dns = append(dns, ip.String())
		}
	}
	workers := ""
	if len(in.Workers) > 0 {
		workers = ", each worker the next, routed through it"
	}
	return fmt.Sprintf("built-in: pods of %s on bridge %s (%s%s); kube-proxy (iptables) on every node; CoreDNS at %s (docs/network.md)",
		in.NodeName, BridgeName, strings.Join(cidrs, ", "), workers, strings.Join(dns, ", "))
}
