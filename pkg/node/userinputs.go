package node

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	ignitiontypes "github.com/coreos/ignition/v2/config/v3_2/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
)

// Node files made from install-config fields the user sets (docs/install-config-fields.md).
const (
	// RegistriesConfPath is containers-registries.conf(5), which CRI-O reads: the machine-config operator's
	// container-runtime-config controller writes it for the mirror sets (openshift/machine-config-operator
	// templates/master/01-master-container-runtime/_base/files/container-registries.yaml, mode 0644).
	RegistriesConfPath = "/etc/containers/registries.conf"
	// UserCATrustAnchorPath is where the machine-config operator puts openshift-config/user-ca-bundle on the
	// node (templates/common/_base/files/additional-trust-bundle.yaml, mode 0600; pkg/daemon/constants
	// UserCABundlePath). RHCOS's coreos-update-ca-trust.service runs update-ca-trust at boot, so the system
	// trust store, and with it CRI-O's pulls, trust it from the first boot.
	UserCATrustAnchorPath = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"
	// WorkloadPinningPath tells the kubelet to expose the management workload's CPU capacity (and pin
	// annotated static pods); CRIOWorkloadPinningPath is CRI-O's management workload. Both as the node tuning
	// operator renders them for a CPU-partitioned cluster at install (openshift/cluster-node-tuning-operator
	// pkg/performanceprofile/controller/performanceprofile/components/machineconfig BootstrapWorkloadPinningMC,
	// MachineConfig 01-<role>-cpu-partitioning, from assets/performanceprofile/configs/openshift-workload-pinning
	// and 99-workload-pinning.conf with an empty reserved set: every CPU, until a PerformanceProfile narrows it).
	WorkloadPinningPath     = "/etc/kubernetes/openshift-workload-pinning"
	CRIOWorkloadPinningPath = "/etc/crio/crio.conf.d/01-workload-pinning-default.conf"
	// EncapsulatedMachineConfigPath is where the machine-config server puts the node's MachineConfig in the
	// Ignition config it serves (openshift/machine-config-operator pkg/server/server.go appendEncapsulated, mode
	// 0644; pkg/daemon/constants MachineConfigEncapsulatedPath). RHCOS reads it from the Ignition config itself,
	// in the initramfs on the first boot, before the files are written: when its spec.fips is true, rhcos-fips
	// adds the kernel arguments fips=1 and boot=LABEL=boot and has the machine reboot into FIPS mode
	// (coreos/rhel-coreos-config overlay.d/05rhcos/usr/lib/dracut/modules.d/40rhcos-fips/rhcos-fips.sh
	// firstboot; "finish" then runs fips-mode-setup on EL9). aio.ign carries it only for fips: true.
	EncapsulatedMachineConfigPath = "/etc/ignition-machine-config-encapsulated.json"
)

// baseUnqualifiedSearchRegistries is the machine-config operator's base registries.conf
// (container-registries.yaml): unqualified-search-registries = ['registry.access.redhat.com', 'docker.io'].
var baseUnqualifiedSearchRegistries = []string{"registry.access.redhat.com", "docker.io"}

// mirrorSet is one install-config mirror entry, as runtime-utils' registries package reads an
// ImageDigestMirrorSet / ImageContentSourcePolicy entry.
type mirrorSet struct {
	source       string
	mirrors      []string
	neverContact bool
}

func installConfigMirrorSets(ic *installconfig.InstallConfig) []mirrorSet {
	var out []mirrorSet
	for _, s := range ic.ImageDigestSources {
		out = append(out, mirrorSet{source: s.Source, mirrors: s.Mirrors, neverContact: s.SourcePolicy == installconfig.SourcePolicyNeverContactSource})
	}
	for _, s := range ic.ImageContentSources {
		out = append(out, mirrorSet{source: s.Source, mirrors: s.Mirrors})
	}
	return out
}

// registry is one [[registry]] entry of the result.
type registry struct {
	location string
	blocked  bool
	mirrors  []string // each pull-from-mirror = "digest-only"
}

