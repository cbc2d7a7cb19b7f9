package installconfig

import (
	"crypto/x509"
	"fmt"
	"net/netip"

	"golang.org/x/crypto/ssh"
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

// noSSH is what a node without a usable SSH key loses. The installer takes an install-config without sshKey (it
// is optional in pkg/types/installconfig.go) and so does the render, but every way this project documents to apply
// renew's updates and to recover a node is ssh as core; RHCOS gives core no password (no console login), and the
// install-config has no field that would set one.
const noSSH = ": nobody can log in to the node as core (it has no password), and renew's updates reach the node over ssh " +
	"(aio-update apply, and aio-update recover after a power-off past the earliest expiry): add your public key to sshKey " +
	"and render again before you install (docs/renew.md, \"Without SSH\")"

// Warnings lists what is accepted but deserves attention, as
// "field: detail" lines: sshKey lines that look like keys but whose key data
// does not parse (they are installed as written), no usable SSH key at all (noSSH),
// and deprecated settings.
func (ic *InstallConfig) Warnings() []string {
	var out []string
	lines, usable := sshKeyLines(ic.SSHKey), 0
	for _, l := range lines {
		if _, w := checkSSHKeyLine(l.text); w != "" {
			out = append(out, fmt.Sprintf("sshKey: line %d: %s", l.number, w))
		} else if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(l.text)); err == nil {
			usable++
		}
	}
	switch {
	case len(lines) == 0:
		out = append(out, "sshKey: none given"+noSSH)
	case usable == 0:
		out = append(out, "sshKey: no key sshd can use (no line's key data parses)"+noSSH)
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

// BuiltinPodNetwork reports whether the render brings the cluster's pod network itself: networking.networkType is
// OVNKubernetes, the installer's default, or not given. The built-in network stands in for OVN-Kubernetes, which
// needs the network operator; any other network type (Calico, Cilium, ...) is the user's own, installed on top, and
// the render brings none (OpenShiftSDN is refused at validation, as the installer refuses it).
func (ic *InstallConfig) BuiltinPodNetwork() bool {
	return ic.Networking == nil || ic.Networking.NetworkType == "" || ic.Networking.NetworkType == NetworkTypeOVNKubernetes
}
