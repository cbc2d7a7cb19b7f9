package podnetwork

import (
	"fmt"
	"math/big"
	"net/netip"

	"github.com/render-static/render-static/pkg/installconfig"
)

// TEMPORARY: stand-ins for installconfig's BuiltinPodNetwork and PodCIDRs (branch i37-validate), removed once it
// is merged.

func builtinPodNetwork(ic *installconfig.InstallConfig) bool {
	return ic.Networking == nil || ic.Networking.NetworkType == "" || ic.Networking.NetworkType == installconfig.NetworkTypeOVNKubernetes
}

func podCIDRs(ic *installconfig.InstallConfig, i int) ([]netip.Prefix, error) {
	var out []netip.Prefix
	seen := map[bool]bool{}
	for _, e := range ic.Networking.ClusterNetwork {
		p, err := netip.ParsePrefix(e.CIDR)
		if err != nil {
			return nil, err
		}
		p = p.Masked()
		if seen[p.Addr().Is6()] {
			continue
		}
		seen[p.Addr().Is6()] = true
		bits, hp := p.Addr().BitLen(), int(e.HostPrefix)
		if hp < p.Bits() || hp > bits || big.NewInt(int64(i)).BitLen() > hp-p.Bits() {
			return nil, fmt.Errorf("no room for node %d in %s with hostPrefix %d", i, p, hp)
		}
		a := p.Addr().AsSlice()
		v := new(big.Int).SetBytes(a)
		v.Add(v, new(big.Int).Lsh(big.NewInt(int64(i)), uint(bits-hp)))
		b := v.FillBytes(make([]byte, len(a)))
		addr, _ := netip.AddrFromSlice(b)
		out = append(out, netip.PrefixFrom(addr, hp))
	}
	return out, nil
}
