package node

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ApproverNodesPath is the CSR approver's list of nodes (aio-csr-approver.sh reads it on every run): one line per
// node, "NAME IP [IP...]". A kubelet's request is approved only for a node of this list, and a serving request may
// name only that node's name and IPs, never another node's.
const ApproverNodesPath = "/etc/kubernetes/aio-csr-approver.nodes"

// ApproverNode is a node of the approver's list: its name (the kubelet's system:node:<name> identity, the only DNS
// name its serving certificate may carry) and its IPs (the only IP addresses it may carry).
type ApproverNode struct {
	Name string
	IPs  []netip.Addr
}

// ApproverNodesFile is the approver's list of nodes as the script reads it. Every name must be a DNS-1123
// subdomain and appear once; every node needs an IP, and no IP may belong to two nodes (the script refuses such a
// file too). IPv4-mapped IPv6 addresses are written as IPv4, as the kubelet requests them.
func ApproverNodesFile(nodes []ApproverNode) ([]byte, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("CSR approver: no node")
	}
	var b strings.Builder
	b.WriteString("# The nodes whose kubelet certificate requests aio-csr-approver approves, one a line: NAME IP [IP...].\n" +
		"# A serving request of node NAME may name NAME and NAME's IPs only; a client request no name (docs/node.md).\n")
	names, owners := map[string]bool{}, map[netip.Addr]string{}
	for _, n := range nodes {
		if msgs := validation.IsDNS1123Subdomain(n.Name); len(msgs) > 0 {
			return nil, fmt.Errorf("CSR approver: node name %q: %s", n.Name, strings.Join(msgs, "; "))
		}
		if names[n.Name] {
			return nil, fmt.Errorf("CSR approver: node %s is listed twice", n.Name)
		}
		names[n.Name] = true
		if len(n.IPs) == 0 {
			return nil, fmt.Errorf("CSR approver: node %s has no IP", n.Name)
		}
		b.WriteString(n.Name)
		for _, ip := range n.IPs {
			ip = ip.Unmap()
			if !ip.IsValid() || ip.Zone() != "" {
				return nil, fmt.Errorf("CSR approver: node %s: %q is not an IP address without a zone", n.Name, ip)
			}
			if o, ok := owners[ip]; ok {
				return nil, fmt.Errorf("CSR approver: IP %s of node %s is also node %s's", ip, n.Name, o)
			}
			owners[ip] = n.Name
			b.WriteString(" " + ip.String())
		}
		b.WriteString("\n")
	}
	return []byte(b.String()), nil
}

// approverNodes are the nodes of this render: the control-plane node and each worker, with their IPs.
func (n *Node) approverNodes() []ApproverNode {
	out := []ApproverNode{{Name: n.in.NodeName, IPs: n.in.NodeIPs}}
	for _, w := range n.in.Workers {
		out = append(out, ApproverNode{Name: w.Name, IPs: w.IPs})
	}
	return out
}

// approverEnv is aio-csr-approver.sh's configuration: its kubeconfig and its list of nodes.
func approverEnv() map[string]string {
	return map[string]string{
		"APPROVER_KUBECONFIG": ApproverKubeconfig,
		"APPROVER_NODES":      ApproverNodesPath,
	}
}
