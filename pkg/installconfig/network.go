package installconfig

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Limits on the service network size.
const (
	// kube-apiserver refuses service ranges with more than 20 host bits.
	minServicePrefix4 = 12
	minServicePrefix6 = 108
	// The DNS service takes the 10th address, so a service network needs
	// at least 16 addresses.
	maxServicePrefix4 = 28
	maxServicePrefix6 = 124
)

// cidrEntry is a valid CIDR of one of the network lists.
type cidrEntry struct {
	path   string // "networking.clusterNetwork[0]", "networking.machineCIDR", ...
	index  int    // index in its list
	prefix netip.Prefix
}

func (e cidrEntry) is6() bool { return e.prefix.Addr().Is6() }

// netInfo holds the valid entries of the network lists, in list order.
type netInfo struct {
	cluster, service, machine []cidrEntry
	// hostPrefix is, for each entry of cluster, its valid hostPrefix, or -1 (missing or refused).
	hostPrefix []int
	// machineField is "networking.machineNetwork" or "networking.machineCIDR".
	machineField string
}

func family(is6 bool) string {
	if is6 {
		return "IPv6"
	}
	return "IPv4"
}

// firstOf returns the first entry of the family, or nil.
func firstOf(es []cidrEntry, is6 bool) *cidrEntry {
	for i := range es {
		if es[i].is6() == is6 {
			return &es[i]
		}
	}
	return nil
}

func (ni *netInfo) dualStack() bool {
	return firstOf(ni.service, false) != nil && firstOf(ni.service, true) != nil
}

// cidr parses a network CIDR, reporting problems at field.
func (v *validator) cidr(field, s string) (netip.Prefix, bool) {
	if s == "" {
		v.addf(field, "required")
		return netip.Prefix{}, false
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		v.addf(field, "%s is not a valid CIDR: %s", quoteShort(s), prefixErrorReason(s, err))
	case p.Addr().Is4In6():
		v.addf(field, "%s: IPv4-mapped IPv6 CIDRs are not supported; use an IPv4 CIDR", p)
	case p.Masked() != p:
		v.addf(field, "%s has host bits set; did you mean %s?", p, p.Masked())
	default:
		return p, true
	}
	return netip.Prefix{}, false
}

// prefixErrorReason turns a netip.ParsePrefix error into a short reason.
func prefixErrorReason(s string, err error) string {
	msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("netip.ParsePrefix(%q): ", s))
	if strings.HasPrefix(msg, "ParseAddr(") {
		if i := strings.LastIndex(msg, "): "); i >= 0 {
			msg = msg[i+3:]
		}
	}
	if msg == "no '/'" {
		msg = "missing /prefix-length"
	}
	return shorten(msg)
}

