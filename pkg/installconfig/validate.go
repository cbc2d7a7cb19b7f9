package installconfig

import (
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/api/features"
)

// Validate checks the config against every rule for single-node static
// rendering and returns all problems in document order, or nil.
//
// nodeIPs are the --node-ip values (see ParseNodeIPs): one address, or two of
// different families for dual stack. Each must lie in a machine network and
// outside the cluster and service networks; the first must be of the primary
// (first service network) family. An empty slice skips the node-IP checks.
func (ic *InstallConfig) Validate(nodeIPs []netip.Addr) ErrorList {
	return finalize(ic.validate(nodeIPs), ic.meta)
}

type validator struct {
	ic   *InstallConfig
	errs ErrorList
}

func (v *validator) addf(field, format string, args ...any) {
	v.errs = append(v.errs, FieldError{Field: field, Detail: fmt.Sprintf(format, args...)})
}

// oneOf reports val unless it is empty or one of allowed.
func (v *validator) oneOf(field, val string, allowed ...string) {
	if val != "" && !slices.Contains(allowed, val) {
		v.addf(field, "%s", unsupported(val, allowed))
	}
}

// present reports whether the field was written in the parsed document.
func (v *validator) present(field string) bool { return v.ic.meta.present(field) }

func (ic *InstallConfig) validate(nodeIPs []netip.Addr) ErrorList {
	v := &validator{ic: ic}
	v.header()
	nets := v.networking()
	nodes, whose := ic.dayOneNodes()
	v.nodeRoom(nets, nodes, whose)
	v.machinePools()
	v.platform()
	v.bootstrapInPlace()
	v.pullSecret()
	v.sshKey()
	v.trustBundle()
	v.proxy(nets)
	v.mirrors()
	v.settings()
	v.unsupported()
	v.nodeIPs(nodeIPFlag, nodeIPs, nets)
	return v.errs
}

func (v *validator) header() {
	ic := v.ic
	switch ic.APIVersion {
	case APIVersion:
	case "":
		v.addf("apiVersion", "required; must be %s", APIVersion)
	default:
		v.addf("apiVersion", "%s", unsupported(ic.APIVersion, []string{APIVersion}))
	}
	v.oneOf("kind", ic.Kind, Kind)

	nameOK := false
	switch name := ic.Metadata.Name; {
	case name == "":
		v.addf("metadata.name", "required")
	case !isDNSLabel(name):
		v.addf("metadata.name", "%s is not a valid DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)", quoteShort(name))
	case len(name) > maxClusterNameLength:
		v.addf("metadata.name", "%s is %d characters; at most %d (the DNS record *.apps.<name> is written \\052.apps.<name>, and a label holds 63)", quoteShort(name), len(name), maxClusterNameLength)
	default:
		nameOK = true
	}

	domainOK := false
	switch bd := ic.BaseDomain; {
	case bd == "":
		v.addf("baseDomain", "required")
	case strings.HasSuffix(bd, ".") && isDNSSubdomain(strings.TrimSuffix(bd, ".")):
		v.addf("baseDomain", "%s must not end with a dot", quoteShort(bd))
	case !isDNSSubdomain(bd):
		v.addf("baseDomain", "%s is not a valid DNS-1123 subdomain (dot-separated labels of lowercase letters, digits and '-', each starting and ending with a letter or digit and at most 63 characters, at most 253 characters in all)", quoteShort(bd))
	default:
		domainOK = true
	}
	if nameOK && domainOK {
		// api-int.<cluster domain> is the longest host name the cluster uses.
		if n := len("api-int.") + len(ic.ClusterDomain()); n > 253 {
			v.addf("baseDomain", "api-int.<metadata.name>.<baseDomain> would be %d characters; host names must be at most 253", n)
		}
	}
}

// maxClusterNameLength is the installer's limit on metadata.name: a DNS label's 63 less the 9 characters of
// "\\052.apps" (openshift/installer pkg/validate ClusterName).
const maxClusterNameLength = 63 - 9

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// isDNSLabel reports whether s is an RFC 1123 label as Kubernetes defines it.
func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabel.MatchString(s) }

// isDNSSubdomain reports whether s is dot-separated RFC 1123 labels, at most
// 253 characters long.
func isDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !isDNSLabel(label) {
			return false
		}
	}
	return true
}

var architectures = []string{"amd64", "arm64", "ppc64le", "s390x"}

