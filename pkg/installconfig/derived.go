package installconfig

import (
	"crypto/x509"
	"fmt"
	"net/netip"
)

// The derived values below are meaningful only after a successful Validate;
// on other configs they do not panic, and skip what does not parse.

// ClusterDomain is "<metadata.name>.<baseDomain>".
func (ic *InstallConfig) ClusterDomain() string {
	return ic.Metadata.Name + "." + ic.BaseDomain
}

// APIServerURL is "https://api.<ClusterDomain>:6443".
func (ic *InstallConfig) APIServerURL() string {
	return "https://api." + ic.ClusterDomain() + ":6443"
}

// APIServerInternalURL is "https://api-int.<ClusterDomain>:6443".
func (ic *InstallConfig) APIServerInternalURL() string {
	return "https://api-int." + ic.ClusterDomain() + ":6443"
}

func parsePrefixes(ss []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ServiceCIDRs are networking.serviceNetwork, in order.
func (ic *InstallConfig) ServiceCIDRs() []netip.Prefix {
	if ic.Networking == nil {
		return nil
	}
	return parsePrefixes(ic.Networking.ServiceNetwork)
}

// ClusterCIDRs are the CIDRs of networking.clusterNetwork, in order (the
// host prefixes are in ic.Networking.ClusterNetwork).
func (ic *InstallConfig) ClusterCIDRs() []netip.Prefix {
	if ic.Networking == nil {
		return nil
	}
	ss := make([]string, len(ic.Networking.ClusterNetwork))
	for i, e := range ic.Networking.ClusterNetwork {
		ss[i] = e.CIDR
	}
	return parsePrefixes(ss)
}

// MachineCIDRs are the CIDRs of networking.machineNetwork, in order, or the
// deprecated networking.machineCIDR when machineNetwork is empty.
func (ic *InstallConfig) MachineCIDRs() []netip.Prefix {
	n := ic.Networking
	if n == nil {
		return nil
	}
	if len(n.MachineNetwork) == 0 {
		if n.MachineCIDR == "" {
			return nil
		}
		return parsePrefixes([]string{n.MachineCIDR})
	}
	ss := make([]string, len(n.MachineNetwork))
	for i, e := range n.MachineNetwork {
		ss[i] = e.CIDR
	}
	return parsePrefixes(ss)
}

// ServiceIPs are the first usable address of each service CIDR, in order
// (172.30.0.0/16 -> 172.30.0.1, fd02::/112 -> fd02::1): the kubernetes
// service's cluster IPs.
func (ic *InstallConfig) ServiceIPs() []netip.Addr {
	var out []netip.Addr
	for _, p := range ic.ServiceCIDRs() {
		out = append(out, p.Masked().Addr().Next())
	}
	return out
}

// IPv6Primary reports whether the first service network is IPv6.
func (ic *InstallConfig) IPv6Primary() bool {
	s := ic.ServiceCIDRs()
	return len(s) > 0 && s[0].Addr().Is6()
}

// DualStack reports whether the service networks have both an IPv4 and an
// IPv6 entry.
func (ic *InstallConfig) DualStack() bool {
	var has4, has6 bool
	for _, p := range ic.ServiceCIDRs() {
		if p.Addr().Is6() {
			has6 = true
		} else {
			has4 = true
		}
	}
	return has4 && has6
}

// SSHKeys splits sshKey into its keys: the non-empty lines, trimmed, without
// comment lines (starting with '#').
func (ic *InstallConfig) SSHKeys() []string {
	var out []string
	for _, l := range sshKeyLines(ic.SSHKey) {
		out = append(out, l.text)
	}
	return out
}

// TrustBundle returns the certificates of additionalTrustBundle, in order.
func (ic *InstallConfig) TrustBundle() []*x509.Certificate {
	certs, _ := parseTrustBundle(ic.AdditionalTrustBundle)
	return certs
}

// Warnings lists what is accepted but deserves attention, as
// "field: detail" lines: sshKey lines that look like keys but whose key data
// does not parse (they are installed as written), and deprecated settings.
func (ic *InstallConfig) Warnings() []string {
	var out []string
	for _, l := range sshKeyLines(ic.SSHKey) {
		if _, w := checkSSHKeyLine(l.text); w != "" {
			out = append(out, fmt.Sprintf("sshKey: line %d: %s", l.number, w))
		}
	}
	if n := ic.Networking; n != nil {
		if n.MachineCIDR != "" && len(n.MachineNetwork) == 0 {
			out = append(out, "networking.machineCIDR: deprecated; use networking.machineNetwork")
		}
	}
	if len(ic.ImageContentSources) > 0 {
		out = append(out, "imageContentSources: deprecated; use imageDigestSources")
	}
	return out
}

// DefaultComputeReplicas is the installer's number of workers of a compute pool that does not say, and of the
// default pool it adds when the install-config has none (openshift/installer pkg/types/defaults/installconfig.go,
// machinepools.go).
const DefaultComputeReplicas = 3

// ComputeReplicas is the number of workers the install-config asks for with the control plane: every compute
// pool's replicas, with the installer's defaults (DefaultComputeReplicas for a pool that does not say, one such
// pool when compute is not given).
func (ic *InstallConfig) ComputeReplicas() int64 {
	if len(ic.Compute) == 0 {
		return DefaultComputeReplicas
	}
	var n int64
	for _, p := range ic.Compute {
		if p.Replicas == nil {
			n += DefaultComputeReplicas
		} else if *p.Replicas > 0 {
			n += *p.Replicas
		}
	}
	return n
}

// Architecture is the cluster's architecture: the control plane's, the installer's amd64 when not given (a compute
// pool of another architecture is refused, validate.go machinePools).
func (ic *InstallConfig) Architecture() string {
	if ic.ControlPlane != nil {
		return arch(ic.ControlPlane)
	}
	return "amd64"
}