func (v *validator) networking() *netInfo {
	ni := &netInfo{machineField: "networking.machineNetwork"}
	n := v.ic.Networking
	if n == nil {
		v.addf("networking.clusterNetwork", "required (at least one entry)")
		v.addf("networking.serviceNetwork", "required (at least one entry)")
		v.addf("networking.machineNetwork", "required (at least one entry)")
		return ni
	}
	builtin := v.ic.BuiltinPodNetwork()
	// Any plugin name is accepted, but a known name in the wrong case or
	// with spaces is a typo that would silently select an unknown plugin.
	if t, known := n.NetworkType, NetworkTypeOVNKubernetes; t != known && strings.EqualFold(strings.TrimSpace(t), known) {
		v.addf("networking.networkType", "unsupported value %s (did you mean %q?)", quoteShort(t), known)
	}
	// The installer refuses OpenShiftSDN on single-node OpenShift (since single node existed) and for every cluster
	// since 4.15, and Kuryr after 4.14, whatever the case (openshift/installer pkg/types/validation/installconfig.go
	// validateNetworking, strings.EqualFold).
	switch t := strings.TrimSpace(n.NetworkType); {
	case strings.EqualFold(t, NetworkTypeOpenShiftSDN):
		v.addf("networking.networkType", "%s is not supported: the installer refuses it for single-node OpenShift (and for every cluster since 4.15); use %s", quoteShort(n.NetworkType), NetworkTypeOVNKubernetes)
	case strings.EqualFold(t, "Kuryr"):
		v.addf("networking.networkType", "%s is not supported on OpenShift later than 4.14; use %s", quoteShort(n.NetworkType), NetworkTypeOVNKubernetes)
	}

	if len(n.ClusterNetwork) == 0 {
		v.addf("networking.clusterNetwork", "required (at least one entry)")
	}
	var ipv4HostPrefix int32
	for i, e := range n.ClusterNetwork {
		base := fmt.Sprintf("networking.clusterNetwork[%d]", i)
		p, ok := v.cidr(base+".cidr", e.CIDR)
		if !ok {
			if builtin && e.HostPrefix == 0 && !v.present(base+".hostPrefix") {
				v.addf(base+".hostPrefix", "required")
			}
			continue
		}
		ni.cluster = append(ni.cluster, cidrEntry{base, i, p})
		hp := v.hostPrefix(base, p, e.HostPrefix, builtin)
		ni.hostPrefix = append(ni.hostPrefix, hp)
		// One node subnet size for every IPv4 cluster network (IPv6 ones are /64 anyway): the installer's
		// validateClusterNetwork.
		if p.Addr().Is4() && hp >= 0 {
			if ipv4HostPrefix == 0 {
				ipv4HostPrefix = e.HostPrefix
			} else if e.HostPrefix != ipv4HostPrefix {
				v.addf(base+".hostPrefix", "%d, but an earlier IPv4 cluster network has %d: the host prefix must be the same for every IPv4 cluster network", e.HostPrefix, ipv4HostPrefix)
			}
		}
	}

	switch len(n.ServiceNetwork) {
	case 0:
		v.addf("networking.serviceNetwork", "required (at least one entry)")
	case 1, 2:
	default:
		v.addf("networking.serviceNetwork", "at most 2 entries (one IPv4 and one IPv6) are supported, got %d", len(n.ServiceNetwork))
	}
	for i, s := range n.ServiceNetwork {
		base := fmt.Sprintf("networking.serviceNetwork[%d]", i)
		p, ok := v.cidr(base, s)
		if !ok {
			continue
		}
		ni.service = append(ni.service, cidrEntry{base, i, p})
		minLen, maxLen := minServicePrefix4, maxServicePrefix4
		if p.Addr().Is6() {
			minLen, maxLen = minServicePrefix6, maxServicePrefix6
		}
		switch {
		case p.Bits() < minLen:
			v.addf(base, "%s is too large: kube-apiserver allows at most a /%d for %s", p, minLen, family(p.Addr().Is6()))
		case p.Bits() > maxLen:
			v.addf(base, "%s is too small: at least a /%d is needed (the DNS service uses the 10th address)", p, maxLen)
		}
	}
	if len(n.ServiceNetwork) == 2 && len(ni.service) == 2 && ni.service[0].is6() == ni.service[1].is6() {
		s0, s1 := ni.service[0], ni.service[1]
		v.addf(s1.path, "%s is %s like %s %s; two service networks must be one IPv4 and one IPv6 (dual stack)",
			s1.prefix, family(s1.is6()), s0.path, s0.prefix)
	}

	switch {
	case len(n.MachineNetwork) > 0:
		if n.MachineCIDR != "" {
			v.addf("networking.machineCIDR", "deprecated; must not be set together with networking.machineNetwork")
		}
		for i, e := range n.MachineNetwork {
			base := fmt.Sprintf("networking.machineNetwork[%d]", i)
			if p, ok := v.cidr(base+".cidr", e.CIDR); ok {
				ni.machine = append(ni.machine, cidrEntry{base, i, p})
			}
		}
	case n.MachineCIDR != "":
		ni.machineField = "networking.machineCIDR"
		if p, ok := v.cidr("networking.machineCIDR", n.MachineCIDR); ok {
			ni.machine = append(ni.machine, cidrEntry{"networking.machineCIDR", 0, p})
		}
	default:
		v.addf("networking.machineNetwork", "required (at least one entry)")
	}

	v.overlaps(ni)
	if builtin {
		v.ovnInternalSubnets(ni)
	}
	v.families(ni)
	return ni
}