func (v *validator) machinePools() {
	ic := v.ic
	cp := ic.ControlPlane
	switch {
	case cp == nil || cp.Replicas == nil:
		v.addf("controlPlane.replicas", "required; must be 1 for single node")
	case *cp.Replicas != 1:
		v.addf("controlPlane.replicas", "must be 1 for single node, got %d", *cp.Replicas)
	}
	if cp != nil {
		v.oneOf("controlPlane.name", cp.Name, "master")
		v.pool("controlPlane", cp)
	}
	names := map[string]bool{}
	for i := range ic.Compute {
		p := &ic.Compute[i]
		base := fmt.Sprintf("compute[%d]", i)
		// Workers beside the single control-plane node: openshift-install's bootstrap-in-place asks only for one
		// control-plane replica (pkg/asset/ignition/bootstrap verifyBootstrapInPlace), and its general validation
		// only for no negative count (pkg/types/validation/machinepools.go ValidateMachinePool). Not given, a
		// pool has the installer's default of 3 (pkg/types/defaults/machinepools.go). Each worker is named by
		// the workers input (pipeline.InWorkers).
		if p.Replicas != nil && *p.Replicas < 0 {
			v.addf(base+".replicas", "%d: the number of replicas must not be negative", *p.Replicas)
		}
		// The installer allows the "edge" pool on AWS only (validateComputeEdge).
		switch {
		case p.Name == "":
			v.addf(base+".name", "required; must be worker")
		case p.Name != "worker":
			v.oneOf(base+".name", p.Name, "worker")
		case names[p.Name]:
			v.addf(base+".name", "duplicate pool name %q", p.Name)
		}
		names[p.Name] = true
		v.pool(base, p)
		// One architecture for the cluster: the installer allows compute pools of another architecture than
		// the control plane only on AWS, GCP and bare metal (validateCompute).
		if cp != nil && p.Architecture != "" && slices.Contains(architectures, p.Architecture) && arch(p) != arch(cp) {
			v.addf(base+".architecture", "%s, but the control plane is %s: a compute pool's architecture must match the control plane's", p.Architecture, arch(cp))
		}
	}
}

// arch is a pool's architecture with the installer's default, amd64.
func arch(p *MachinePool) string {
	if p.Architecture == "" {
		return "amd64"
	}
	return p.Architecture
}

func (v *validator) pool(base string, p *MachinePool) {
	v.oneOf(base+".hyperthreading", p.Hyperthreading, HyperthreadingEnabled, HyperthreadingDisabled)
	v.oneOf(base+".architecture", p.Architecture, architectures...)
}

func (v *validator) platform() {
	if v.ic.Platform.None == nil {
		v.addf("platform", `required; must be "none: {}" for single-node static rendering`)
	}
}

func (v *validator) bootstrapInPlace() {
	b := v.ic.BootstrapInPlace
	if b == nil {
		return
	}
	const f = "bootstrapInPlace.installationDisk"
	disk := b.InstallationDisk
	switch {
	case disk == "":
		v.addf(f, "required")
	case !strings.HasPrefix(disk, "/dev/") || len(disk) == len("/dev/") || path.Clean(disk) != disk ||
		strings.ContainsAny(disk, " \t\r\n"):
		v.addf(f, "%s must be an absolute device path under /dev/ (e.g. /dev/vda or /dev/disk/by-id/...)", quoteShort(disk))
	}
}

func (v *validator) mirrors() {
	ic := v.ic
	if len(ic.ImageContentSources) > 0 && len(ic.ImageDigestSources) > 0 {
		v.addf("imageContentSources", "cannot be used together with imageDigestSources; move its entries to imageDigestSources")
	}
	for i, s := range ic.ImageContentSources {
		v.mirrorSet(fmt.Sprintf("imageContentSources[%d]", i), s.Source, s.Mirrors)
	}
	for i, s := range ic.ImageDigestSources {
		base := fmt.Sprintf("imageDigestSources[%d]", i)
		v.mirrorSet(base, s.Source, s.Mirrors)
		v.oneOf(base+".sourcePolicy", s.SourcePolicy, SourcePolicyNeverContactSource, SourcePolicyAllowContactingSource)
		if s.SourcePolicy != "" && len(s.Mirrors) == 0 {
			v.addf(base+".sourcePolicy", "cannot be configured without a mirror")
		}
	}
}

// unsupported refuses the fields the render cannot honour (docs/install-config-fields.md, "Refused fields").
func (v *validator) unsupported() {
	if cp := v.ic.ControlPlane; cp != nil && cp.Hyperthreading == HyperthreadingDisabled {
		v.addf("controlPlane.hyperthreading", "%s", hyperthreadingReason)
	}
}

// hyperthreadingReason is why controlPlane.hyperthreading: Disabled is refused.
const hyperthreadingReason = "Disabled cannot be honoured by aio.ign: the installer disables SMT with kernel arguments " +
	"(nosmt, in its MachineConfig 99-master-disable-hyperthreading) and Ignition spec 3.2 sets no kernel arguments; " +
	"install RHCOS with --append-karg nosmt and leave hyperthreading Enabled"

