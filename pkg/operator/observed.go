package operator

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/openshift/library-go/pkg/operator/configobserver"
	"github.com/openshift/library-go/pkg/operator/configobserver/featuregates"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ProxyPath is where library-go's proxy observer puts the cluster-wide proxy in every operator's observed config.
var ProxyPath = []string{"targetconfigcontroller", "proxy"}

// ObserveFeatureGates is library-go's feature-gate observer: every gate of the cluster's FeatureGate (Base.Features),
// as Name=true|false, at path (kube-apiserver's and kube-controller-manager's --feature-gates, cluster-policy-
// controller's featureGates).
func ObserveFeatureGates(gates featuregates.FeatureGateAccess, path ...string) configobserver.ObserveConfigFunc {
	return featuregates.NewObserveFeatureFlagsFunc(nil, nil, path, gates)
}

// DecodeObserved decodes an operator's observed config (empty: an empty map).
func DecodeObserved(raw []byte) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, fmt.Errorf("observedConfig: %w", err)
		}
	}
	return out, nil
}

// ProxyEnv is the cluster-wide proxy the config observer put at path, as environment variables sorted by name.
func ProxyEnv(observed map[string]interface{}, path ...string) ([]corev1.EnvVar, error) {
	m, _, err := unstructured.NestedStringMap(observed, path...)
	if err != nil {
		return nil, fmt.Errorf("observedConfig %s: %w", strings.Join(path, "."), err)
	}
	var env []corev1.EnvVar
	for k, v := range m {
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return env, nil
}

// TLS is the TLS profile of an observed servingInfo (library-go's ObserveTLSSecurityProfile).
type TLS struct {
	MinVersion   string
	CipherSuites []string
}

// ObservedTLS reads servingInfo.minTLSVersion and servingInfo.cipherSuites; either may be missing.
func ObservedTLS(observed map[string]interface{}) (TLS, error) {
	var t TLS
	suites, _, err := unstructured.NestedStringSlice(observed, "servingInfo", "cipherSuites")
	if err != nil {
		return t, fmt.Errorf("observedConfig servingInfo.cipherSuites: %w", err)
	}
	min, _, err := unstructured.NestedString(observed, "servingInfo", "minTLSVersion")
	if err != nil {
		return t, fmt.Errorf("observedConfig servingInfo.minTLSVersion: %w", err)
	}
	return TLS{MinVersion: min, CipherSuites: suites}, nil
}

// Flags are --tls-min-version and --tls-cipher-suites (each only when set), added to f.
func (t TLS) Flags(f *Flags) {
	if t.MinVersion != "" {
		f.Add("tls-min-version", t.MinVersion)
	}
	if len(t.CipherSuites) > 0 {
		f.Add("tls-cipher-suites", strings.Join(t.CipherSuites, ","))
	}
}

// TLSArgs are --tls-cipher-suites and --tls-min-version from the observed servingInfo (the TLS profile), in that
// order, as the OpenShift pods append them to their command line.
func TLSArgs(observed map[string]interface{}) ([]string, error) {
	t, err := ObservedTLS(observed)
	if err != nil {
		return nil, err
	}
	var out []string
	if len(t.CipherSuites) > 0 {
		out = append(out, "--tls-cipher-suites="+strings.Join(t.CipherSuites, ","))
	}
	if t.MinVersion != "" {
		out = append(out, "--tls-min-version="+t.MinVersion)
	}
	return out, nil
}

// UpstreamTLS is the TLS profile an upstream pod needs: minTLSVersion is required.
func UpstreamTLS(observed map[string]interface{}) (TLS, error) {
	t, err := ObservedTLS(observed)
	if err != nil {
		return t, err
	}
	if t.MinVersion == "" {
		return t, fmt.Errorf("observedConfig has no servingInfo.minTLSVersion")
	}
	return t, nil
}
