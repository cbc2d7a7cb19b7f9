package controllermanager

import (
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/loops"
)

func gates(t *testing.T, ic *installconfig.InstallConfig) (enabled, disabled []configv1.FeatureGateName) {
	t.Helper()
	e, d, err := DefaultFeatureGates(ic)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(e) || !slices.IsSorted(d) || len(e) == 0 || len(d) == 0 {
		t.Errorf("feature set %q: enabled %d, disabled %d gates, each must be sorted and non-empty", ic.FeatureSet, len(e), len(d))
	}
	return e, d
}

func TestDefaultFeatureGates(t *testing.T) {
	defEnabled, _ := gates(t, &installconfig.InstallConfig{})
	tpEnabled, _ := gates(t, &installconfig.InstallConfig{FeatureSet: installconfig.FeatureSetTechPreviewNoUpgrade})
	if len(tpEnabled) <= len(defEnabled) {
		t.Errorf("TechPreviewNoUpgrade enables %d gates, Default %d", len(tpEnabled), len(defEnabled))
	}
	on, off := defEnabled[0], configv1.FeatureGateName("Example")
	customEnabled, customDisabled := gates(t, &installconfig.InstallConfig{
		FeatureSet:   installconfig.FeatureSetCustomNoUpgrade,
		FeatureGates: []string{string(on) + "=false", string(off) + "=true"},
	})
	if slices.Contains(customEnabled, on) || !slices.Contains(customDisabled, on) || !slices.Contains(customEnabled, off) {
		t.Errorf("CustomNoUpgrade did not apply %s=false and %s=true", on, off)
	}
	if _, _, err := DefaultFeatureGates(&installconfig.InstallConfig{FeatureSet: "Bogus"}); err == nil {
		t.Errorf("an unknown feature set is not an error")
	}
}

// TestFeatureGatesFromCluster: a FeatureGate status (cluster-config-operator's) wins over the install-config.
func TestFeatureGatesFromCluster(t *testing.T) {
	fg := &configv1.FeatureGate{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Status: configv1.FeatureGateStatus{
		FeatureGates: []configv1.FeatureGateDetails{{Version: "4.99.0",
			Enabled:  []configv1.FeatureGateAttributes{{Name: "A"}},
			Disabled: []configv1.FeatureGateAttributes{{Name: "B"}}}},
	}}
	c, err := loops.NewCluster(nil, nil, fg)
	if err != nil {
		t.Fatal(err)
	}
	access := FeatureGates(c, &clusterconfig.Inputs{InstallConfig: &installconfig.InstallConfig{}})
	got, err := access.CurrentFeatureGates()
	if err != nil {
		t.Fatal(err)
	}
	if known := got.KnownFeatures(); len(known) != 2 || !got.Enabled("A") || got.Enabled("B") {
		t.Errorf("gates %v, want A on and B off", known)
	}
}
