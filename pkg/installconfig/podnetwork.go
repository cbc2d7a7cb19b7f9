package installconfig

import (
	"fmt"
	"math/big"
	"net/netip"
)

// The built-in pod network (docs/network.md) gives node i the i-th subnet of prefix length hostPrefix of the FIRST
// networking.clusterNetwork entry of each family: the control-plane node is 0, the day-1 workers 1..n in the
// workers file's order, the day-2 workers after them in the order they were added. kube-controller-manager
// allocates nothing (--allocate-node-cidrs=false, as the operator's output has it): the render names every node, so
// it allocates. Other cluster network entries are routed and masqueraded as pod addresses but no node takes a
// subnet of them.

// podNetwork is the first cluster network of one family and its host prefix.
type podNetwork struct {
	path       string // "networking.clusterNetwork[0]"
	prefix     netip.Prefix
	hostPrefix int
}

// nodes is how many node subnets the network holds, at most limit.
func (p podNetwork) nodes(limit int64) int64 {
	bits := p.hostPrefix - p.prefix.Bits()
	if bits >= 62 || int64(1)<<bits > limit {
		return limit
	}
	return int64(1) << bits
}

// subnet is the i-th node subnet (i within nodes).
func (p podNetwork) subnet(i int64) netip.Prefix {
	base := p.prefix.Masked().Addr()
	n := new(big.Int).SetBytes(base.AsSlice())
	n.Add(n, new(big.Int).Lsh(big.NewInt(i), uint(base.BitLen()-p.hostPrefix)))
	b := n.FillBytes(make([]byte, base.BitLen()/8))
	a, _ := netip.AddrFromSlice(b)
	return netip.PrefixFrom(a, p.hostPrefix)
}

// podNetworks are the first cluster network of each family, the primary family (that of the first service network)
// first, from the checked entries of ni; a family whose first network has no valid host prefix is left out.
func (ni *netInfo) podNetworks() []podNetwork {
	var out []podNetwork
	primary6 := len(ni.service) > 0 && ni.service[0].is6()
	for _, is6 := range []bool{primary6, !primary6} {
		for i, e := range ni.cluster {
			if e.is6() != is6 {
				continue
			}
			if ni.hostPrefix[i] >= 0 {
				out = append(out, podNetwork{e.path, e.prefix, ni.hostPrefix[i]})
			}
			break
		}
	}
	return out
}

// podNetworks are the install-config's, from its valid entries (problems are Validate's).
func (ic *InstallConfig) podNetworks() []podNetwork {
	return (&validator{ic: ic}).networking().podNetworks()
}

// noCapacityLimit bounds NodeCapacity (an IPv6 cluster network of /64 node subnets has room for 2^64 or more).
const noCapacityLimit = int64(1) << 62

// NodeCapacity is the number of nodes the built-in pod network has a pod CIDR for: the fewest node subnets of the
// first cluster network of any family (at most 2^62). It is 0 when no cluster network has a valid host prefix. It
// means nothing with a network the user brings (BuiltinPodNetwork false), which allocates by its own rules.
func (ic *InstallConfig) NodeCapacity() int64 {
	nets := ic.podNetworks()
	if len(nets) == 0 {
		return 0
	}
	n := noCapacityLimit
	for _, p := range nets {
		n = min(n, p.nodes(noCapacityLimit))
	}
	return n
}

// PodCIDRs are the pod CIDRs of node nodeIndex (0 the control-plane node, then the workers in order): the
// nodeIndex-th subnet of prefix length hostPrefix of the first cluster network of each family, the primary family
// first. It fails when a family's first network has no room for that node or no valid host prefix.
func (ic *InstallConfig) PodCIDRs(nodeIndex int) ([]netip.Prefix, error) {
	if nodeIndex < 0 {
		return nil, fmt.Errorf("pod CIDRs: node index %d is negative", nodeIndex)
	}
	nets := (&validator{ic: ic}).networking()
	pods := nets.podNetworks()
	for _, is6 := range []bool{false, true} {
		if first := firstOf(nets.cluster, is6); first != nil && !containsPath(pods, first.path) {
			return nil, fmt.Errorf("pod CIDRs: %s.hostPrefix is not a valid host prefix for %s", first.path, first.prefix)
		}
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("pod CIDRs: no valid networking.clusterNetwork")
	}
	out := make([]netip.Prefix, 0, len(pods))
	for _, p := range pods {
		if n := p.nodes(noCapacityLimit); int64(nodeIndex) >= n {
			return nil, fmt.Errorf("pod CIDRs: %s %s with hostPrefix %d has room for %s: none for node %d (counting from 0, the control-plane node)",
				p.path, p.prefix, p.hostPrefix, plural(n, "node subnet"), nodeIndex)
		}
		out = append(out, p.subnet(int64(nodeIndex)))
	}
	return out, nil
}

func containsPath(pods []podNetwork, path string) bool {
	for _, p := range pods {
		if p.path == path {
			return true
		}
	}
	return false
}

func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// CheckNodeRoom reports, on the hostPrefix of the first cluster network of each family, that the built-in pod
// network has no pod CIDR for some of nodes nodes (the control-plane node and every worker), whose describes them
// ("the control-plane node and 3 workers"). Validate checks the day-1 nodes (the control-plane node and the compute
// replicas); render-static worker checks a cluster with a day-2 worker added by the same rule. Nil with a network
// the user brings, and for problems Validate reports otherwise.
func (ic *InstallConfig) CheckNodeRoom(nodes int64, whose string) ErrorList {
	nets := (&validator{ic: ic}).networking()
	v := &validator{ic: ic}
	v.nodeRoom(nets, nodes, whose)
	return v.errs
}

// nodeRoom is the rule of CheckNodeRoom: the render's own allocation (design of issue 37, item 1: node i takes the
// i-th node subnet), so its own rule; the installer checks no such thing (the network operator allocates a node
// subnet when a node joins, and a node without one stays NotReady).
func (v *validator) nodeRoom(ni *netInfo, nodes int64, whose string) {
	if !v.ic.BuiltinPodNetwork() {
		return
	}
	for _, p := range ni.podNetworks() {
		if n := p.nodes(noCapacityLimit); n < nodes {
			v.addf(p.path+".hostPrefix", "%s with hostPrefix %d has room for %s, but the render names %d (%s): each node takes one subnet of this prefix length from the first cluster network of its family; use a shorter hostPrefix or a larger cidr",
				p.prefix, p.hostPrefix, plural(n, "node subnet"), nodes, whose)
		}
	}
}

// dayOneNodes describes the nodes a render names with the control plane: the control-plane node and the compute
// replicas (each a worker of the workers file).
func (ic *InstallConfig) dayOneNodes() (int64, string) {
	w := ic.ComputeReplicas()
	if w == 0 {
		return 1, "the control-plane node alone"
	}
	return 1 + w, "the control-plane node and " + plural(w, "worker")
}
