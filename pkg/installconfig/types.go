// Package installconfig parses and validates an OpenShift install-config.yaml
// (apiVersion v1, the openshift-installer's schema) for single-node static
// rendering.
//
// Only the part of the installer schema that a single-node, all-in-one control
// plane uses is accepted; every other field is reported as an unknown field.
// Decoding is strict and reports every problem with the full path of the field
// (for example "networking.clusterNetwork[1].hostprefix: unknown field"), and
// Validate reports all rule violations at once, in document order.
//
// Typical use:
//
//	ips, err := installconfig.ParseNodeIPs(flagValue)
//	...
//	ic, err := installconfig.Load(path, ips)
//	if err != nil {
//		// err is an ErrorList (one line per problem) when it is about fields.
//	}
package installconfig

import (
	"regexp"
	"strings"
)

// FieldError is one problem with one field of the install-config (or with the
// node's addresses, whose Field is NodeIPInput).
type FieldError struct {
	// Field is the path of the field, e.g. "networking.clusterNetwork[0].cidr".
	Field string
	// Detail says what is wrong. It never contains secrets.
	Detail string
}

// Error returns Field + ": " + Detail.
func (e FieldError) Error() string { return e.Field + ": " + e.Detail }

// ErrorList is a list of problems, in document order, without duplicates.
type ErrorList []FieldError