// ovnInternalSubnets are OVN-Kubernetes' default join, transit and masquerade subnets (the network operator's
// defaults, which the install-config cannot change here), which no machine, service or cluster network may overlap:
// the installer's validateNetworkNotOverlapDefaultOVNSubnets (pkg/types/validation/installconfig.go).
var ovnInternalSubnets = []struct {
	kind   string
	prefix netip.Prefix
}{
	{"internal", netip.MustParsePrefix("100.64.0.0/16")},
	{"transit", netip.MustParsePrefix("100.88.0.0/16")},
	{"masquerade", netip.MustParsePrefix("169.254.0.0/17")},
	{"internal", netip.MustParsePrefix("fd98::/64")},
	{"transit", netip.MustParsePrefix("fd97::/64")},
	{"masquerade", netip.MustParsePrefix("fd69::/112")},
}

// OVNInternalSubnets are the subnets of ovnInternalSubnets, which no machine, service or cluster network may
// overlap.
func OVNInternalSubnets() []netip.Prefix {
	out := make([]netip.Prefix, len(ovnInternalSubnets))
	for i, o := range ovnInternalSubnets {
		out[i] = o.prefix
	}
	return out
}

func (v *validator) ovnInternalSubnets(ni *netInfo) {
	for _, list := range []struct {
		entries []cidrEntry
		suffix  string // the field of the entry that holds the CIDR
	}{{ni.machine, ""}, {ni.service, ""}, {ni.cluster, ".cidr"}} {
		for _, e := range list.entries {
			for _, o := range ovnInternalSubnets {
				if e.prefix.Overlaps(o.prefix) {
					v.addf(e.path+list.suffix, "%s must not overlap with OVNKubernetes default %s subnet %s", e.prefix, o.kind, o.prefix)
				}
			}
		}
	}
}

// hostPrefix checks the per-node subnet size of a cluster network and returns it, or -1 when it is missing or
// refused. The installer's rules (openshift/installer pkg/types/validation/installconfig.go validateClusterNetwork,
// pluginsUsingHostPrefix): hostPrefix is required for OVNKubernetes only (another plugin may leave it unset); when
// given, it is at least the network's own prefix length (a host prefix equal to it is one node subnet, the whole
// network), and 64 for an IPv6 network whatever the plugin.
func (v *validator) hostPrefix(base string, p netip.Prefix, hp int32, builtin bool) int {
	field := base + ".hostPrefix"
	missing := hp == 0 && !v.present(field)
	if missing && !builtin {
		return -1
	}
	if missing {
		v.addf(field, "required")
	}
	ok := !missing
	if p.Addr().Is6() {
		if builtin && p.Bits() > 64 {
			v.addf(base+".cidr", "%s is too small for OVNKubernetes, which gives each node a /64; use a prefix length of at most 64", p)
			ok = false
		}
		switch {
		case missing || hp == 64:
		case builtin:
			v.addf(field, "must be 64 for IPv6 with OVNKubernetes, got %d", hp)
			ok = false
		default:
			v.addf(field, "must be 64 for an IPv6 cluster network, got %d (the installer's rule for every network plugin)", hp)
			ok = false
		}
	} else {
		switch {
		case p.Bits() >= 32:
			v.addf(base+".cidr", "%s leaves no room for per-node subnets", p)
			ok = false
		case missing:
		case int(hp) < p.Bits() || hp > 32:
			v.addf(field, "%d does not fit in %s (must be between %d and %d)", hp, p, p.Bits(), 32)
			ok = false
		case builtin && hp > maxBuiltinHostPrefix4:
			// The built-in network hands each node's subnet to the CNI host-local IPAM plugin, which refuses a
			// range with fewer than two host bits (containernetworking/plugins
			// plugins/ipam/host-local/backend/allocator/range.go Canonicalize: "too small to allocate from") and
			// keeps the first address for the bridge's gateway and, in IPv4, the last as the broadcast address: a
			// /30 leaves one pod address.
			v.addf(field, "%d leaves no pod address: each node's subnet is its pods' host-local range, which needs at least a /%d (the gateway, the broadcast address and one pod)", hp, maxBuiltinHostPrefix4)
			ok = false
		}
	}
	if !ok {
		return -1
	}
	return int(hp)
}

