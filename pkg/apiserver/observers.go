package apiserver

import (
	"fmt"
	"net/netip"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/configobserver"
	libapiserver "github.com/openshift/library-go/pkg/operator/configobserver/apiserver"
	libetcd "github.com/openshift/library-go/pkg/operator/configobserver/etcd"
	"github.com/openshift/library-go/pkg/operator/configobserver/featuregates"
	libnetwork "github.com/openshift/library-go/pkg/operator/configobserver/network"
	libproxy "github.com/openshift/library-go/pkg/operator/configobserver/proxy"
	encryptionobserver "github.com/openshift/library-go/pkg/operator/encryption/observer"
	"github.com/openshift/library-go/pkg/operator/events"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

// Paths in the observed config that the target config and the pod template read.
var (
	gracefulTerminationPath = []string{"gracefulTerminationDuration"}
	bindNetworkPath         = []string{"servingInfo", "bindNetwork"}
)

// AuditPolicyPath is where the installer puts the audit policy the audit-policy loop renders.
const AuditPolicyPath = "/etc/kubernetes/static-pod-resources/configmaps/kube-apiserver-audit-policies/policy.yaml"

// Observers returns kube-apiserver's config observers: library-go's where they exist, ours otherwise. The
// config observer merges their results (the order does not matter).
func Observers(gates featuregates.FeatureGateAccess) []configobserver.ObserveConfigFunc {
	return []configobserver.ObserveConfigFunc{
		observeNamedCertificates,
		libapiserver.ObserveAdditionalCORSAllowedOrigins,
		observeSingleReplicaTimings,
		observeAdmissionPlugins,
		libapiserver.ObserveTLSSecurityProfile,
		observeServiceAccountIssuer,
		observePodSecurity,
		encryptionobserver.NewEncryptionConfigObserver(TargetNamespace, EncryptionConfigPath),
		libetcd.ObserveStorageURLsToArgumentsWithAlwaysLocal,
		observeFeatureGates(gates),
		observeNetwork,
		observeAuthorizationMode,
		libproxy.NewProxyObserveFunc(operator.ProxyPath),
		libapiserver.NewAuditObserver(func(string) (string, error) { return AuditPolicyPath, nil }),
	}
}

// configObserverLoop is library-go's config observer with kube-apiserver's observers. It waits for etcd's
// endpoints (the etcd component publishes them): without them the observed config would have no etcd-servers.
func (k *Component) configObserverLoop() loops.Loop {
	all := k.Cluster.KubeFactory().Core().V1()
	listers := k.Listers()
	listers.ConfigMaps, listers.Secrets = all.ConfigMaps().Lister(), all.Secrets().Lister()
	ctrl := configobserver.NewConfigObserver(ComponentName, k.Op, k.Recorder, listers, []factory.Informer{},
		Observers(listers.FeatureGates)...)
	return k.whenInputs(loops.ControllerLoop("config-observer", ctrl, k.Recorder), etcdEndpoints)
}

func set(out map[string]interface{}, value interface{}, path ...string) []error {
	if err := unstructured.SetNestedField(out, value, path...); err != nil {
		return []error{err}
	}
	return nil
}

func strs(in ...string) []interface{} {
	out := make([]interface{}, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}

// namedCertificates are the serving certificates kube-apiserver presents by SNI: the rotated ones in the cert
// directory and the revisioned localhost-recovery one.
var namedCertificates = []struct{ dir, name string }{
	{"static-pod-certs", "localhost-serving-cert-certkey"},
	{"static-pod-certs", "service-network-serving-certkey"},
	{"static-pod-certs", "external-loadbalancer-serving-certkey"},
	{"static-pod-certs", "internal-loadbalancer-serving-certkey"},
	{"static-pod-resources", "localhost-recovery-serving-certkey"},
}

// observeNamedCertificates sets servingInfo.namedCertificates. User serving certificates of the APIServer config
// are not taken: nobody can rotate them on a cluster without operators.
func observeNamedCertificates(_ configobserver.Listers, _ events.Recorder, _ map[string]interface{}) (map[string]interface{}, []error) {
	var certs []interface{}
	for _, c := range namedCertificates {
		dir := fmt.Sprintf("/etc/kubernetes/%s/secrets/%s", c.dir, c.name)
		certs = append(certs, map[string]interface{}{"certFile": dir + "/tls.crt", "keyFile": dir + "/tls.key"})
	}
	out := map[string]interface{}{}
	return out, set(out, certs, "servingInfo", "namedCertificates")
}

// observeSingleReplicaTimings sets what a single control-plane node needs: no shutdown delay (no load balancer
// to drain), a 15 s graceful termination, no GOAWAY (there is no other instance to go to), and one Retry-After
// answer while not ready. With more replicas it sets the multi-node values.
func observeSingleReplicaTimings(generic configobserver.Listers, _ events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
	paths := [][]string{
		{"apiServerArguments", "shutdown-delay-duration"}, gracefulTerminationPath,
		{"apiServerArguments", "goaway-chance"}, {"apiServerArguments", "send-retry-after-while-not-ready-once"},
	}
	infra, err := generic.(operator.Listers).Infrastructure.Get("cluster")
	if err != nil {
		return configobserver.Pruned(existing, paths...), []error{err}
	}
	sno := infra.Status.ControlPlaneTopology == configv1.SingleReplicaTopologyMode
	delay, grace, goaway, retry := "70s", "135", "0.001", "false"
	if sno {
		delay, grace, goaway, retry = "0s", "15", "0", "true"
	}
	out := map[string]interface{}{}
	var errs []error
	errs = append(errs, set(out, strs(delay), paths[0]...)...)
	errs = append(errs, set(out, grace, paths[1]...)...)
	errs = append(errs, set(out, strs(goaway), paths[2]...)...)
	errs = append(errs, set(out, strs(retry), paths[3]...)...)
	return out, errs
}

// observeAdmissionPlugins sets the enabled admission plugins from manifests/kube-apiserver/admission-plugins.yaml.
func observeAdmissionPlugins(_ configobserver.Listers, _ events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
	path := []string{"apiServerArguments", "enable-admission-plugins"}
	raw, err := manifests.Read("kube-apiserver/admission-plugins.yaml")
	if err != nil {
		return configobserver.Pruned(existing, path), []error{err}
	}
	var plugins struct {
		Enable []string `json:"enable"`
	}
	if err := yaml.UnmarshalStrict(raw, &plugins); err != nil {
		return configobserver.Pruned(existing, path), []error{err}
	}
	out := map[string]interface{}{}
	return out, set(out, strs(plugins.Enable...), path...)
}

// DefaultServiceAccountIssuer is the issuer of bound tokens when Authentication spec.serviceAccountIssuer is empty.
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc"

// observeServiceAccountIssuer sets the issuer and audience of bound tokens (Authentication
// spec.serviceAccountIssuer, or the in-cluster default) and the JWKS URI published in the discovery document
// (the external API URL, so that clients outside the cluster can verify tokens).
func observeServiceAccountIssuer(generic configobserver.Listers, _ events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
	paths := [][]string{
		{"apiServerArguments", "service-account-issuer"}, {"apiServerArguments", "api-audiences"},
		{"apiServerArguments", "service-account-jwks-uri"},
	}
	l := generic.(operator.Listers)
	auth, err := l.Authentication.Get("cluster")
	if err != nil {
		return configobserver.Pruned(existing, paths...), []error{err}
	}
	infra, err := l.Infrastructure.Get("cluster")
	if err != nil {
		return configobserver.Pruned(existing, paths...), []error{err}
	}
	issuer := auth.Spec.ServiceAccountIssuer
	if issuer == "" {
		issuer = DefaultServiceAccountIssuer
	}
	out := map[string]interface{}{}
	var errs []error
	errs = append(errs, set(out, strs(issuer), paths[0]...)...)
	errs = append(errs, set(out, strs(issuer), paths[1]...)...)
	if infra.Status.APIServerURL != "" {
		errs = append(errs, set(out, strs(strings.TrimSuffix(infra.Status.APIServerURL, "/")+"/openid/v1/jwks"), paths[2]...)...)
	}
	return out, errs
}

// observePodSecurity configures the PodSecurity admission plugin: restricted everywhere when the
// OpenShiftPodSecurityAdmission gate is on, privileged otherwise; the build controller is exempt.
func observePodSecurity(generic configobserver.Listers, _ events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
	path := []string{"admission", "pluginConfig", "PodSecurity", "configuration"}
	gates, err := generic.(operator.Listers).FeatureGates.CurrentFeatureGates()
	if err != nil {
		return configobserver.Pruned(existing, path), []error{err}
	}
	level := "privileged"
	if gates.Enabled("OpenShiftPodSecurityAdmission") {
		level = "restricted"
	}
	cfg := map[string]interface{}{
		"apiVersion": "pod-security.admission.config.k8s.io/v1",
		"kind":       "PodSecurityConfiguration",
		"defaults": map[string]interface{}{
			"enforce": level, "enforce-version": "latest",
			"audit": level, "audit-version": "latest",
			"warn": level, "warn-version": "latest",
		},
		"exemptions": map[string]interface{}{
			"usernames": strs("system:serviceaccount:openshift-infra:build-controller"),
		},
	}
	out := map[string]interface{}{}
	return out, set(out, cfg, path...)
}

// observeNetwork sets what the Network status decides: servicesSubnet (every service network, comma separated),
// the bind address (IPv4 only: 0.0.0.0 tcp4; IPv6 only: [::] tcp6; dual stack: [::] tcp, both families), the
// CIDRs RestrictedEndpointsAdmission protects (cluster, then service networks) and the external IP policy.
func observeNetwork(generic configobserver.Listers, rec events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
	restricted := []string{"admission", "pluginConfig", "network.openshift.io/RestrictedEndpointsAdmission", "configuration"}
	externalIP := []string{"admission", "pluginConfig", "network.openshift.io/ExternalIPRanger", "configuration"}
	paths := [][]string{{"servicesSubnet"}, {"servingInfo", "bindAddress"}, bindNetworkPath, restricted, externalIP}
	keep := configobserver.Pruned(existing, paths...)
	lister := generic.(operator.Listers).Network
	clusterCIDRs, err := libnetwork.GetClusterCIDRs(lister, rec)
	if err != nil {
		return keep, []error{err}
	}
	serviceCIDRs, err := libnetwork.GetServiceCIDRs(lister, rec)
	if err != nil {
		return keep, []error{err}
	}
	if len(clusterCIDRs) == 0 || len(serviceCIDRs) == 0 {
		return keep, []error{fmt.Errorf("networks.config.openshift.io/cluster has no cluster or service networks in status yet")}
	}
	v4, v6 := false, false
	for _, c := range serviceCIDRs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return keep, []error{fmt.Errorf("service network %q: %w", c, err)}
		}
		if p.Addr().Is4() {
			v4 = true
		} else {
			v6 = true
		}
	}
	bindAddress, bindNetwork := "0.0.0.0:6443", "tcp4"
	switch {
	case v4 && v6:
		bindAddress, bindNetwork = "[::]:6443", "tcp"
	case v6:
		bindAddress, bindNetwork = "[::]:6443", "tcp6"
	}
	policy, err := libnetwork.GetExternalIPPolicy(lister, rec)
	if err != nil {
		return keep, []error{err}
	}
	autoAssign, err := libnetwork.GetExternalIPAutoAssignCIDRs(lister, rec)
	if err != nil {
		return keep, []error{err}
	}
	ranger := map[string]interface{}{
		"apiVersion":     "network.openshift.io/v1",
		"kind":           "ExternalIPRangerAdmissionConfig",
		"allowIngressIP": len(autoAssign) > 0,
	}
	if policy != nil {
		var cidrs []string
		for _, c := range policy.RejectedCIDRs {
			cidrs = append(cidrs, "!"+c)
		}
		cidrs = append(cidrs, policy.AllowedCIDRs...)
		if len(cidrs) > 0 {
			ranger["externalIPNetworkCIDRs"] = strs(cidrs...)
		}
	}
	out := map[string]interface{}{}
	var errs []error
	errs = append(errs, set(out, strings.Join(serviceCIDRs, ","), paths[0]...)...)
	errs = append(errs, set(out, bindAddress, paths[1]...)...)
	errs = append(errs, set(out, bindNetwork, paths[2]...)...)
	errs = append(errs, set(out, map[string]interface{}{
		"apiVersion":      "network.openshift.io/v1",
		"kind":            "RestrictedEndpointsAdmissionConfig",
		"restrictedCIDRs": strs(append(append([]string(nil), clusterCIDRs...), serviceCIDRs...)...),
	}, restricted...)...)
	errs = append(errs, set(out, ranger, externalIP...)...)
	return out, errs
}

// observeAuthorizationMode sets the authorizers: scopes of OAuth tokens, system:masters, RBAC, then the node
// authorizer.
func observeAuthorizationMode(_ configobserver.Listers, _ events.Recorder, _ map[string]interface{}) (map[string]interface{}, []error) {
	out := map[string]interface{}{}
	return out, set(out, strs("Scope", "SystemMasters", "RBAC", "Node"), "apiServerArguments", "authorization-mode")
}
