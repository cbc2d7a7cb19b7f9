package installconfig

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// baseConfig is the project's sample, built in code (no parse positions).
func baseConfig() *InstallConfig {
	return &InstallConfig{
		APIVersion: "v1",
		BaseDomain: "example.com",
		Metadata:   ObjectMeta{Name: "sno"},
		Compute:    []MachinePool{{Name: "worker", Replicas: ptr(int64(0))}},
		ControlPlane: &MachinePool{
			Name: "master", Replicas: ptr(int64(1)),
		},
		Networking: &Networking{
			NetworkType:    "OVNKubernetes",
			ClusterNetwork: []ClusterNetworkEntry{{CIDR: "10.128.0.0/14", HostPrefix: 23}},
			ServiceNetwork: []string{"172.30.0.0/16"},
			MachineNetwork: []MachineNetworkEntry{{CIDR: "192.168.126.0/24"}},
		},
		Platform:         Platform{None: &NonePlatform{}},
		BootstrapInPlace: &BootstrapInPlace{InstallationDisk: "/dev/vda"},
		PullSecret:       `{"auths":{"example.com":{"auth":"Zm9vOmJhcg=="}}}`,
		SSHKey:           "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample research@example",
	}
}

const realKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHJFOcCtCt226zz6sjsn6+zA1fs+LRtYzQ7fQsAbGuae test@render-static"

