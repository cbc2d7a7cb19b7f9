package clusterconfig

import (
	"github.com/render-static/render-static/pkg/loops"
	"k8s.io/apimachinery/pkg/runtime"
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/api/features"

	"github.com/render-static/render-static/pkg/installconfig"
)

func names(l []configv1.FeatureGateAttributes) []configv1.FeatureGateName {
	var out []configv1.FeatureGateName
	for _, a := range l {
		out = append(out, a.Name)
	}
	return out
}

func featureGate(t *testing.T, set string, gates ...string) (*configv1.FeatureGate, []configv1.FeatureGateName, []configv1.FeatureGateName) {
	t.Helper()
	in := &Inputs{InstallConfig: &installconfig.InstallConfig{FeatureSet: set, FeatureGates: gates},
		Images: Images{"cluster-kube-apiserver-operator": "quay.io/openshift/origin-cluster-kube-apiserver-operator:4.20"}}
	fg, err := FeatureGate(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(fg.Status.FeatureGates) != 1 || fg.Status.FeatureGates[0].Version != "4.20" {
		t.Fatalf("%s: status.featureGates %d entries, want one for the payload version 4.20", set, len(fg.Status.FeatureGates))
	}
	e, d := names(fg.Status.FeatureGates[0].Enabled), names(fg.Status.FeatureGates[0].Disabled)
	if !slices.IsSorted(e) || !slices.IsSorted(d) || len(e) == 0 || len(d) == 0 {
		t.Errorf("%s: enabled %d, disabled %d gates, each must be sorted and non-empty", set, len(e), len(d))
	}
	for _, n := range e {
		if slices.Contains(d, n) {
			t.Errorf("%s: %s both enabled and disabled", set, n)
		}
	}
	return fg, e, d
}

// TestFeatureGate: the FeatureGate's status is the pinned openshift/api's feature set (self-managed profile), and
// CustomNoUpgrade is Default with the install-config's gates applied.
func TestFeatureGate(t *testing.T) {
	def, defOn, defOff := featureGate(t, "")
	tp, tpOn, _ := featureGate(t, installconfig.FeatureSetTechPreviewNoUpgrade)
	want, _ := features.FeatureSets(features.SelfManaged, configv1.TechPreviewNoUpgrade)
	if len(tpOn) != len(want.Enabled) || len(tpOn) <= len(defOn) {
		t.Errorf("TechPreviewNoUpgrade enables %d gates (openshift/api: %d), Default %d", len(tpOn), len(want.Enabled), len(defOn))
	}
	const tpOnly = "MutatingAdmissionPolicy"
	if !slices.Contains(tpOn, tpOnly) || !slices.Contains(defOff, tpOnly) {
		t.Errorf("%s: on in TechPreviewNoUpgrade %v, off in Default %v", tpOnly, slices.Contains(tpOn, tpOnly), slices.Contains(defOff, tpOnly))
	}
	if def.Spec.FeatureSet != "" || tp.Spec.FeatureSet != configv1.TechPreviewNoUpgrade || def.Annotations[string(features.SelfManaged)] != "true" {
		t.Errorf("spec.featureSet %q / %q, annotations %v", def.Spec.FeatureSet, tp.Spec.FeatureSet, def.Annotations)
	}

	on := defOn[0]
	custom, cOn, cOff := featureGate(t, installconfig.FeatureSetCustomNoUpgrade, string(on)+"=false", tpOnly+"=true", "SomeKubeGate=true")
	if c := custom.Spec.CustomNoUpgrade; custom.Spec.FeatureSet != configv1.CustomNoUpgrade || c == nil ||
		!slices.Equal(c.Enabled, []configv1.FeatureGateName{tpOnly, "SomeKubeGate"}) || !slices.Equal(c.Disabled, []configv1.FeatureGateName{on}) {
		t.Errorf("spec %+v", custom.Spec)
	}
	if slices.Contains(cOn, on) || !slices.Contains(cOff, on) || !slices.Contains(cOn, tpOnly) || !slices.Contains(cOn, "SomeKubeGate") {
		t.Errorf("CustomNoUpgrade did not apply %s=false, %s=true, SomeKubeGate=true", on, tpOnly)
	}
	if len(cOn)+len(cOff) != len(defOn)+len(defOff)+1 {
		t.Errorf("CustomNoUpgrade has %d gates, Default %d plus one new", len(cOn)+len(cOff), len(defOn)+len(defOff))
	}
	// Every other gate keeps its Default state.
	for _, g := range defOn {
		if g != on && !slices.Contains(cOn, g) {
			t.Errorf("CustomNoUpgrade turned off %s", g)
		}
	}

	if _, err := FeatureGate(&Inputs{InstallConfig: &installconfig.InstallConfig{FeatureSet: installconfig.FeatureSetCustomNoUpgrade,
		FeatureGates: []string{"A=true", "A=false"}}}); err == nil {
		t.Errorf("a gate both enabled and disabled is not an error")
	}
	if _, err := FeatureGate(&Inputs{InstallConfig: &installconfig.InstallConfig{FeatureSet: "Bogus"}}); err == nil {
		t.Errorf("an unknown feature set is not an error")
	}
	if v := (&Inputs{Images: Images{"cluster-kube-apiserver-operator": "r.example/kas-o@sha256:1"}}).PayloadVersion(); v != DefaultPayloadVersion {
		t.Errorf("payload version of a digest image: %q", v)
	}
}

// TestFeatureGatesAccess: components read the status entry of the payload version, and nothing else.
func TestFeatureGatesAccess(t *testing.T) {
	in := &Inputs{InstallConfig: &installconfig.InstallConfig{FeatureSet: installconfig.FeatureSetTechPreviewNoUpgrade},
		Images: Images{"cluster-kube-apiserver-operator": "x.example/kas-o:4.99"}}
	fg, err := FeatureGate(in)
	if err != nil {
		t.Fatal(err)
	}
	cluster := func(objs ...runtime.Object) *loops.Cluster {
		c, err := loops.NewCluster(nil, nil, objs...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := cluster(fg)
	gates, err := FeatureGates(c, in).CurrentFeatureGates()
	if err != nil {
		t.Fatal(err)
	}
	if !gates.Enabled("MutatingAdmissionPolicy") || len(gates.KnownFeatures()) != len(fg.Status.FeatureGates[0].Enabled)+len(fg.Status.FeatureGates[0].Disabled) {
		t.Errorf("gates %d, MutatingAdmissionPolicy %v", len(gates.KnownFeatures()), gates.Enabled("MutatingAdmissionPolicy"))
	}
	other := &Inputs{Images: Images{"cluster-kube-apiserver-operator": "x.example/kas-o:4.98"}}
	if _, err := FeatureGates(c, other).CurrentFeatureGates(); err == nil {
		t.Errorf("no error for a payload version the FeatureGate has no entry for")
	}
	empty := cluster()
	if _, err := FeatureGates(empty, in).CurrentFeatureGates(); err == nil {
		t.Errorf("no error without a FeatureGate")
	}
}
