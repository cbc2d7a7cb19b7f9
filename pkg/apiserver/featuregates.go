package apiserver

import (
	"fmt"
	"sort"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/library-go/pkg/operator/configobserver"
	"github.com/openshift/library-go/pkg/operator/configobserver/featuregates"
	"github.com/openshift/library-go/pkg/operator/events"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/operator"
)

// apiVersionsByGate: the API group versions kube-apiserver must serve when a feature gate is on, each for a range
// of Kubernetes versions [from, before). The operator's table (cluster-kube-apiserver-operator
// pkg/operator/configobservation/apienablement/observe_runtime_config.go, late 2025, the age of the pinned
// openshift/api and library-go): MutatingAdmissionPolicy serves admissionregistration.k8s.io/v1alpha1 from 1.33
// and v1beta1 from 1.34, both before 1.36.
var apiVersionsByGate = map[configv1.FeatureGateName][]struct{ groupVersion, from, before string }{
	"MutatingAdmissionPolicy": {
		{"admissionregistration.k8s.io/v1alpha1", "1.33.0", "1.36.0"},
		{"admissionregistration.k8s.io/v1beta1", "1.34.0", "1.36.0"},
	},
}

// RuntimeConfig is --runtime-config for the gates of the cluster and an operand Kubernetes version: "<group
// version>=true" for every API version an enabled gate needs at that version, sorted.
func RuntimeConfig(gates featuregates.FeatureGate, kubeVersion string) ([]string, error) {
	v, err := version.ParseGeneric(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("operand Kubernetes version: %w", err)
	}
	var out []string
	for gate, gvs := range apiVersionsByGate {
		if !gates.Enabled(gate) {
			continue
		}
		for _, gv := range gvs {
			if v.AtLeast(version.MustParseGeneric(gv.from)) && v.LessThan(version.MustParseGeneric(gv.before)) {
				out = append(out, gv.groupVersion+"=true")
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// observeFeatureGates sets apiServerArguments.feature-gates (library-go's observer: every gate of the cluster's
// FeatureGate as Name=true|false) and apiServerArguments.runtime-config (RuntimeConfig for the operand Kubernetes
// version, the version of the render's Kubernetes libraries), as the operator's
// NewFeatureGateObserverWithRuntimeConfig does: both or neither.
func observeFeatureGates(gates featuregates.FeatureGateAccess) configobserver.ObserveConfigFunc {
	featureGatesPath := []string{"apiServerArguments", "feature-gates"}
	runtimeConfigPath := []string{"apiServerArguments", "runtime-config"}
	flags := operator.ObserveFeatureGates(gates, featureGatesPath...)
	return func(l configobserver.Listers, rec events.Recorder, existing map[string]interface{}) (out map[string]interface{}, errs []error) {
		defer func() { out = configobserver.Pruned(out, featureGatesPath, runtimeConfigPath) }()
		current, err := gates.CurrentFeatureGates()
		if err != nil {
			return existing, []error{err}
		}
		runtimeConfig, err := RuntimeConfig(current, clusterconfig.KubeletVersion())
		if err != nil {
			return existing, []error{err}
		}
		out, errs = flags(l, rec, existing)
		if len(runtimeConfig) == 0 {
			return out, errs
		}
		if err := unstructured.SetNestedStringSlice(out, runtimeConfig, runtimeConfigPath...); err != nil {
			return existing, append(errs, err)
		}
		return out, errs
	}
}