func TestValidate(t *testing.T) {
	v4node := []netip.Addr{netip.MustParseAddr("192.168.126.10")}
	dualNet := func(ic *InstallConfig) {
		n := ic.Networking
		n.ClusterNetwork = append(n.ClusterNetwork, ClusterNetworkEntry{CIDR: "fd01::/48", HostPrefix: 64})
		n.ServiceNetwork = append(n.ServiceNetwork, "fd02::/112")
		n.MachineNetwork = append(n.MachineNetwork, MachineNetworkEntry{CIDR: "fd00::/64"})
	}
	tests := []struct {
		name    string
		mutate  func(*InstallConfig)
		nodeIPs []netip.Addr
		want    []string
	}{
		{name: "sample is valid", mutate: func(*InstallConfig) {}, nodeIPs: v4node},
		{name: "no node IPs skips node checks", mutate: func(*InstallConfig) {}},
		{name: "dual stack", mutate: dualNet, nodeIPs: []netip.Addr{netip.MustParseAddr("192.168.126.10"), netip.MustParseAddr("fd00::10")}},
		{name: "dual stack with one node IP", mutate: dualNet, nodeIPs: v4node},
		{name: "other network types", mutate: func(ic *InstallConfig) {
			ic.Networking.NetworkType = "Cilium"
			ic.Networking.ClusterNetwork = append(ic.Networking.ClusterNetwork, ClusterNetworkEntry{CIDR: "fd01::/48", HostPrefix: 64})
			ic.Networking.ServiceNetwork = append(ic.Networking.ServiceNetwork, "fd02::/112")
			ic.Networking.MachineNetwork = append(ic.Networking.MachineNetwork, MachineNetworkEntry{CIDR: "fd00::/64"})
		}},
		// The installer requires hostPrefix for OVNKubernetes only (pluginsUsingHostPrefix), and allows it up to
		// the address length with another plugin, which allocates by its own rules.
		{name: "another plugin: hostPrefix optional, and up to /32", mutate: func(ic *InstallConfig) {
			ic.Networking.NetworkType = "Calico"
			ic.Compute[0].Replicas = ptr(int64(5))
			ic.Networking.ClusterNetwork = []ClusterNetworkEntry{{CIDR: "10.128.0.0/14"}, {CIDR: "10.0.0.0/16", HostPrefix: 32}, {CIDR: "fd01::/48"}}
			ic.Networking.ServiceNetwork = append(ic.Networking.ServiceNetwork, "fd02::/112")
			ic.Networking.MachineNetwork = append(ic.Networking.MachineNetwork, MachineNetworkEntry{CIDR: "fd00::/64"})
		}},
		// The installer: an IPv6 hostPrefix, when given, is 64 whatever the plugin (validateClusterNetwork).
		{name: "another plugin: IPv6 hostPrefix not 64", mutate: func(ic *InstallConfig) {
			ic.Networking.NetworkType = "Cilium"
			ic.Networking.ClusterNetwork = append(ic.Networking.ClusterNetwork, ClusterNetworkEntry{CIDR: "fd01::/48", HostPrefix: 56})
			ic.Networking.ServiceNetwork = append(ic.Networking.ServiceNetwork, "fd02::/112")
			ic.Networking.MachineNetwork = append(ic.Networking.MachineNetwork, MachineNetworkEntry{CIDR: "fd00::/64"})
		}, want: []string{"networking.clusterNetwork[1].hostPrefix: must be 64 for an IPv6 cluster network, got 56 (the installer's rule for every network plugin)"}},
		{name: "everything optional, valid", mutate: func(ic *InstallConfig) {
			ic.Kind = "InstallConfig"
			ic.SSHKey = realKey + "\n\n# comment\r\n" + realKey + "\n"
			ic.Proxy = &Proxy{HTTPProxy: "http://p.example.com", HTTPSProxy: "https://p.example.com:8443", NoProxy: "*"}
			ic.ImageDigestSources = []ImageDigestSource{{Source: "quay.io/a/b", Mirrors: []string{"localhost/a", "[fd00::1]:5000/a/b_c", "m.example.com:443/x/y__z/w-v.u"}}}
			ic.Publish, ic.CPUPartitioningMode, ic.AdditionalTrustBundlePolicy = "External", "AllNodes", "Always"
			ic.FeatureSet, ic.FeatureGates = "CustomNoUpgrade", []string{"A=true", "B=false"}
			ic.Capabilities = &Capabilities{BaselineCapabilitySet: "vCurrent", AdditionalEnabledCapabilities: []string{"marketplace", "openshift-samples", "marketplace"}}
			ic.ControlPlane.Architecture, ic.ControlPlane.Hyperthreading = "s390x", "Enabled"
			ic.BootstrapInPlace.InstallationDisk = "/dev/disk/by-path/pci-0000:00:1f.2-ata-1"
		}, nodeIPs: v4node},
		{name: "nothing set", mutate: func(ic *InstallConfig) { *ic = InstallConfig{} }, want: []string{
			"apiVersion: required; must be v1",
			"metadata.name: required",
			"baseDomain: required",
			"networking.clusterNetwork: required (at least one entry)",
			"networking.serviceNetwork: required (at least one entry)",
			"networking.machineNetwork: required (at least one entry)",
			"controlPlane.replicas: required; must be 1 for single node",
			`platform: required; must be "none: {}" for single-node static rendering`,
			"pullSecret: required",
		}},
		{name: "names", mutate: func(ic *InstallConfig) {
			ic.Metadata.Name = strings.Repeat("a", 64)
			ic.BaseDomain = "example.com."
			ic.Kind = "Config"
			ic.ControlPlane.Name = "Master"
			ic.Compute = append(ic.Compute, MachinePool{Name: "worker", Replicas: ptr(int64(0))}, MachinePool{Name: "infra", Replicas: ptr(int64(0))})
		}, want: []string{
			`kind: unsupported value "Config"; must be InstallConfig`,
			`metadata.name: "` + strings.Repeat("a", 64) + `" is not a valid DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)`,
			`baseDomain: "example.com." must not end with a dot`,
			`controlPlane.name: unsupported value "Master"; must be master (did you mean "master"?)`,
			`compute[1].name: duplicate pool name "worker"`,
			`compute[2].name: unsupported value "infra"; must be worker`,
		}},
		{name: "host name too long", mutate: func(ic *InstallConfig) {
			ic.Metadata.Name = strings.Repeat("a", 54)
			ic.BaseDomain = strings.Repeat(strings.Repeat("b", 60)+".", 3) + "example.co.uk.example.com"
		}, want: []string{"baseDomain: api-int.<metadata.name>.<baseDomain> would be 271 characters; host names must be at most 253"}},
		{name: "cluster name longer than the installer allows", mutate: func(ic *InstallConfig) { ic.Metadata.Name = strings.Repeat("a", 55) },
			want: []string{`metadata.name: "` + strings.Repeat("a", 55) + `" is 55 characters; at most 54 (the DNS record *.apps.<name> is written \052.apps.<name>, and a label holds 63)`}},
		{name: "edge pool, another architecture", mutate: func(ic *InstallConfig) {
			ic.Compute = []MachinePool{{Name: "edge", Replicas: ptr(int64(0)), Architecture: "arm64"}}
		}, want: []string{
			`compute[0].name: unsupported value "edge"; must be worker`,
			"compute[0].architecture: arm64, but the control plane is amd64: a compute pool's architecture must match the control plane's",
		}},
		{name: "publish Internal", mutate: func(ic *InstallConfig) { ic.Publish = "Internal" },
			want: []string{`publish: Internal publish strategy is not supported on "none" platform; use External`}},
		{name: "capabilities: Ingress, marketplace, baseline", mutate: func(ic *InstallConfig) {
			ic.Capabilities = &Capabilities{BaselineCapabilitySet: "None", AdditionalEnabledCapabilities: []string{"marketplace"}}
		}, want: []string{
			"capabilities.additionalEnabledCapabilities: the marketplace capability requires the OperatorLifecycleManager capability",
			"capabilities: the Ingress capability is required (baseline None does not hold it: add Ingress to additionalEnabledCapabilities)",
		}},
		{name: "capabilities: v4.15 has no Ingress", mutate: func(ic *InstallConfig) {
			ic.Capabilities = &Capabilities{BaselineCapabilitySet: "v4.15"}
		}, want: []string{"capabilities: the Ingress capability is required (baseline v4.15 does not hold it: add Ingress to additionalEnabledCapabilities)"}},
		{name: "capabilities: None with Ingress", mutate: func(ic *InstallConfig) {
			ic.Capabilities = &Capabilities{BaselineCapabilitySet: "None", AdditionalEnabledCapabilities: []string{"Ingress"}}
		}},
		{name: "capabilities without a baseline", mutate: func(ic *InstallConfig) {
			ic.Capabilities = &Capabilities{AdditionalEnabledCapabilities: []string{"Ingress"}}
		}, want: []string{`capabilities.baselineCapabilitySet: unsupported value ""; must be one of None, v4.11, v4.12, v4.13, v4.14, v4.15, v4.16, v4.17, v4.18, vCurrent`}},
		{name: "cidr syntax", mutate: func(ic *InstallConfig) {
			n := ic.Networking
			n.ClusterNetwork = []ClusterNetworkEntry{{CIDR: "10.128.0/14", HostPrefix: 23}, {CIDR: "", HostPrefix: 0}, {CIDR: "10.0.0.0"}}
			n.ServiceNetwork = []string{"::ffff:172.30.0.0/112"}
			n.MachineNetwork = []MachineNetworkEntry{{CIDR: "192.168.126.0/33"}, {CIDR: "x/8"}}
		}, want: []string{
			`networking.clusterNetwork[0].cidr: "10.128.0/14" is not a valid CIDR: IPv4 address too short`,
			"networking.clusterNetwork[1].cidr: required",
			"networking.clusterNetwork[1].hostPrefix: required",
			`networking.clusterNetwork[2].cidr: "10.0.0.0" is not a valid CIDR: missing /prefix-length`,
			"networking.clusterNetwork[2].hostPrefix: required",
			"networking.serviceNetwork[0]: ::ffff:172.30.0.0/112: IPv4-mapped IPv6 CIDRs are not supported; use an IPv4 CIDR",
			`networking.machineNetwork[0].cidr: "192.168.126.0/33" is not a valid CIDR: prefix length out of range`,
			`networking.machineNetwork[1].cidr: "x/8" is not a valid CIDR: unable to parse IP`,
		}},
		{name: "host prefix", mutate: func(ic *InstallConfig) {
			ic.Networking.ClusterNetwork = []ClusterNetworkEntry{{CIDR: "10.128.0.0/14"}, {CIDR: "10.0.0.0/16", HostPrefix: -1}, {CIDR: "10.1.0.0/16", HostPrefix: 32}}
		}, want: []string{
			"networking.clusterNetwork[0].hostPrefix: required",
			"networking.clusterNetwork[1].hostPrefix: -1 does not fit in 10.0.0.0/16 (must be between 16 and 32)",
			"networking.clusterNetwork[2].hostPrefix: 32 leaves no pod address: each node's subnet is its pods' host-local range, which needs at least a /30 (the gateway, the broadcast address and one pod)",
		}},
		// host-local allocates from a /30 at the smallest (containernetworking/plugins range.go Canonicalize).
		{name: "host prefix: /30 is the smallest node subnet", mutate: func(ic *InstallConfig) {
			ic.Networking.ClusterNetwork = []ClusterNetworkEntry{{CIDR: "10.128.0.0/14", HostPrefix: 30}, {CIDR: "10.0.0.0/16", HostPrefix: 31}}
		}, want: []string{
			"networking.clusterNetwork[1].hostPrefix: 31 leaves no pod address: each node's subnet is its pods' host-local range, which needs at least a /30 (the gateway, the broadcast address and one pod)",
		}},
		{name: "node room: a single node fits a host prefix equal to the cidr's", mutate: func(ic *InstallConfig) {
			ic.Networking.ClusterNetwork = []ClusterNetworkEntry{{CIDR: "10.128.0.0/23", HostPrefix: 23}}
		}},
		{name: "node room: the day-1 workers, both families, the first network of each", mutate: func(ic *InstallConfig) {
			dualNet(ic)
			ic.Compute[0].Replicas = ptr(int64(2))
			ic.Networking.ClusterNetwork = []ClusterNetworkEntry{
				{CIDR: "10.128.0.0/23", HostPrefix: 24}, {CIDR: "fd01::/63", HostPrefix: 64}, {CIDR: "10.132.0.0/14", HostPrefix: 24}, {CIDR: "fd03::/48", HostPrefix: 64}}
		}, want: []string{
			"networking.clusterNetwork[0].hostPrefix: 10.128.0.0/23 with hostPrefix 24 has room for 2 node subnets, but the render names 3 (the control-plane node and 2 workers): each node takes one subnet of this prefix length from the first cluster network of its family; use a shorter hostPrefix or a larger cidr",
			"networking.clusterNetwork[1].hostPrefix: fd01::/63 with hostPrefix 64 has room for 2 node subnets, but the render names 3 (the control-plane node and 2 workers): each node takes one subnet of this prefix length from the first cluster network of its family; use a shorter hostPrefix or a larger cidr",
		}},
		{name: "node room: the installer's default pool of 3 workers", mutate: func(ic *InstallConfig) {
			ic.Compute = nil
			ic.Networking.ClusterNetwork = []ClusterNetworkEntry{{CIDR: "10.128.0.0/22", HostPrefix: 24}}
		}},
		{name: "node room: one more than the default pool", mutate: func(ic *InstallConfig) {
			ic.Compute = []MachinePool{{Name: "worker", Replicas: ptr(int64(4))}}
			ic.Networking.ClusterNetwork = []ClusterNetworkEntry{{CIDR: "10.128.0.0/22", HostPrefix: 24}}
		}, want: []string{
			"networking.clusterNetwork[0].hostPrefix: 10.128.0.0/22 with hostPrefix 24 has room for 4 node subnets, but the render names 5 (the control-plane node and 4 workers): each node takes one subnet of this prefix length from the first cluster network of its family; use a shorter hostPrefix or a larger cidr",
		}},
		{name: "node room: not the render's to check with another plugin", mutate: func(ic *InstallConfig) {
			ic.Networking.NetworkType = "Calico"
			ic.Compute[0].Replicas = ptr(int64(2))
			ic.Networking.ClusterNetwork = []ClusterNetworkEntry{{CIDR: "10.128.0.0/24", HostPrefix: 24}}
		}},
		{name: "service network sizes", mutate: func(ic *InstallConfig) {
			ic.Networking.ServiceNetwork = []string{"172.30.0.0/29", "fd02::/125"}
			ic.Networking.ClusterNetwork = append(ic.Networking.ClusterNetwork, ClusterNetworkEntry{CIDR: "fd01::/48", HostPrefix: 64})
			ic.Networking.MachineNetwork = append(ic.Networking.MachineNetwork, MachineNetworkEntry{CIDR: "fd00::/64"})
		}, want: []string{
			"networking.serviceNetwork[0]: 172.30.0.0/29 is too small: at least a /28 is needed (the DNS service uses the 10th address)",
			"networking.serviceNetwork[1]: fd02::/125 is too small: at least a /124 is needed (the DNS service uses the 10th address)",
		}},
		{name: "two service networks of one family", mutate: func(ic *InstallConfig) {
			ic.Networking.ServiceNetwork = []string{"172.30.0.0/16", "172.31.0.0/16"}
		}, want: []string{
			"networking.serviceNetwork[1]: 172.31.0.0/16 is IPv4 like networking.serviceNetwork[0] 172.30.0.0/16; two service networks must be one IPv4 and one IPv6 (dual stack)",
		}},
		{name: "overlaps, every pair once", mutate: func(ic *InstallConfig) {
			n := ic.Networking
			n.ClusterNetwork = []ClusterNetworkEntry{{CIDR: "10.0.0.0/8", HostPrefix: 23}}
			n.ServiceNetwork = []string{"10.1.0.0/16"}
			n.MachineNetwork = []MachineNetworkEntry{{CIDR: "10.2.0.0/24"}, {CIDR: "10.2.0.0/25"}}
		}, want: []string{
			"networking.serviceNetwork[0]: 10.1.0.0/16 overlaps networking.clusterNetwork[0] 10.0.0.0/8",
			"networking.machineNetwork[0]: 10.2.0.0/24 overlaps networking.clusterNetwork[0] 10.0.0.0/8",
			"networking.machineNetwork[1]: 10.2.0.0/25 overlaps networking.clusterNetwork[0] 10.0.0.0/8",
			"networking.machineNetwork[1]: 10.2.0.0/25 overlaps networking.machineNetwork[0] 10.2.0.0/24",
		}},
		{name: "machineCIDR", mutate: func(ic *InstallConfig) {
			ic.Networking.MachineNetwork = nil
			ic.Networking.MachineCIDR = "10.0.0.0/16"
		}, nodeIPs: v4node, want: []string{"nodeIP: 192.168.126.10 is not in networking.machineCIDR (10.0.0.0/16)"}},
		{name: "machineCIDR with machineNetwork", mutate: func(ic *InstallConfig) {
			ic.Networking.MachineCIDR = "10.0.0.0/16"
		}, want: []string{"networking.machineCIDR: deprecated; must not be set together with networking.machineNetwork"}},
		{name: "network type typo", mutate: func(ic *InstallConfig) { ic.Networking.NetworkType = "OVNKubernetes " },
			want: []string{`networking.networkType: unsupported value "OVNKubernetes " (did you mean "OVNKubernetes"?)`}},
		{name: "OpenShiftSDN, in any case", mutate: func(ic *InstallConfig) { ic.Networking.NetworkType = "openshiftSDN" },
			want: []string{`networking.networkType: "openshiftSDN" is not supported: the installer refuses it for single-node OpenShift (and for every cluster since 4.15); use OVNKubernetes`}},
		{name: "Kuryr", mutate: func(ic *InstallConfig) { ic.Networking.NetworkType = "Kuryr" },
			want: []string{`networking.networkType: "Kuryr" is not supported on OpenShift later than 4.14; use OVNKubernetes`}},
		{name: "another network plugin", mutate: func(ic *InstallConfig) { ic.Networking.NetworkType = "Calico" }},
		{name: "replicas", mutate: func(ic *InstallConfig) {
			ic.ControlPlane.Replicas = nil
			ic.Compute[0].Replicas = ptr(int64(-2))
		}, want: []string{
			"controlPlane.replicas: required; must be 1 for single node",
			"compute[0].replicas: -2: the number of replicas must not be negative",
		}},
		// Workers beside the single control-plane node, as openshift-install takes them (pipeline names them).
		{name: "workers", mutate: func(ic *InstallConfig) { ic.Compute[0].Replicas = ptr(int64(2)) }},
		{name: "pool settings", mutate: func(ic *InstallConfig) {
			ic.ControlPlane.Architecture = "x86_64"
			ic.Compute[0].Hyperthreading = "enabled"
		}, want: []string{
			`controlPlane.architecture: unsupported value "x86_64"; must be one of amd64, arm64, ppc64le, s390x`,
			`compute[0].hyperthreading: unsupported value "enabled"; must be Enabled or Disabled (did you mean "Enabled"?)`,
		}},
		{name: "installation disk", mutate: func(ic *InstallConfig) { ic.BootstrapInPlace.InstallationDisk = "/dev/../etc/passwd" },
			want: []string{`bootstrapInPlace.installationDisk: "/dev/../etc/passwd" must be an absolute device path under /dev/ (e.g. /dev/vda or /dev/disk/by-id/...)`}},
		{name: "empty bootstrapInPlace", mutate: func(ic *InstallConfig) { ic.BootstrapInPlace = &BootstrapInPlace{} },
			want: []string{"bootstrapInPlace.installationDisk: required"}},
		{name: "settings", mutate: func(ic *InstallConfig) {
			ic.Publish = "Mixed"
			ic.CPUPartitioningMode = "allnodes"
			ic.FeatureSet = "LatencySensitive"
			ic.Capabilities = &Capabilities{BaselineCapabilitySet: "v4.9", AdditionalEnabledCapabilities: []string{"console", "Console", "Console", "Telemetry"}}
		}, want: []string{
			`publish: unsupported value "Mixed"; must be External or Internal`,
			`cpuPartitioningMode: unsupported value "allnodes"; must be None or AllNodes (did you mean "AllNodes"?)`,
			`capabilities.baselineCapabilitySet: unsupported value "v4.9"; must be one of None, v4.11, v4.12, v4.13, v4.14, v4.15, v4.16, v4.17, v4.18, vCurrent`,
			`capabilities.additionalEnabledCapabilities[0]: unknown capability "console" (did you mean "Console"?)`,
			`capabilities.additionalEnabledCapabilities[3]: unknown capability "Telemetry"; known capabilities are Build, CSISnapshot, CloudControllerManager, CloudCredential, Console, DeploymentConfig, ImageRegistry, Ingress, Insights, MachineAPI, NodeTuning, OperatorLifecycleManager, OperatorLifecycleManagerV1, Storage, baremetal, marketplace, openshift-samples`,
			`featureSet: unsupported value "LatencySensitive"; must be one of TechPreviewNoUpgrade, DevPreviewNoUpgrade, CustomNoUpgrade`,
		}},
		{name: "feature gates without feature set", mutate: func(ic *InstallConfig) { ic.FeatureGates = []string{"A=yes", "=true", "A=true"} },
			want: []string{
				"featureGates: only allowed with featureSet: CustomNoUpgrade (featureSet is not set)",
				`featureGates[0]: "A=yes" must be Name=true or Name=false`,
				`featureGates[1]: "=true" must be Name=true or Name=false`,
			}},
		{name: "custom feature gates", mutate: func(ic *InstallConfig) {
			ic.FeatureSet = "CustomNoUpgrade"
			ic.FeatureGates = []string{"MutatingAdmissionPolicy=true", "mutatingadmissionpolicy=false", "ShortCertRotation=true",
				"ShortCertRotation=false", "InPlacePodVerticalScaling=true", "Example=True", "Bad Name=true", "Other=1", "Third=maybe"}
		}, want: []string{
			`featureGates[1]: unknown feature gate "mutatingadmissionpolicy" (did you mean "MutatingAdmissionPolicy"?)`,
			"featureGates[2]: ShortCertRotation=true cannot be honoured: it makes certificates live hours and relies on the operators to rotate them, and no operator runs on this node (certificate lifetimes are the render's {certValidity})",
			`featureGates[3]: duplicate feature gate "ShortCertRotation"`,
			`featureGates[6]: "Bad Name=true" must be Name=true or Name=false`,
			`featureGates[8]: "Third=maybe" must be Name=true or Name=false`,
		}},
		{name: "proxy needs a URL", mutate: func(ic *InstallConfig) { ic.Proxy = &Proxy{NoProxy: "example.com"} },
			want: []string{"proxy: at least one of httpProxy or httpsProxy is required"}},
		{name: "proxy URLs", mutate: func(ic *InstallConfig) {
			ic.Proxy = &Proxy{HTTPProxy: "user:secret@proxy:3128", HTTPSProxy: "http://user:secret@:3128"}
		}, want: []string{
			"proxy.httpProxy: must be a URL of the form http://host[:port]",
			"proxy.httpsProxy: URL has no host",
		}},
		{name: "proxy in the cluster or service network, noProxy entries", mutate: func(ic *InstallConfig) {
			ic.Proxy = &Proxy{HTTPProxy: "http://172.30.0.5:3128", HTTPSProxy: "https://10.128.0.9", NoProxy: "example.com, Example.org,*,.ok.example.net"}
		}, want: []string{
			"proxy.httpProxy: the proxy's address 172.30.0.5 is in the service network 172.30.0.0/16",
			"proxy.httpsProxy: the proxy's address 10.128.0.9 is in the cluster network 10.128.0.0/14",
			"proxy.noProxy: must not have spaces",
			`proxy.noProxy: entry 2 "Example.org" is not an IP address, CIDR or lowercase domain without wildcards ("*" is allowed only as the whole noProxy)`,
			`proxy.noProxy: entry 3 "*" is not an IP address, CIDR or lowercase domain without wildcards ("*" is allowed only as the whole noProxy)`,
		}},
		{name: "mirror sets: a registry host alone, no mirrors", mutate: func(ic *InstallConfig) {
			ic.ImageDigestSources = []ImageDigestSource{{Source: "registry.redhat.io", Mirrors: []string{"mirror.example.com:5000"}},
				{Source: "quay.io/a"}, {Source: "quay.io/b", SourcePolicy: "NeverContactSource"}}
		}, want: []string{"imageDigestSources[2].sourcePolicy: cannot be configured without a mirror"}},
		{name: "FIPS wants rsa or ecdsa keys", mutate: func(ic *InstallConfig) {
			ic.FIPS = true
			ic.SSHKey = realKey + "\n" + `no-pty ` + realKey + "\necdsa-sha2-nistp256 AAAAE2Vj undecodable@example\n"
		}, want: []string{
			"sshKey: line 1: SSH key type ssh-ed25519 unavailable when FIPS is enabled; use rsa or ecdsa",
			"sshKey: line 2: SSH key type ssh-ed25519 unavailable when FIPS is enabled; use rsa or ecdsa",
		}},
		{name: "proxy URL syntax", mutate: func(ic *InstallConfig) {
			ic.Proxy = &Proxy{HTTPProxy: "http://proxy:99999", HTTPSProxy: "http://pro xy:1"}
		}, want: []string{
			"proxy.httpProxy: port 99999 is out of range",
			`proxy.httpsProxy: not a valid URL: invalid character " " in host name`,
		}},
		{name: "pull secret shapes", mutate: func(ic *InstallConfig) { ic.PullSecret = `["auths"]` },
			want: []string{`pullSecret: must be a JSON object with "auths", got an array`}},
		{name: "pull secret auths not object", mutate: func(ic *InstallConfig) { ic.PullSecret = `{"auths": "x"}` },
			want: []string{`pullSecret: "auths" must be a JSON object, got a string`}},
		{name: "pull secret entries", mutate: func(ic *InstallConfig) {
			ic.PullSecret = `{"auths": {"b": null, "a": {"auth": 5}, "c": {"email": "x"}, "d": {"auth": "dXNlcnBhc3N3b3Jk"}}}`
		}, want: []string{
			`pullSecret: auths["a"].auth must be a string, got a number`,
			`pullSecret: auths["b"] must be a JSON object, got null`,
			`pullSecret: auths["c"] requires either auth or credsStore`,
			`pullSecret: auths["d"].auth is not base64 of "user:password"`,
		}},
		{name: "pull secret syntax", mutate: func(ic *InstallConfig) { ic.PullSecret = `{"auths": {x}}` },
			want: []string{`pullSecret: not valid JSON: invalid character 'x' looking for beginning of object key string`}},
		{name: "ssh keys", mutate: func(ic *InstallConfig) {
			ic.SSHKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n" + realKey + "\n  \n" +
				`command="/bin/true",no-pty ` + realKey + "\nsk-ssh-ed25519@openssh.com AAAAGnNr x\n"
		}, want: []string{
			"sshKey: line 1: looks like a PEM block (a private key?); sshKey takes public keys only",
			`sshKey: line 2: not an SSH public key (expected "<type> <base64 key data> [comment]")`,
		}},
		{name: "mirror references", mutate: func(ic *InstallConfig) {
			ic.ImageContentSources = []ImageContentSource{{Source: "", Mirrors: []string{"quay.io", "host:/a", "h.io:0/a", "-h.io/a", "[fd00::1/a", "h.io/" + strings.Repeat("a", 260)}}}
		}, want: []string{
			"imageContentSources[0].source: required",
			`imageContentSources[0].mirrors[1]: "host:/a": registry host "host:" has an empty port`,
			`imageContentSources[0].mirrors[2]: "h.io:0/a": registry port "0" is not a number between 1 and 65535`,
			`imageContentSources[0].mirrors[3]: "-h.io/a": "-h.io" is not a valid registry host name`,
			`imageContentSources[0].mirrors[4]: "[fd00::1/a": registry host "[fd00::1" has no closing ']'`,
			`imageContentSources[0].mirrors[5]: "h.io/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa..." is longer than 255 characters`,
		}},
		{name: "trust bundle", mutate: func(ic *InstallConfig) { ic.AdditionalTrustBundle = "-----BEGIN CERTIFICATE-----\n" },
			want: []string{"additionalTrustBundle: PEM block 1 is malformed or incomplete"}},
		{name: "node IPs", mutate: func(ic *InstallConfig) {}, nodeIPs: []netip.Addr{
			netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("224.0.0.1"), {}, netip.MustParseAddr("::ffff:192.168.126.10"), netip.MustParseAddr("fe80::1%eth0"),
		}, want: []string{
			"nodeIP: at most two addresses (one IPv4 and one IPv6) are allowed, got 5",
			"nodeIP: 0.0.0.0 is the unspecified address",
			"nodeIP: 224.0.0.1 is a multicast address",
			"nodeIP: an empty address was given",
			"nodeIP: ::ffff:192.168.126.10 is an IPv4-mapped IPv6 address; use 192.168.126.10",
			"nodeIP: fe80::1%eth0 has a zone; give the address without %zone",
		}},
		{name: "node IPs in documentation ranges", mutate: dualNet, nodeIPs: []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")},
			want: []string{
				"nodeIP: 192.0.2.10 is in a documentation range (192.0.2.0/24, 2001:db8::/32), which kube-apiserver refuses as an etcd address",
				"nodeIP: 2001:db8::10 is in a documentation range (192.0.2.0/24, 2001:db8::/32), which kube-apiserver refuses as an etcd address",
				// Every problem at once: where the address is, too (issue 28).
				"nodeIP: 192.0.2.10 is not in any networking.machineNetwork (192.168.126.0/24, fd00::/64)",
				"nodeIP: 2001:db8::10 is not in any networking.machineNetwork (192.168.126.0/24, fd00::/64)",
			}},
		{name: "node IP in a documentation range inside the machine network", mutate: func(ic *InstallConfig) {
			ic.Networking.MachineNetwork = []MachineNetworkEntry{{CIDR: "192.0.2.0/24"}}
		}, nodeIPs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, want: []string{
			"nodeIP: 192.0.2.10 is in a documentation range (192.0.2.0/24, 2001:db8::/32), which kube-apiserver refuses as an etcd address",
		}},
		// Issue 40: the subnet's own addresses, which no host can take.
		{name: "node IP the network address", mutate: func(ic *InstallConfig) {}, nodeIPs: []netip.Addr{netip.MustParseAddr("192.168.126.0")}, want: []string{
			"nodeIP: 192.168.126.0 is the network address of networking.machineNetwork[0] 192.168.126.0/24, not a host's: give the node an address from 192.168.126.1 to 192.168.126.254",
		}},
		{name: "node IPs the broadcast and the subnet-router anycast address", mutate: dualNet,
			nodeIPs: []netip.Addr{netip.MustParseAddr("192.168.126.255"), netip.MustParseAddr("fd00::")}, want: []string{
				"nodeIP: 192.168.126.255 is the broadcast address of networking.machineNetwork[0] 192.168.126.0/24, not a host's: give the node an address from 192.168.126.1 to 192.168.126.254",
				"nodeIP: fd00:: is the subnet-router anycast address of networking.machineNetwork[1] fd00::/64 (its host part is all zeros), which every router on the link answers: give the node another address of fd00::/64",
			}},
		{name: "node IPs of subnets without network and broadcast addresses", mutate: func(ic *InstallConfig) {
			ic.Networking.MachineNetwork = []MachineNetworkEntry{{CIDR: "192.168.126.0/31"}, {CIDR: "fd00::/127"}}
			ic.Networking.ServiceNetwork = []string{"172.30.0.0/16", "fd02::/112"}
			ic.Networking.ClusterNetwork = []ClusterNetworkEntry{{CIDR: "10.128.0.0/14", HostPrefix: 23}, {CIDR: "fd01::/48", HostPrefix: 64}}
		}, nodeIPs: []netip.Addr{netip.MustParseAddr("192.168.126.0"), netip.MustParseAddr("fd00::")}}, // RFC 3021, RFC 6164
		{name: "node IPs of one family", mutate: dualNet, nodeIPs: []netip.Addr{netip.MustParseAddr("192.168.126.10"), netip.MustParseAddr("192.168.126.11")},
			want: []string{"nodeIP: 192.168.126.10 and 192.168.126.11 are the same family"}},
		{name: "node IP in service network", mutate: func(ic *InstallConfig) {
			ic.Networking.MachineNetwork = []MachineNetworkEntry{{CIDR: "172.16.0.0/12"}}
			ic.Networking.ServiceNetwork = []string{"172.30.0.0/16"}
		}, nodeIPs: []netip.Addr{netip.MustParseAddr("172.30.0.10")}, want: []string{
			"networking.machineNetwork[0]: 172.16.0.0/12 overlaps networking.serviceNetwork[0] 172.30.0.0/16",
			"nodeIP: 172.30.0.10 is inside networking.serviceNetwork[0] 172.30.0.0/16",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ic := baseConfig()
			tt.mutate(ic)
			errs := ic.Validate(tt.nodeIPs)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if len(tt.want) == 0 && errs != nil {
				t.Error("Validate returned a non-nil empty list")
			}
		})
	}
}