// maxBuiltinHostPrefix4 is the longest IPv4 host prefix the built-in network's host-local IPAM allocates from.
const maxBuiltinHostPrefix4 = 30

// overlaps reports each overlapping pair of networks once, on the later one
// (in document order when the config was parsed; otherwise cluster, service,
// then machine networks).
func (v *validator) overlaps(ni *netInfo) {
	all := slices.Concat(ni.cluster, ni.service, ni.machine)
	if m := v.ic.meta; m != nil {
		slices.SortStableFunc(all, func(a, b cidrEntry) int {
			pa, _ := m.positionOf(a.path)
			pb, _ := m.positionOf(b.path)
			if c := cmp.Compare(pa.line, pb.line); c != 0 {
				return c
			}
			return cmp.Compare(pa.col, pb.col)
		})
	}
	for j := range all {
		for i := range j {
			if all[i].prefix.Overlaps(all[j].prefix) {
				v.addf(all[j].path, "%s overlaps %s %s", all[j].prefix, all[i].path, all[i].prefix)
			}
		}
	}
}

// families checks that cluster and service networks use the same families
// with the same primary, and that the machine networks cover them.
func (v *validator) families(ni *netInfo) {
	if len(ni.cluster) > 0 && len(ni.service) > 0 {
		same := true
		for _, is6 := range []bool{false, true} {
			c, s := firstOf(ni.cluster, is6), firstOf(ni.service, is6)
			switch {
			case c != nil && s == nil:
				same = false
				v.addf("networking.serviceNetwork", "no %s entry, but %s %s is %s; cluster and service networks must use the same IP families",
					family(is6), c.path, c.prefix, family(is6))
			case s != nil && c == nil:
				same = false
				v.addf("networking.clusterNetwork", "no %s entry, but %s %s is %s; cluster and service networks must use the same IP families",
					family(is6), s.path, s.prefix, family(is6))
			}
		}
		c0, s0 := ni.cluster[0], ni.service[0]
		if same && c0.index == 0 && s0.index == 0 && c0.is6() != s0.is6() {
			v.addf(c0.path, "%s is %s but %s %s is %s; the first entries must be of the same IP family (the primary family)",
				c0.prefix, family(c0.is6()), s0.path, s0.prefix, family(s0.is6()))
		}
	}
	if len(ni.machine) > 0 {
		for _, is6 := range []bool{false, true} {
			used := firstOf(ni.service, is6)
			if used == nil {
				used = firstOf(ni.cluster, is6)
			}
			if used != nil && firstOf(ni.machine, is6) == nil {
				v.addf(ni.machineField, "no %s machine network, but the cluster uses %s (%s %s); the node needs an address of each family",
					family(is6), family(is6), used.path, used.prefix)
			}
		}
	}
}

// nodeIPProblem says what makes ip unusable as a node address, or "".
func nodeIPProblem(ip netip.Addr) string {
	switch {
	case !ip.IsValid():
		return "is not a valid IP address"
	case ip.Zone() != "":
		return "has a zone; give the address without %zone"
	case ip.Is4In6():
		return fmt.Sprintf("is an IPv4-mapped IPv6 address; use %s", ip.Unmap())
	case ip.IsUnspecified():
		return "is the unspecified address"
	case ip.IsLoopback():
		return "is a loopback address"
	case ip.IsMulticast():
		return "is a multicast address"
	case ip.IsLinkLocalUnicast():
		return "is a link-local address"
	case documentation4.Contains(ip) || documentation6.Contains(ip):
		// kube-apiserver's etcd observer refuses an etcd member in these ranges (library-go
		// pkg/operator/configobserver/etcd/observe_etcd_endpoints.go), so kube-apiserver would get no etcd-servers.
		return "is in a documentation range (192.0.2.0/24, 2001:db8::/32), which kube-apiserver refuses as an etcd address"
	}
	return ""
}

