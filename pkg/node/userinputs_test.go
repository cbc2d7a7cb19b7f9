package node

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	ignitionconfig "github.com/coreos/ignition/v2/config/v3_2"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
)

const disconnectedConfig = "testdata/installconfig/nodeinputs/disconnected.yaml"

// TestRegistriesConf: the mirrors of an install-config end up in /etc/containers/registries.conf exactly as the
// machine-config operator writes it (runtime-utils merge rules, BurntSushi/toml encoding): sources in lexical
// order, the two entries of one source merged in an order that respects both, every mirror digest-only, the
// NeverContactSource source blocked; 0644 as the MCO's template.
func TestRegistriesConf(t *testing.T) {
	f := newFixture(t, disconnectedConfig, "", true)
	f.converge(t)
	got := fileOf(t, f.tree(t), RegistriesConfPath)
	want := `unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]
short-name-mode = ""
additional-layer-store-auth-helper = ""

[[registry]]
  prefix = ""
  location = "quay.io/openshift-release-dev/ocp-release"

  [[registry.mirror]]
    location = "a-first.example.com/ocp/release"
    pull-from-mirror = "digest-only"

  [[registry.mirror]]
    location = "mirror.example.com:8443/ocp/release"
    pull-from-mirror = "digest-only"

  [[registry.mirror]]
    location = "backup.example.com/ocp/release"
    pull-from-mirror = "digest-only"

[[registry]]
  prefix = ""
  location = "quay.io/openshift-release-dev/ocp-v4.0-art-dev"
  blocked = true

  [[registry.mirror]]
    location = "mirror.example.com:8443/ocp/release"
    pull-from-mirror = "digest-only"
`
	if string(got.Contents) != want {
		t.Errorf("registries.conf:\n%s\nwant:\n%s", got.Contents, want)
	}
	if got.Mode != 0644 {
		t.Errorf("registries.conf mode %o, want 0644", got.Mode)
	}

	// The deprecated imageContentSources give the same file (digest-only mirrors, nothing blocked).
	g := newFixture(t, "testdata/installconfig/nodeinputs/icsp-always.yaml", "", true)
	g.converge(t)
	icsp := string(fileOf(t, g.tree(t), RegistriesConfPath).Contents)
	for _, s := range []string{
		"[[registry]]\n  prefix = \"\"\n  location = \"quay.io/openshift-release-dev/ocp-release\"\n\n  [[registry.mirror]]\n    location = \"mirror.example.com:5000/ocp4/openshift4\"\n    pull-from-mirror = \"digest-only\"\n",
		"location = \"quay.io/openshift-release-dev/ocp-v4.0-art-dev\"\n\n  [[registry.mirror]]",
	} {
		if !strings.Contains(icsp, s) {
			t.Errorf("registries.conf from imageContentSources lacks %q:\n%s", s, icsp)
		}
	}
	if strings.Contains(icsp, "blocked") {
		t.Errorf("imageContentSources block a source:\n%s", icsp)
	}

	// Without mirrors RHCOS's own registries.conf stays.
	h := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	h.converge(t)
	for _, fl := range h.tree(t).Files() {
		if fl.Path == RegistriesConfPath {
			t.Errorf("registries.conf without mirrors:\n%s", fl.Contents)
		}
	}
}

// TestMergedMirrorOrder: the merge of one source's mirror lists (runtime-utils mergedMirrors): an order that
// respects every list, ties and cycles broken lexically, a source listed among its own mirrors kept where it is
// unless it comes last, an entry that only repeats the source ignored.
func TestMergedMirrorOrder(t *testing.T) {
	const src = "src.example.com/r"
	cases := []struct {
		name string
		sets [][]string
		want []string
	}{
		{"one list keeps its order", [][]string{{"z.example.com/r", "a.example.com/r"}}, []string{"z.example.com/r", "a.example.com/r"}},
		{"(B, C) and (A, B) give (A, B, C)", [][]string{{"b.example.com/r", "c.example.com/r"}, {"a.example.com/r", "b.example.com/r"}},
			[]string{"a.example.com/r", "b.example.com/r", "c.example.com/r"}},
		{"a cycle is broken at the lexically first", [][]string{{"b.example.com/r", "a.example.com/r"}, {"a.example.com/r", "b.example.com/r"}},
			[]string{"a.example.com/r", "b.example.com/r"}},
		{"the source before a mirror stays", [][]string{{src, "m.example.com/r"}}, []string{src, "m.example.com/r"}},
		{"only the source is no mirror set", [][]string{{src}}, nil},
	}
	for _, c := range cases {
		var sets []mirrorSet
		for _, m := range c.sets {
			sets = append(sets, mirrorSet{source: src, mirrors: m})
		}
		regs := mergedRegistries(sets)
		var got []string
		if len(regs) == 1 {
			got = regs[0].mirrors
		} else if len(regs) > 1 {
			t.Fatalf("%s: %d registries", c.name, len(regs))
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: mirrors %v, want %v", c.name, got, c.want)
		}
	}
}

// TestUserCATrustAnchor: the additional trust bundle is on the node's trust store, 0600 as the MCO writes it,
// whatever additionalTrustBundlePolicy says; its certificates parse; without a bundle there is no anchor.
func TestUserCATrustAnchor(t *testing.T) {
	for _, config := range []string{disconnectedConfig, "testdata/installconfig/nodeinputs/icsp-always.yaml", "testdata/installconfig/good/proxy.yaml"} {
		f := newFixture(t, config, "", true)
		f.converge(t)
		a := fileOf(t, f.tree(t), UserCATrustAnchorPath)
		if a.Mode != 0600 {
			t.Errorf("%s: anchor mode %o, want 0600", config, a.Mode)
		}
		if strings.Contains(string(a.Contents), "#") {
			t.Errorf("%s: the anchor is not the bare PEM bundle:\n%s", config, a.Contents)
		}
		got, err := certs.ParseCertificates(a.Contents)
		want := f.in.InstallConfig.TrustBundle()
		if err != nil || len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: anchor has %d certificates (%v), the install-config %d", config, len(got), err, len(want))
		}
		for i := range want {
			if !got[i].Equal(want[i]) {
				t.Errorf("%s: anchor certificate %d is %s, want %s", config, i, got[i].Subject, want[i].Subject)
			}
		}
	}
	g := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	g.converge(t)
	for _, fl := range g.tree(t).Files() {
		if fl.Path == UserCATrustAnchorPath {
			t.Error("a trust anchor without additionalTrustBundle")
		}
	}
}