// RegistriesConf is /etc/containers/registries.conf for the install-config's mirrors, byte for byte as the
// machine-config operator writes it for the mirror-set objects the installer exports (clusterconfig.mirrorSets),
// or nil without mirrors (RHCOS's own file stays). The rules are openshift/runtime-utils pkg/registries
// (EditRegistriesConfig, mergedDigestMirrorSets, topo.go), which the MCO's container-runtime-config controller
// (pkg/controller/container-runtime-config/helpers.go updateRegistriesConfig) applies to its base file:
//   - entries are grouped by source, sources in lexical order; an entry whose mirrors are only the source is
//     not a mirror set;
//   - a source's mirrors are merged in an order that respects every entry's order (each entry's mirrors form a
//     chain that ends in the source), ties broken lexically, a cycle broken at the lexically first unused
//     mirror; the source itself is dropped when it comes last;
//   - every mirror is pull-from-mirror = "digest-only" (ImageDigestMirrorSet and ImageContentSourcePolicy
//     alike); a source with NeverContactSource is blocked = true.
//
// The encoding is BurntSushi/toml v1.5's (the MCO's encoder) of containers/image v5.35's V2RegistriesConf: its
// plain keys first (unqualified-search-registries, short-name-mode and additional-layer-store-auth-helper, both
// empty), then each [[registry]] and its [[registry.mirror]] tables, indented two spaces per level.
func RegistriesConf(ic *installconfig.InstallConfig) []byte {
	regs := mergedRegistries(installConfigMirrorSets(ic))
	if len(regs) == 0 {
		return nil
	}
	var b strings.Builder
	quoted := make([]string, len(baseUnqualifiedSearchRegistries))
	for i, r := range baseUnqualifiedSearchRegistries {
		quoted[i] = tomlString(r)
	}
	fmt.Fprintf(&b, "unqualified-search-registries = [%s]\n", strings.Join(quoted, ", "))
	b.WriteString("short-name-mode = \"\"\n")
	b.WriteString("additional-layer-store-auth-helper = \"\"\n")
	for _, r := range regs {
		b.WriteString("\n[[registry]]\n")
		b.WriteString("  prefix = \"\"\n")
		fmt.Fprintf(&b, "  location = %s\n", tomlString(r.location))
		if r.blocked {
			b.WriteString("  blocked = true\n")
		}
		for _, m := range r.mirrors {
			b.WriteString("\n  [[registry.mirror]]\n")
			fmt.Fprintf(&b, "    location = %s\n", tomlString(m))
			b.WriteString("    pull-from-mirror = \"digest-only\"\n")
		}
	}
	return []byte(b.String())
}

// tomlString quotes s as a TOML basic string (locations are validated image repositories: no quotes,
// backslashes or control characters, so strconv's quoting is TOML's).
func tomlString(s string) string { return strconv.Quote(s) }

// mergedRegistries groups the mirror sets by source, as runtime-utils' mirrorSets/mergedMirrorSets do.
func mergedRegistries(sets []mirrorSet) []registry {
	bySource := map[string][][]string{}
	blocked := map[string]bool{}
	for _, s := range sets {
		real := false
		for _, m := range s.mirrors {
			if m != s.source {
				real = true
			}
		}
		if !real {
			continue
		}
		if s.neverContact {
			blocked[s.source] = true
		}
		bySource[s.source] = append(bySource[s.source], s.mirrors)
	}
	var out []registry
	for _, src := range slices.Sorted(maps.Keys(bySource)) {
		g := newOrderGraph()
		for _, chain := range bySource[src] {
			for i := 0; i+1 < len(chain); i++ {
				g.edge(chain[i], chain[i+1])
			}
			hasSource := false
			for _, m := range chain {
				hasSource = hasSource || m == src
			}
			if !hasSource {
				g.edge(chain[len(chain)-1], src)
			}
		}
		order := g.sorted()
		if order[len(order)-1] == src {
			order = order[:len(order)-1]
		}
		out = append(out, registry{location: src, blocked: blocked[src], mirrors: order})
	}
	return out
}

// orderGraph is a directed graph of repositories whose sorted order respects its edges where it can: Kahn's
// algorithm with the ready nodes taken in lexical order, and a cycle broken at the lexically first unused node
// (runtime-utils pkg/registries/topo.go behaves the same; this is our own implementation).
type orderGraph struct {
	nodes map[string]bool
	outs  map[string]map[string]bool
	ins   map[string]map[string]bool
}