var (
	documentation4 = netip.MustParsePrefix("192.0.2.0/24")
	documentation6 = netip.MustParsePrefix("2001:db8::/32")
)

const nodeIPFlag = NodeIPInput

// nodeIPs checks a node's addresses (the input field names them) against the networks.
func (v *validator) nodeIPs(nodeIPFlag string, ips []netip.Addr, ni *netInfo) {
	if len(ips) == 0 {
		return
	}
	if len(ips) > 2 {
		v.addf(nodeIPFlag, "at most two addresses (one IPv4 and one IPv6) are allowed, got %d", len(ips))
	}
	// placed: the addresses whose place in the networks is checked too: the good ones, and those in a documentation
	// range, a usable address otherwise, which may well be outside the machine network as well (every problem at once).
	var good, placed []netip.Addr
	for _, ip := range ips {
		if p := nodeIPProblem(ip); p == "" || documentation4.Contains(ip) || documentation6.Contains(ip) {
			placed = append(placed, ip)
		}
		if p := nodeIPProblem(ip); p != "" {
			if ip.IsValid() {
				v.addf(nodeIPFlag, "%s %s", ip, p)
			} else {
				v.addf(nodeIPFlag, "an empty address was given")
			}
			continue
		}
		good = append(good, ip)
	}
	if len(ips) == 2 && len(good) == 2 {
		switch {
		case good[0].Is6() == good[1].Is6():
			v.addf(nodeIPFlag, "%s and %s are the same family", good[0], good[1])
		case len(ni.service) > 0 && !ni.dualStack():
			v.addf(nodeIPFlag, "two addresses were given but the cluster is not dual stack (networking.serviceNetwork is %s only)",
				family(ni.service[0].is6()))
		}
	}
	if len(good) > 0 && good[0] == ips[0] && len(ni.service) > 0 && ni.service[0].index == 0 {
		if s0 := ni.service[0]; ips[0].Is6() != s0.is6() {
			v.addf(nodeIPFlag, "%s is %s but the cluster's primary IP family is %s (%s %s)",
				ips[0], family(ips[0].Is6()), family(s0.is6()), s0.path, s0.prefix)
		}
	}
	for _, ip := range placed {
		if len(ni.machine) > 0 && !slices.ContainsFunc(ni.machine, func(e cidrEntry) bool { return e.prefix.Contains(ip) }) {
			nets := make([]string, len(ni.machine))
			for i, e := range ni.machine {
				nets[i] = e.prefix.String()
			}
			where := "any " + ni.machineField
			if ni.machineField == "networking.machineCIDR" {
				where = ni.machineField
			}
			v.addf(nodeIPFlag, "%s is not in %s (%s)", ip, where, strings.Join(nets, ", "))
		}
		for _, e := range ni.machine {
			if which, instead := subnetOwnAddress(ip, e.prefix); which != "" {
				v.addf(nodeIPFlag, "%s is the %s of %s %s%s", ip, which, e.path, e.prefix, instead)
			}
		}
		for _, e := range slices.Concat(ni.cluster, ni.service) {
			if e.prefix.Contains(ip) {
				v.addf(nodeIPFlag, "%s is inside %s %s", ip, e.path, e.prefix)
			}
		}
	}
}