func TestParseNodeIPs(t *testing.T) {
	tests := []struct {
		in   string
		want []string // addresses, or error lines
		err  bool
	}{
		{in: "192.168.1.1", want: []string{"192.168.1.1"}},
		{in: " fd00::1 ", want: []string{"fd00::1"}},
		{in: "192.168.1.1,fd00::1", want: []string{"192.168.1.1", "fd00::1"}},
		{in: "fd00::1, 192.168.1.1", want: []string{"fd00::1", "192.168.1.1"}},
		{in: "", err: true, want: []string{"nodeIP: required"}},
		{in: "x", err: true, want: []string{`nodeIP: "x" is not an IP address`}},
		{in: "192.168.1.1,", err: true, want: []string{`nodeIP: "" is not an IP address`}},
		{in: "192.168.1.1,192.168.1.2", err: true, want: []string{"nodeIP: 192.168.1.1 and 192.168.1.2 are the same family"}},
		{in: "1.1.1.1,2.2.2.2,3.3.3.3", err: true, want: []string{"nodeIP: at most two addresses (one IPv4 and one IPv6) are allowed, got 3"}},
		{in: "fe80::1%eth0,::ffff:1.2.3.4", err: true, want: []string{
			`nodeIP: "fe80::1%eth0" has a zone; give the address without %zone`,
			`nodeIP: "::ffff:1.2.3.4" is an IPv4-mapped IPv6 address; use 1.2.3.4`,
		}},
	}
	for _, tt := range tests {
		ips, err := ParseNodeIPs(tt.in)
		if tt.err {
			if _, ok := err.(ErrorList); !ok {
				t.Errorf("ParseNodeIPs(%q) error %v is not an ErrorList", tt.in, err)
			}
			if got := errorLines(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseNodeIPs(%q) = %q, want %q", tt.in, got, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseNodeIPs(%q): %v", tt.in, err)
			continue
		}
		var got []string
		for _, ip := range ips {
			got = append(got, ip.String())
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseNodeIPs(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestErrorList(t *testing.T) {
	l := ErrorList{{Field: "a", Detail: "x"}, {Field: "b.c[0]", Detail: "y"}}
	if got, want := l.Error(), "a: x\nb.c[0]: y"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := finalize(append(l, l...), nil); !reflect.DeepEqual(got, l) {
		t.Errorf("finalize kept duplicates: %v", got)
	}
	if got := finalize(nil, nil); got != nil {
		t.Errorf("finalize(nil) = %#v", got)
	}
}

func TestDerivedOnInvalidConfig(t *testing.T) {
	ic := &InstallConfig{Networking: &Networking{
		ServiceNetwork: []string{"bad", "fd02::/112"},
		ClusterNetwork: []ClusterNetworkEntry{{CIDR: "nope"}},
	}}
	if got := ic.ServiceIPs(); len(got) != 1 || got[0] != netip.MustParseAddr("fd02::1") {
		t.Errorf("ServiceIPs = %v", got)
	}
	if ic.DualStack() || !ic.IPv6Primary() || ic.ClusterCIDRs() != nil || ic.MachineCIDRs() != nil {
		t.Error("derived values of an invalid config are wrong")
	}
	empty := &InstallConfig{}
	_ = empty.ServiceIPs()
	_ = empty.TrustBundle()
	_ = empty.Warnings()
}

// TestComputeReplicas: the workers an install-config asks for, with the installer's defaults: 3 for a pool that
// does not say, and one such pool when compute is not given.
func TestComputeReplicas(t *testing.T) {
	for _, c := range []struct {
		compute []MachinePool
		want    int64
	}{
		{[]MachinePool{{Name: "worker", Replicas: ptr(int64(0))}}, 0},
		{[]MachinePool{{Name: "worker", Replicas: ptr(int64(2))}}, 2},
		{[]MachinePool{{Name: "worker"}}, 3},
		{nil, 3},
		{[]MachinePool{{Name: "worker", Replicas: ptr(int64(1))}, {Name: "other", Replicas: ptr(int64(2))}}, 3},
	} {
		ic := baseConfig()
		ic.Compute = c.compute
		if got := ic.ComputeReplicas(); got != c.want {
			t.Errorf("compute %+v: %d workers, want %d", c.compute, got, c.want)
		}
	}
}

// TestCheckNodeIPs: another node's addresses (a worker's) are checked by the node's own rules, named by their
// field.
func TestCheckNodeIPs(t *testing.T) {
	ic := baseConfig()
	ip := func(s string) []netip.Addr { return []netip.Addr{netip.MustParseAddr(s)} }
	if errs := ic.CheckNodeIPs("workers[0].nodeIP", ip("192.168.126.11")); len(errs) != 0 {
		t.Errorf("a good worker IP: %v", errs)
	}
	errs := ic.CheckNodeIPs("workers[1].nodeIP", ip("172.30.0.5"))
	want := []string{"workers[1].nodeIP: 172.30.0.5 is not in any networking.machineNetwork (192.168.126.0/24)",
		"workers[1].nodeIP: 172.30.0.5 is inside networking.serviceNetwork[0] 172.30.0.0/16"}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestBuiltinPodNetwork: OVNKubernetes (the installer's default) and no networkType render the built-in network;
// any other plugin is the user's own (design of issue 37, item 5).
func TestBuiltinPodNetwork(t *testing.T) {
	for typ, want := range map[string]bool{"": true, "OVNKubernetes": true, "Calico": false, "Cilium": false, "OpenShiftSDN": false, "ovnkubernetes": false} {
		ic := baseConfig()
		ic.Networking.NetworkType = typ
		if got := ic.BuiltinPodNetwork(); got != want {
			t.Errorf("networkType %q: BuiltinPodNetwork() = %v, want %v", typ, got, want)
		}
	}
	if !(&InstallConfig{}).BuiltinPodNetwork() {
		t.Error("no networking: BuiltinPodNetwork() = false, want the default's true")
	}
}