// TestWorkloadPinning: cpuPartitioningMode AllNodes puts the kubelet's workload-pinning file and CRI-O's
// management workload on the node as the node tuning operator's bootstrap MachineConfig does (empty CPU set);
// None puts neither.
func TestWorkloadPinning(t *testing.T) {
	f := newFixture(t, disconnectedConfig, "", true)
	f.converge(t)
	if f.in.InstallConfig.CPUPartitioningMode != installconfig.CPUPartitioningAllNodes {
		t.Fatal("the test config is not AllNodes")
	}
	tr := f.tree(t)
	k := fileOf(t, tr, WorkloadPinningPath)
	if string(k.Contents) != "\n{\n  \"management\": {\n    \"cpuset\": \"\"\n  }\n}\n" || k.Mode != 0644 {
		t.Errorf("%s (%o):\n%s", WorkloadPinningPath, k.Mode, k.Contents)
	}
	c := fileOf(t, tr, CRIOWorkloadPinningPath)
	for _, want := range []string{
		"[crio.runtime.workloads.management]\n",
		"activation_annotation = \"target.workload.openshift.io/management\"\n",
		"annotation_prefix = \"resources.workload.openshift.io\"\n",
		"resources = { \"cpushares\" = 0, \"cpuset\" = \"\" }\n",
	} {
		if !strings.Contains(string(c.Contents), want) {
			t.Errorf("%s lacks %q:\n%s", CRIOWorkloadPinningPath, want, c.Contents)
		}
	}
	g := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	g.converge(t)
	for _, fl := range g.tree(t).Files() {
		if fl.Path == WorkloadPinningPath || fl.Path == CRIOWorkloadPinningPath {
			t.Errorf("%s with cpuPartitioningMode None", fl.Path)
		}
	}
}

// TestFIPSMachineConfig: fips: true puts on the node, through aio.ign, the MachineConfig RHCOS's rhcos-fips reads
// from the Ignition config on the first boot (EncapsulatedMachineConfigPath): 0644 as the machine-config server
// writes it, a MachineConfig of machineconfiguration.openshift.io/v1 (no field the API type lacks), the installer's
// 99-master-fips with spec.fips the JSON true that rhcos-fips tests (`jq .spec.fips` must print true, not
// "true" or null), and a spec.config Ignition accepts. Without fips the file is not there: rhcos-fips then leaves
// the node as it is.
func TestFIPSMachineConfig(t *testing.T) {
	f := newFixture(t, disconnectedConfig, "", true)
	f.in.InstallConfig.FIPS = true
	f.converge(t)
	file := fileOf(t, f.tree(t), EncapsulatedMachineConfigPath)
	if file.Mode != 0644 {
		t.Errorf("%s: mode %o, want 644", EncapsulatedMachineConfigPath, file.Mode)
	}
	var generic struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(file.Contents, &generic); err != nil {
		t.Fatalf("%s: %v\n%s", EncapsulatedMachineConfigPath, err, file.Contents)
	}
	if got := string(generic.Spec["fips"]); got != "true" {
		t.Errorf(".spec.fips is %s, want true:\n%s", got, file.Contents)
	}
	var mc mcfgv1.MachineConfig
	dec := json.NewDecoder(bytes.NewReader(file.Contents))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&mc); err != nil {
		t.Fatalf("%s is not a MachineConfig: %v\n%s", EncapsulatedMachineConfigPath, err, file.Contents)
	}
	if mc.APIVersion != "machineconfiguration.openshift.io/v1" || mc.Kind != "MachineConfig" || mc.Name != "99-master-fips" ||
		mc.Labels["machineconfiguration.openshift.io/role"] != "master" || !mc.Spec.FIPS {
		t.Errorf("MachineConfig %+v", mc)
	}
	ign, rpt, err := ignitionconfig.Parse(mc.Spec.Config.Raw)
	if err != nil || rpt.IsFatal() || ign.Ignition.Version != "3.2.0" {
		t.Errorf("spec.config %s: version %q, %v %v", mc.Spec.Config.Raw, ign.Ignition.Version, err, rpt)
	}
	// A worker's is the installer's 99-worker-fips, of the worker pool.
	w := workerOf(f.in, "worker-0")
	f.in.Workers = []clusterconfig.Worker{w}
	f.converge(t)
	wt, err := f.n.WorkerTree(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	var wmc mcfgv1.MachineConfig
	if err := json.Unmarshal(fileOf(t, wt, EncapsulatedMachineConfigPath).Contents, &wmc); err != nil || wmc.Name != "99-worker-fips" ||
		wmc.Labels["machineconfiguration.openshift.io/role"] != "worker" || !wmc.Spec.FIPS {
		t.Errorf("the worker's MachineConfig %+v (%v)", wmc, err)
	}

	g := newFixture(t, disconnectedConfig, "", true)
	g.converge(t)
	for _, fl := range g.tree(t).Files() {
		if fl.Path == EncapsulatedMachineConfigPath {
			t.Errorf("%s without fips", fl.Path)
		}
	}
}