// subnetOwnAddress says which of the subnet's own addresses ip is (which), and what to give instead, or "" when it
// is none (or not in the subnet). The machine network is the node's subnet, and a subnet keeps addresses no host takes:
// IPv4's network address (host part all zeros) and broadcast address (all ones), RFC 919 and RFC 922, which a /31
// (RFC 3021) and a /32 do not have; IPv6's subnet-router anycast address (host part all zeros, RFC 4291 section
// 2.6.1), which every router on the link answers (Linux joins it on every interface once it forwards, as a node of
// a cluster does), and which a /127 (RFC 6164) and a /128 do not have. openshift-install checks only that an
// address is inside the machine network (pkg/types/validation/installconfig.go, for its VIPs and hosts): this
// rule is the subnet's own, refused here because an install to such an address fails on the node, not at the
// render.
func subnetOwnAddress(ip netip.Addr, subnet netip.Prefix) (which, instead string) {
	subnet = subnet.Masked()
	if !subnet.Contains(ip) || ip.BitLen()-subnet.Bits() < 2 {
		return "", ""
	}
	first, last := subnet.Addr(), lastOf(subnet)
	switch {
	case ip.Is6() && ip == first:
		return "subnet-router anycast address", fmt.Sprintf(" (its host part is all zeros), which every router on the link answers: give the node another address of %s", subnet)
	case ip.Is6():
		return "", ""
	case ip == first:
		which = "network address"
	case ip == last:
		which = "broadcast address"
	default:
		return "", ""
	}
	return which, fmt.Sprintf(", not a host's: give the node an address from %s to %s", first.Next(), last.Prev())
}

// lastOf is the last address of a (masked) prefix: its host part all ones.
func lastOf(p netip.Prefix) netip.Addr {
	a := p.Addr().AsSlice()
	for i := p.Bits(); i < len(a)*8; i++ {
		a[i/8] |= 0x80 >> (i % 8)
	}
	last, _ := netip.AddrFromSlice(a)
	return last
}

// ParseNodeIPs parses the --node-ip flag: one IP address, or two
// comma-separated addresses of different families (dual stack), the primary
// first. Problems are returned as an ErrorList with the field NodeIPInput.
func ParseNodeIPs(s string) ([]netip.Addr, error) { return ParseNodeIPsOf(nodeIPFlag, s) }

// ParseNodeIPsOf is ParseNodeIPs of another node's addresses, named field in the problems (a worker's).
func ParseNodeIPsOf(nodeIPFlag, s string) ([]netip.Addr, error) {
	var errs ErrorList
	add := func(format string, args ...any) {
		errs = append(errs, FieldError{Field: nodeIPFlag, Detail: fmt.Sprintf(format, args...)})
	}
	if strings.TrimSpace(s) == "" {
		add("required")
		return nil, errs
	}
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		add("at most two addresses (one IPv4 and one IPv6) are allowed, got %d", len(parts))
		return nil, errs
	}
	var ips []netip.Addr
	for _, part := range parts {
		part = strings.TrimSpace(part)
		ip, err := netip.ParseAddr(part)
		switch {
		case err != nil:
			add("%s is not an IP address", quoteShort(part))
		case ip.Zone() != "":
			add("%s has a zone; give the address without %%zone", quoteShort(part))
		case ip.Is4In6():
			add("%s is an IPv4-mapped IPv6 address; use %s", quoteShort(part), ip.Unmap())
		default:
			ips = append(ips, ip)
		}
	}
	if len(ips) == 2 && ips[0].Is6() == ips[1].Is6() {
		add("%s and %s are the same family", ips[0], ips[1])
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return ips, nil
}

// CheckNodeIPs checks another node's addresses (a worker's, named field in the problems) against the networks of a
// valid install-config, by the rules of the node's own (--node-ip): usable unicast addresses in a machine network,
// outside the cluster and service networks, of the cluster's families with the primary first.
func (ic *InstallConfig) CheckNodeIPs(field string, ips []netip.Addr) ErrorList {
	nets := (&validator{ic: ic}).networking() // the install-config is valid: its networks' problems are none
	v := &validator{ic: ic}
	v.nodeIPs(field, ips, nets)
	return v.errs
}