func newOrderGraph() *orderGraph {
	return &orderGraph{nodes: map[string]bool{}, outs: map[string]map[string]bool{}, ins: map[string]map[string]bool{}}
}

func (g *orderGraph) edge(from, to string) {
	for _, n := range []string{from, to} {
		if !g.nodes[n] {
			g.nodes[n] = true
			g.outs[n] = map[string]bool{}
			g.ins[n] = map[string]bool{}
		}
	}
	g.outs[from][to] = true
	g.ins[to][from] = true
}

func (g *orderGraph) sorted() []string {
	all := make([]string, 0, len(g.nodes))
	for n := range g.nodes {
		all = append(all, n)
	}
	sort.Strings(all)
	pending := map[string]int{} // unprocessed predecessors
	for _, n := range all {
		pending[n] = len(g.ins[n])
	}
	var queue []string
	for _, n := range all {
		if pending[n] == 0 {
			queue = append(queue, n)
		}
	}
	used := map[string]bool{}
	var out []string
	next := 0 // into all, for breaking cycles
	for len(out) < len(all) {
		var n string
		if len(queue) > 0 {
			n, queue = queue[0], queue[1:]
		} else {
			for used[all[next]] {
				next++
			}
			n = all[next]
		}
		used[n] = true
		out = append(out, n)
		var ready []string
		for succ := range g.outs[n] {
			pending[succ]--
			if pending[succ] == 0 && !used[succ] {
				ready = append(ready, succ)
			}
		}
		sort.Strings(ready)
		queue = append(queue, ready...)
	}
	return out
}

// userCATrustAnchor is the node's copy of openshift-config/user-ca-bundle (the MCO writes the user CA bundle
// whatever additionalTrustBundlePolicy says: pkg/operator/sync.go getTrustedBundle), or nil.
func userCATrustAnchor(ic *installconfig.InstallConfig) []byte {
	if b := clusterconfig.UserCABundle(ic); b != "" {
		return []byte(b)
	}
	return nil
}

// workloadPinning are the two node files of cpuPartitioningMode: AllNodes (see WorkloadPinningPath), as the
// templates render with workload "management" and an empty reserved CPU set; nil otherwise.
func workloadPinning(ic *installconfig.InstallConfig) (kubelet, crio []byte) {
	if ic.CPUPartitioningMode != installconfig.CPUPartitioningAllNodes {
		return nil, nil
	}
	kubelet = []byte("\n{\n  \"management\": {\n    \"cpuset\": \"\"\n  }\n}\n")
	crio = []byte("\n[crio.runtime.workloads.management]\n" +
		"activation_annotation = \"target.workload.openshift.io/management\"\n" +
		"annotation_prefix = \"resources.workload.openshift.io\"\n" +
		"resources = { \"cpushares\" = 0, \"cpuset\" = \"\" }\n")
	return kubelet, crio
}

// fipsMachineConfig is the MachineConfig aio.ign encapsulates for fips: true (see EncapsulatedMachineConfigPath):
// the installer's 99-<role>-fips (openshift/installer pkg/asset/machines/machineconfig ForFIPSEnabled: role label
// master, or worker for a worker's config, an Ignition config of nothing but its version, fips true), serialized
// as the machine-config server serializes the node's config into the file (encoding/json of the MachineConfig);
// the Ignition version is aio.ign's own. nil when fips is not set.
func fipsMachineConfig(ic *installconfig.InstallConfig, role string) ([]byte, error) {
	if !ic.FIPS {
		return nil, nil
	}
	// Only the version, as the installer's config marshals with its empty sections left out.
	ign, err := json.Marshal(map[string]map[string]string{"ignition": {"version": ignitiontypes.MaxVersion.String()}})
	if err != nil {
		return nil, err
	}
	mc := mcfgv1.MachineConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: "99-" + role + "-fips",
			Labels: map[string]string{"machineconfiguration.openshift.io/role": role}},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: ign}, FIPS: true},
	}
	return json.Marshal(&mc)
}
