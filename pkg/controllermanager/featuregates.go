package controllermanager

import (
	"context"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/api/features"
	configlisters "github.com/openshift/client-go/config/listers/config/v1"
	"github.com/openshift/library-go/pkg/operator/configobserver/featuregates"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// FeatureGates is the feature-gate access the kube-controller-manager and kube-scheduler loops read, in place of
// the library-go reader a running operator starts (which follows featuregates.config.openshift.io/cluster and
// exits the process when the gates change). It reads at every call, so it never goes stale within a render:
//
//   - if featuregates.config.openshift.io/cluster has a status (as cluster-config-operator writes it), its first
//     entry is used: offline there is one payload version;
//   - otherwise the gates are what the pinned openshift/api declares for the install-config's featureSet on a
//     self-managed cluster (Default when empty), with customNoUpgrade's enabled/disabled gates applied on top of
//     Default for CustomNoUpgrade, which is what cluster-config-operator computes.
//
// Both lists are sorted by name, enabled gates first, as in the FeatureGate status.
func FeatureGates(c *loops.Cluster, in *clusterconfig.Inputs) featuregates.FeatureGateAccess {
	return &featureGateAccess{lister: c.ConfigInformers.Config().V1().FeatureGates().Lister(), in: in}
}

type featureGateAccess struct {
	lister configlisters.FeatureGateLister
	in     *clusterconfig.Inputs
}

var observed = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

func (f *featureGateAccess) SetChangeHandler(featuregates.FeatureGateChangeHandlerFunc) {}
func (f *featureGateAccess) Run(context.Context)                                        {}
func (f *featureGateAccess) InitialFeatureGatesObserved() <-chan struct{}               { return observed }
func (f *featureGateAccess) AreInitialFeatureGatesObserved() bool                       { return true }

func (f *featureGateAccess) CurrentFeatureGates() (featuregates.FeatureGate, error) {
	if fg, err := f.lister.Get("cluster"); err == nil && len(fg.Status.FeatureGates) > 0 {
		var enabled, disabled []configv1.FeatureGateName
		for _, a := range fg.Status.FeatureGates[0].Enabled {
			enabled = append(enabled, a.Name)
		}
		for _, a := range fg.Status.FeatureGates[0].Disabled {
			disabled = append(disabled, a.Name)
		}
		return featuregates.NewFeatureGate(enabled, disabled), nil
	}
	enabled, disabled, err := DefaultFeatureGates(f.in.InstallConfig)
	if err != nil {
		return nil, err
	}
	return featuregates.NewFeatureGate(enabled, disabled), nil
}

// DefaultFeatureGates are the gates of the install-config's feature set in the pinned openshift/api.
func DefaultFeatureGates(ic *installconfig.InstallConfig) (enabled, disabled []configv1.FeatureGateName, err error) {
	set := configv1.FeatureSet(ic.FeatureSet)
	base := set
	if set == configv1.CustomNoUpgrade {
		base = configv1.Default
	}
	gates, err := features.FeatureSets(features.SelfManaged, base)
	if err != nil {
		return nil, nil, fmt.Errorf("feature set %q: %w", ic.FeatureSet, err)
	}
	state := map[configv1.FeatureGateName]bool{}
	for _, g := range gates.Enabled {
		state[g.FeatureGateAttributes.Name] = true
	}
	for _, g := range gates.Disabled {
		state[g.FeatureGateAttributes.Name] = false
	}
	if set == configv1.CustomNoUpgrade {
		for _, g := range ic.FeatureGates {
			name, value, ok := strings.Cut(g, "=")
			if !ok {
				return nil, nil, fmt.Errorf("featureGates: %q is not Name=true|false", g)
			}
			state[configv1.FeatureGateName(strings.TrimSpace(name))] = strings.TrimSpace(value) == "true"
		}
	}
	for name, on := range state {
		if on {
			enabled = append(enabled, name)
		} else {
			disabled = append(disabled, name)
		}
	}
	sort.Slice(enabled, func(i, j int) bool { return enabled[i] < enabled[j] })
	sort.Slice(disabled, func(i, j int) bool { return disabled[i] < disabled[j] })
	return enabled, disabled, nil
}
