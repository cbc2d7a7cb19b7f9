package installconfig

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// withNets sets the cluster and service networks (a machine network per family, apart from them).
func withNets(ic *InstallConfig, cluster []ClusterNetworkEntry, service ...string) *InstallConfig {
	ic.Networking.ClusterNetwork, ic.Networking.ServiceNetwork = cluster, service
	ic.Networking.MachineNetwork = []MachineNetworkEntry{{CIDR: "192.168.126.0/24"}, {CIDR: "fd00::/64"}}
	return ic
}

// TestPodCIDRs: node i's pod CIDRs are the i-th subnets of prefix hostPrefix of the first cluster network of each
// family, the primary family (the first service network's) first (design of issue 37, item 1).
func TestPodCIDRs(t *testing.T) {
	v4 := []ClusterNetworkEntry{{CIDR: "10.128.0.0/14", HostPrefix: 23}, {CIDR: "10.0.0.0/16", HostPrefix: 23}}
	v6 := []ClusterNetworkEntry{{CIDR: "fd01::/48", HostPrefix: 64}, {CIDR: "fd03::/48", HostPrefix: 64}}
	tests := []struct {
		name  string
		ic    *InstallConfig
		index int
		want  []string
		err   string
	}{
		{name: "IPv4 control plane", ic: withNets(baseConfig(), v4, "172.30.0.0/16"), index: 0, want: []string{"10.128.0.0/23"}},
		{name: "IPv4 node 1", ic: withNets(baseConfig(), v4, "172.30.0.0/16"), index: 1, want: []string{"10.128.2.0/23"}},
		{name: "IPv4 last node", ic: withNets(baseConfig(), v4, "172.30.0.0/16"), index: 511, want: []string{"10.131.254.0/23"}},
		{name: "IPv4 out of room", ic: withNets(baseConfig(), v4, "172.30.0.0/16"), index: 512,
			err: "pod CIDRs: networking.clusterNetwork[0] 10.128.0.0/14 with hostPrefix 23 has room for 512 node subnets: none for node 512 (counting from 0, the control-plane node)"},
		{name: "IPv6", ic: withNets(baseConfig(), v6, "fd02::/112"), index: 3, want: []string{"fd01:0:0:3::/64"}},
		{name: "IPv6 carries into the next byte", ic: withNets(baseConfig(), v6, "fd02::/112"), index: 0x1ff, want: []string{"fd01:0:0:1ff::/64"}},
		{name: "IPv6 out of room", ic: withNets(baseConfig(), []ClusterNetworkEntry{{CIDR: "fd01::/63", HostPrefix: 64}}, "fd02::/112"), index: 2,
			err: "pod CIDRs: networking.clusterNetwork[0] fd01::/63 with hostPrefix 64 has room for 2 node subnets: none for node 2 (counting from 0, the control-plane node)"},
		{name: "dual stack, IPv4 primary", ic: withNets(baseConfig(), append(append([]ClusterNetworkEntry{}, v4...), v6...), "172.30.0.0/16", "fd02::/112"),
			index: 2, want: []string{"10.128.4.0/23", "fd01:0:0:2::/64"}},
		{name: "dual stack, IPv6 primary", ic: withNets(baseConfig(), append(append([]ClusterNetworkEntry{}, v4...), v6...), "fd02::/112", "172.30.0.0/16"),
			index: 2, want: []string{"fd01:0:0:2::/64", "10.128.4.0/23"}},
		{name: "dual stack, out of room in one family", ic: withNets(baseConfig(),
			[]ClusterNetworkEntry{{CIDR: "10.128.0.0/14", HostPrefix: 23}, {CIDR: "fd01::/64", HostPrefix: 64}}, "172.30.0.0/16", "fd02::/112"), index: 1,
			err: "pod CIDRs: networking.clusterNetwork[1] fd01::/64 with hostPrefix 64 has room for 1 node subnet: none for node 1 (counting from 0, the control-plane node)"},
		{name: "negative index", ic: withNets(baseConfig(), v4, "172.30.0.0/16"), index: -1, err: "pod CIDRs: node index -1 is negative"},
		{name: "no host prefix", ic: withNets(baseConfig(), []ClusterNetworkEntry{{CIDR: "10.128.0.0/14"}}, "172.30.0.0/16"), index: 0,
			err: "pod CIDRs: networking.clusterNetwork[0].hostPrefix is not a valid host prefix for 10.128.0.0/14"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.ic.PodCIDRs(tc.index)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("PodCIDRs(%d) = %v, %v; want error %q", tc.index, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("PodCIDRs(%d): %v", tc.index, err)
			}
			if want := mustPrefixes(tc.want...); !reflect.DeepEqual(got, want) {
				t.Errorf("PodCIDRs(%d) = %v, want %v", tc.index, got, want)
			}
		})
	}
}