// Error joins the entries with "\n".
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Inputs outside the install-config are named in errors by their input names ("nodeIP", "certValidity", ...: the
// names the state keeps them under and a fleet's site files use), never by a command's flags: each front end names
// them its own way (ErrorList.Named). A message that refers to another input says Ref(name).

// NodeIPInput is the input name of the node's addresses, which Validate checks against the networks.
const NodeIPInput = "nodeIP"

// Ref refers to the input name in a message ("{fresh}"), for Expand.
func Ref(name string) string { return "{" + name + "}" }

// Expand replaces every input reference (Ref) in s by names[input], or by the input name where names has none.
func Expand(s string, names map[string]string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	return refRE.ReplaceAllStringFunc(s, func(m string) string {
		if n, ok := names[m[1:len(m)-1]]; ok {
			return n
		}
		return m[1 : len(m)-1]
	})
}

var refRE = regexp.MustCompile(`\{[a-zA-Z]+\}`)

// Named is the list as a front end says it: a field that is an input name renamed by names, references expanded.
func (l ErrorList) Named(names map[string]string) ErrorList {
	out := make(ErrorList, len(l))
	for i, e := range l {
		if n, ok := names[e.Field]; ok {
			e.Field = n
		}
		e.Detail = Expand(e.Detail, names)
		out[i] = e
	}
	return out
}

// Has reports whether some entry is about field.
func (l ErrorList) Has(field string) bool {
	for _, e := range l {
		if e.Field == field {
			return true
		}
	}
	return false
}

// Values with a meaning of their own.
const (
	// APIVersion is the only supported apiVersion.
	APIVersion = "v1"
	// Kind is the only accepted kind (kind is optional).
	Kind = "InstallConfig"

	NetworkTypeOVNKubernetes = "OVNKubernetes"
	NetworkTypeOpenShiftSDN  = "OpenShiftSDN"

	// DefaultNetworkType is what SetDefaults puts in an empty networking.networkType.
	DefaultNetworkType = NetworkTypeOVNKubernetes

	PublishExternal = "External"
	PublishInternal = "Internal"

	PolicyProxyOnly = "Proxyonly"
	PolicyAlways    = "Always"

	CPUPartitioningNone     = "None"
	CPUPartitioningAllNodes = "AllNodes"

	HyperthreadingEnabled  = "Enabled"
	HyperthreadingDisabled = "Disabled"

	FeatureSetTechPreviewNoUpgrade = "TechPreviewNoUpgrade"
	FeatureSetDevPreviewNoUpgrade  = "DevPreviewNoUpgrade"
	FeatureSetCustomNoUpgrade      = "CustomNoUpgrade"

	// SourcePolicyNeverContactSource and SourcePolicyAllowContactingSource are imageDigestSources[].sourcePolicy
	// (the installer's types.ImageDigestSource, config.openshift.io/v1 MirrorSourcePolicy).
	SourcePolicyNeverContactSource    = "NeverContactSource"
	SourcePolicyAllowContactingSource = "AllowContactingSource"
)

// InstallConfig is the install-config.yaml document. The json tags are the
// installer's (v1). Fields not listed here are rejected by Parse.
type InstallConfig struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`

	// AdditionalTrustBundle is a PEM bundle of CA certificates.
	AdditionalTrustBundle string `json:"additionalTrustBundle,omitempty"`
	// AdditionalTrustBundlePolicy is Proxyonly (default) or Always.
	AdditionalTrustBundlePolicy string `json:"additionalTrustBundlePolicy,omitempty"`

	// SSHKey holds one or more authorized_keys lines.
	SSHKey string `json:"sshKey,omitempty"`

	BaseDomain string `json:"baseDomain"`

	Networking   *Networking   `json:"networking,omitempty"`
	ControlPlane *MachinePool  `json:"controlPlane,omitempty"`
	Compute      []MachinePool `json:"compute,omitempty"`
	Platform     Platform      `json:"platform"`

	// PullSecret is a JSON docker config ({"auths": {...}}).
	PullSecret string `json:"pullSecret"`

	Proxy *Proxy `json:"proxy,omitempty"`

	// ImageContentSources is deprecated in favour of ImageDigestSources.
	ImageContentSources []ImageContentSource `json:"imageContentSources,omitempty"`
	ImageDigestSources  []ImageDigestSource  `json:"imageDigestSources,omitempty"`

	// Publish is External (default) or Internal.
	Publish string `json:"publish,omitempty"`

	// FIPS true makes a FIPS node: aio.ign carries the MachineConfig RHCOS's rhcos-fips reads at first boot, and
	// the render makes its keys in FIPS 140-3 mode (pkg/pipeline fips.go; docs/install-config-fields.md).
	FIPS bool `json:"fips,omitempty"`

	// CPUPartitioningMode is None (default) or AllNodes.
	CPUPartitioningMode string `json:"cpuPartitioningMode,omitempty"`

	Capabilities *Capabilities `json:"capabilities,omitempty"`

	// FeatureSet is empty (Default), TechPreviewNoUpgrade, DevPreviewNoUpgrade
	// or CustomNoUpgrade.
	FeatureSet string `json:"featureSet,omitempty"`
	// FeatureGates are "Name=true" or "Name=false"; only with CustomNoUpgrade.
	FeatureGates []string `json:"featureGates,omitempty"`

	BootstrapInPlace *BootstrapInPlace `json:"bootstrapInPlace,omitempty"`

	// meta is what Parse learnt about the document (positions of fields).
	// It is nil for a config built in code.
	meta *parseMeta
}

// ObjectMeta is the part of Kubernetes object metadata the installer reads.
type ObjectMeta struct {
	Name string `json:"name"`
	// Namespace is tolerated and ignored.
	Namespace string `json:"namespace,omitempty"`
	// CreationTimestamp is tolerated and ignored: openshift-install create install-config writes
	// "creationTimestamp: null".
	CreationTimestamp *string `json:"creationTimestamp,omitempty"`
}

// Networking is the cluster's network configuration.
type Networking struct {
	// NetworkType is the cluster network plugin. OVNKubernetes (and an empty value, which SetDefaults turns into
	// OVNKubernetes, DefaultNetworkType) renders the built-in pod network (BuiltinPodNetwork); OpenShiftSDN and
	// Kuryr are refused; any other value (Calico, Cilium, ...) names a network the user brings.
	NetworkType string `json:"networkType,omitempty"`

	MachineNetwork []MachineNetworkEntry `json:"machineNetwork,omitempty"`
	ClusterNetwork []ClusterNetworkEntry `json:"clusterNetwork,omitempty"`
	// ServiceNetwork holds one CIDR, or two of different families (dual stack).
	ServiceNetwork []string `json:"serviceNetwork,omitempty"`

	// MachineCIDR is deprecated; it is used as the only machine network when
	// MachineNetwork is empty.
	MachineCIDR string `json:"machineCIDR,omitempty"`
}

// ClusterNetworkEntry is one pod network.
type ClusterNetworkEntry struct {
	CIDR string `json:"cidr"`
	// HostPrefix is the prefix length of the per-node subnet.
	HostPrefix int32 `json:"hostPrefix,omitempty"`
}

// MachineNetworkEntry is one network the node's addresses come from.
type MachineNetworkEntry struct {
	CIDR string `json:"cidr"`
}

// MachinePool is controlPlane or one entry of compute.
type MachinePool struct {
	Name string `json:"name,omitempty"`
	// Replicas must be 1 for controlPlane; for a compute pool it is the number of workers rendered with the
	// control plane (ComputeReplicas), the installer's 3 when not given.
	Replicas *int64 `json:"replicas,omitempty"`
	// Platform only accepts {} (no platform-specific settings).
	Platform *MachinePoolPlatform `json:"platform,omitempty"`
	// Hyperthreading is Enabled (default) or Disabled.
	Hyperthreading string `json:"hyperthreading,omitempty"`
	// Architecture is amd64, arm64, ppc64le or s390x.
	Architecture string `json:"architecture,omitempty"`
}

// MachinePoolPlatform is a machine pool's platform section. Single-node static
// rendering has no platform-specific machine settings, so it must be empty.
type MachinePoolPlatform struct{}

// Platform selects the infrastructure platform; only "none" is supported.
type Platform struct {
	// None is set for platform none. "none:" with no value counts as set.
	None *NonePlatform `json:"none,omitempty" installconfig:"nullIsEmpty"`
}

// NonePlatform has no settings.
type NonePlatform struct{}

// BootstrapInPlace configures single-node bootstrap-in-place installation.
type BootstrapInPlace struct {
	// InstallationDisk is the device the node installs to, e.g. /dev/vda.
	InstallationDisk string `json:"installationDisk"`
}

// Proxy is the cluster-wide egress proxy.
type Proxy struct {
	HTTPProxy  string `json:"httpProxy,omitempty"`
	HTTPSProxy string `json:"httpsProxy,omitempty"`
	// NoProxy is a comma-separated list of "*", domains, IPs and CIDRs.
	NoProxy string `json:"noProxy,omitempty"`
}

// Capabilities selects optional cluster capabilities.
type Capabilities struct {
	// BaselineCapabilitySet is None, v4.11 ... v4.20 or vCurrent.
	BaselineCapabilitySet         string   `json:"baselineCapabilitySet,omitempty"`
	AdditionalEnabledCapabilities []string `json:"additionalEnabledCapabilities,omitempty"`
}

// ImageDigestSource maps a source repository to its mirrors.
type ImageDigestSource struct {
	Source  string   `json:"source"`
	Mirrors []string `json:"mirrors,omitempty"`
	// SourcePolicy is AllowContactingSource (default) or NeverContactSource: with NeverContactSource, images
	// are pulled only from the mirrors, never from the source.
	SourcePolicy string `json:"sourcePolicy,omitempty"`
}

// ImageContentSource is the deprecated form of ImageDigestSource.
type ImageContentSource struct {
	Source  string   `json:"source"`
	Mirrors []string `json:"mirrors,omitempty"`
}

// SetDefaults fills in the installer's defaults; Parse calls it. It is
// idempotent. Defaults:
//   - networking.networkType: OVNKubernetes
//   - publish: External
//   - additionalTrustBundlePolicy: Proxyonly
//   - cpuPartitioningMode: None
//   - hyperthreading of controlPlane and each compute pool: Enabled
func (ic *InstallConfig) SetDefaults() {
	if ic.Networking != nil && ic.Networking.NetworkType == "" {
		ic.Networking.NetworkType = DefaultNetworkType
	}
	if ic.Publish == "" {
		ic.Publish = PublishExternal
	}
	if ic.AdditionalTrustBundlePolicy == "" {
		ic.AdditionalTrustBundlePolicy = PolicyProxyOnly
	}
	if ic.CPUPartitioningMode == "" {
		ic.CPUPartitioningMode = CPUPartitioningNone
	}
	if ic.ControlPlane != nil && ic.ControlPlane.Hyperthreading == "" {
		ic.ControlPlane.Hyperthreading = HyperthreadingEnabled
	}
	for i := range ic.Compute {
		if ic.Compute[i].Hyperthreading == "" {
			ic.Compute[i].Hyperthreading = HyperthreadingEnabled
		}
	}
}