func (v *validator) mirrorSet(base, source string, mirrors []string) {
	// An entry without mirrors is allowed, as by the installer (it adds nothing to registries.conf).
	if p := repositoryProblem(source); p != "" {
		v.addf(base+".source", "%s", p)
	}
	for j, m := range mirrors {
		if p := repositoryProblem(m); p != "" {
			v.addf(fmt.Sprintf("%s.mirrors[%d]", base, j), "%s", p)
		}
	}
}

var (
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	hostComponent = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$`)
	portNumber    = regexp.MustCompile(`^[0-9]{1,5}$`)
)

// repositoryProblem checks an image repository reference: host[:port]/path, or a registry host[:port] alone (the
// installer's validateNamedRepository takes a name that is not a canonical repository as a host), without a tag or
// a digest. It returns "" when s is fine.
func repositoryProblem(s string) string {
	q := quoteShort(s)
	switch {
	case s == "":
		return "required"
	case len(s) > 255:
		return q + " is longer than 255 characters"
	case strings.Contains(s, "@"):
		return q + " must be a repository without a digest"
	}
	host, repo, ok := strings.Cut(s, "/")
	if !ok {
		if p := registryHostProblem(host); p != "" {
			return fmt.Sprintf("%s: %s", q, p)
		}
		return ""
	}
	if repo == "" {
		return q + " must be host[:port]/path: a registry host followed by a repository path"
	}
	if p := registryHostProblem(host); p != "" {
		return fmt.Sprintf("%s: %s", q, p)
	}
	comps := strings.Split(repo, "/")
	if strings.Contains(comps[len(comps)-1], ":") {
		return q + " must be a repository without a tag"
	}
	for _, c := range comps {
		if !pathComponent.MatchString(c) {
			return fmt.Sprintf("%s: invalid path component %s (lowercase letters and digits, separated by '.', '_', '__' or '-')", q, quoteShort(c))
		}
	}
	return ""
}

func registryHostProblem(host string) string {
	name, port := host, ""
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return fmt.Sprintf("registry host %s has no closing ']'", quoteShort(host))
		}
		if a, err := netip.ParseAddr(host[1:end]); err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Sprintf("registry host %s is not a valid IPv6 address", quoteShort(host))
		}
		rest := host[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return fmt.Sprintf("registry host %s is not host[:port]", quoteShort(host))
			}
			port = rest[1:]
		}
		name = ""
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 {
		name, port = host[:i], host[i+1:]
		if port == "" {
			return fmt.Sprintf("registry host %s has an empty port", quoteShort(host))
		}
	}
	if port != "" && (!portNumber.MatchString(port) || atoi(port) < 1 || atoi(port) > 65535) {
		return fmt.Sprintf("registry port %s is not a number between 1 and 65535", quoteShort(port))
	}
	if name != "" {
		for c := range strings.SplitSeq(name, ".") {
			if !hostComponent.MatchString(c) {
				return fmt.Sprintf("%s is not a valid registry host name", quoteShort(name))
			}
		}
		if port == "" && !strings.Contains(name, ".") && name != "localhost" {
			return fmt.Sprintf("must start with a registry host (a name with a '.' or a port, or localhost), not %s", quoteShort(name))
		}
	}
	return ""
}

// atoi converts at most 5 digits (checked by the caller).
func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

var (
	// baselineCapabilitySets and knownCapabilities are those of the pinned openshift/api
	// (configv1.ClusterVersionCapabilitySets), as the installer takes them (validateCapabilities).
	baselineCapabilitySets, knownCapabilities = capabilitySets()
	featureGateName                           = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

func capabilitySets() (sets, known []string) {
	for set, caps := range configv1.ClusterVersionCapabilitySets {
		sets = append(sets, string(set))
		for _, c := range caps {
			known = append(known, string(c))
		}
	}
	slices.Sort(sets)
	slices.Sort(known)
	return sets, slices.Compact(known)
}

// capabilities checks capabilities as the installer does (pkg/types/validation/installconfig.go
// validateCapabilities and ValidateInstallConfig): a baseline set of the pinned API (required once capabilities is
// written), known additional capabilities (a name twice is allowed), the marketplace capability only with
// OperatorLifecycleManager, and Ingress always enabled (the baseline's or added).
func (v *validator) capabilities(c *Capabilities) {
	set := c.BaselineCapabilitySet
	setOK := slices.Contains(baselineCapabilitySets, set)
	if !setOK {
		v.addf("capabilities.baselineCapabilitySet", "%s", unsupported(set, baselineCapabilitySets))
	}
	enabled := map[string]bool{}
	for _, name := range configv1.ClusterVersionCapabilitySets[configv1.ClusterVersionCapabilitySet(set)] {
		enabled[string(name)] = true
	}
	for i, name := range c.AdditionalEnabledCapabilities {
		if !slices.Contains(knownCapabilities, name) {
			v.addf(fmt.Sprintf("capabilities.additionalEnabledCapabilities[%d]", i), "%s", unknownCapability(name))
		}
		enabled[name] = true
	}
	if !setOK {
		return
	}
	if enabled[string(configv1.ClusterVersionCapabilityMarketplace)] && !enabled[string(configv1.ClusterVersionCapabilityOperatorLifecycleManager)] {
		v.addf("capabilities.additionalEnabledCapabilities", "the marketplace capability requires the OperatorLifecycleManager capability")
	}
	if !enabled[string(configv1.ClusterVersionCapabilityIngress)] {
		v.addf("capabilities", "the Ingress capability is required (baseline %s does not hold it: add Ingress to additionalEnabledCapabilities)", set)
	}
}

// settings checks the enumerated top-level settings.
func (v *validator) settings() {
	ic := v.ic
	v.oneOf("publish", ic.Publish, PublishExternal, PublishInternal)
	if ic.Publish == PublishInternal {
		// pkg/types/validation/installconfig.go: Internal is for cloud load balancers and DNS zones.
		v.addf("publish", `Internal publish strategy is not supported on "none" platform; use External`)
	}
	v.oneOf("cpuPartitioningMode", ic.CPUPartitioningMode, CPUPartitioningNone, CPUPartitioningAllNodes)
	v.oneOf("additionalTrustBundlePolicy", ic.AdditionalTrustBundlePolicy, PolicyProxyOnly, PolicyAlways)

	if c := ic.Capabilities; c != nil {
		v.capabilities(c)
	}

	v.oneOf("featureSet", ic.FeatureSet, FeatureSetTechPreviewNoUpgrade, FeatureSetDevPreviewNoUpgrade, FeatureSetCustomNoUpgrade)
	if len(ic.FeatureGates) > 0 && ic.FeatureSet != FeatureSetCustomNoUpgrade {
		set := "not set"
		if ic.FeatureSet != "" {
			set = quoteShort(ic.FeatureSet)
		}
		v.addf("featureGates", "only allowed with featureSet: %s (featureSet is %s)", FeatureSetCustomNoUpgrade, set)
	}
	gates := map[string]bool{}
	for i, g := range ic.FeatureGates {
		f := fmt.Sprintf("featureGates[%d]", i)
		name, val, ok := strings.Cut(g, "=")
		on, err := strconv.ParseBool(val) // as the installer reads it (validateCustomFeatureGates)
		if !ok || !featureGateName.MatchString(name) || err != nil {
			v.addf(f, "%s must be Name=true or Name=false", quoteShort(g))
			continue
		}
		if gates[name] {
			v.addf(f, "duplicate feature gate %s", quoteShort(name))
		}
		gates[name] = true
		if known := knownFeatureGate(name); known != "" && known != name {
			v.addf(f, "unknown feature gate %s (did you mean %q?)", quoteShort(name), known)
		}
		if name == string(features.FeatureShortCertRotation) && on {
			// cluster-etcd-operator (pkg/operator/etcdcertsigner/etcdcertsignercontroller.go) and the other
			// operators then issue certificates that live hours and count on rotating them themselves.
			v.addf(f, "%s=true cannot be honoured: it makes certificates live hours and relies on the operators to "+
				"rotate them, and no operator runs on this node (certificate lifetimes are the render's "+Ref("certValidity")+")", name)
		}
	}
}

// knownFeatureGate is the gate of the pinned openshift/api (any feature set of the self-managed profile) whose name
// equals name ignoring case, or "". Other names may be Kubernetes gates, which the operators pass on as they are.
func knownFeatureGate(name string) string {
	for _, set := range features.AllFeatureSets()[features.SelfManaged] {
		for _, list := range [][]features.FeatureGateDescription{set.Enabled, set.Disabled} {
			for _, g := range list {
				if strings.EqualFold(string(g.FeatureGateAttributes.Name), name) {
					return string(g.FeatureGateAttributes.Name)
				}
			}
		}
	}
	return ""
}

func unknownCapability(name string) string {
	for _, k := range knownCapabilities {
		if strings.EqualFold(k, name) {
			return fmt.Sprintf("unknown capability %s (did you mean %q?)", quoteShort(name), k)
		}
	}
	return fmt.Sprintf("unknown capability %s; known capabilities are %s", quoteShort(name), strings.Join(knownCapabilities, ", "))
}