// TestPodCIDRsDistinct: the node subnets PodCIDRs hands out do not overlap and stay in their cluster network.
func TestPodCIDRsDistinct(t *testing.T) {
	ic := withNets(baseConfig(), []ClusterNetworkEntry{{CIDR: "10.128.0.0/20", HostPrefix: 24}, {CIDR: "fd01::/60", HostPrefix: 64}}, "172.30.0.0/16", "fd02::/112")
	var seen []netip.Prefix
	for i := range ic.NodeCapacity() {
		got, err := ic.PodCIDRs(int(i))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range got {
			if !slicesContainsPrefix(ic.ClusterCIDRs(), p) {
				t.Errorf("node %d: %s outside the cluster networks", i, p)
			}
			for _, q := range seen {
				if p.Overlaps(q) {
					t.Errorf("node %d: %s overlaps %s", i, p, q)
				}
			}
			seen = append(seen, p)
		}
	}
	if len(seen) != 32 {
		t.Errorf("%d node subnets, want 16 of each family", len(seen))
	}
}

func slicesContainsPrefix(nets []netip.Prefix, p netip.Prefix) bool {
	for _, n := range nets {
		if n.Bits() <= p.Bits() && n.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// TestNodeCapacity: the fewest node subnets of the first cluster network of any family.
func TestNodeCapacity(t *testing.T) {
	for _, tc := range []struct {
		cluster []ClusterNetworkEntry
		service []string
		want    int64
	}{
		{[]ClusterNetworkEntry{{CIDR: "10.128.0.0/14", HostPrefix: 23}}, []string{"172.30.0.0/16"}, 512},
		{[]ClusterNetworkEntry{{CIDR: "10.128.0.0/23", HostPrefix: 23}, {CIDR: "10.0.0.0/8", HostPrefix: 23}}, []string{"172.30.0.0/16"}, 1},
		{[]ClusterNetworkEntry{{CIDR: "fd01::/48", HostPrefix: 64}}, []string{"fd02::/112"}, 65536},
		{[]ClusterNetworkEntry{{CIDR: "2000::/4", HostPrefix: 64}}, []string{"fd02::/112"}, 1 << 60},
		{[]ClusterNetworkEntry{{CIDR: "::/1", HostPrefix: 64}}, []string{"fd02::/112"}, 1 << 62}, // 2^63, at most 2^62
		{[]ClusterNetworkEntry{{CIDR: "10.128.0.0/14", HostPrefix: 23}, {CIDR: "fd01::/62", HostPrefix: 64}}, []string{"172.30.0.0/16", "fd02::/112"}, 4},
		{[]ClusterNetworkEntry{{CIDR: "10.128.0.0/14"}}, []string{"172.30.0.0/16"}, 0},
	} {
		ic := withNets(baseConfig(), tc.cluster, tc.service...)
		if got := ic.NodeCapacity(); got != tc.want {
			t.Errorf("%v: NodeCapacity() = %d, want %d", tc.cluster, got, tc.want)
		}
	}
}

// TestCheckNodeRoom: the rule render-static worker applies to a cluster with a day-2 worker added, by the rule of
// Validate's day-1 nodes.
func TestCheckNodeRoom(t *testing.T) {
	ic := withNets(baseConfig(), []ClusterNetworkEntry{{CIDR: "10.128.0.0/22", HostPrefix: 24}}, "172.30.0.0/16")
	if errs := ic.CheckNodeRoom(4, "the control-plane node and 3 workers"); errs != nil {
		t.Errorf("4 nodes in 4 subnets: %v", errs)
	}
	errs := ic.CheckNodeRoom(5, "the control-plane node and 4 workers, worker-4 added by render-static worker")
	want := "networking.clusterNetwork[0].hostPrefix: 10.128.0.0/22 with hostPrefix 24 has room for 4 node subnets, but the render names 5 (the control-plane node and 4 workers, worker-4 added by render-static worker)"
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), want) {
		t.Errorf("5 nodes in 4 subnets: %v, want %q...", errs, want)
	}
	ic.Networking.NetworkType = "Calico"
	if errs := ic.CheckNodeRoom(5, "five"); errs != nil {
		t.Errorf("another network plugin: %v, want nothing (its own allocation)", errs)
	}
}
