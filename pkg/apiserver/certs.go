package apiserver

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"

	configlisters "github.com/openshift/client-go/config/listers/config/v1"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/loops"
)

// Namespaces of the kube-apiserver operator.
const (
	OperatorNamespace = "openshift-kube-apiserver-operator"
	TargetNamespace   = "openshift-kube-apiserver"
	ConfigNamespace   = "openshift-config"
	ManagedNamespace  = "openshift-config-managed"
)

const jira = "kube-apiserver"

func loc(ns, name string) certs.Location { return certs.Location{Namespace: ns, Name: name} }

// serviceNetworkNames are the in-cluster names of the API; the first IP of every service network is added.
var serviceNetworkNames = []string{
	"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	"openshift", "openshift.default", "openshift.default.svc", "openshift.default.svc.cluster.local",
}

// Rotations is kube-apiserver's certificate table, row for row the operator's cert-rotation controllers:
// the signers in the operator namespace, their CA bundles, and the leaves the static pod and the other
// control-plane components use. Hostnames come from the cluster's Network and Infrastructure status, read
// through listers like the operator does.
func Rotations(network configlisters.NetworkLister, infra configlisters.InfrastructureLister) []certs.Rotation {
	op, tgt, ocm := OperatorNamespace, TargetNamespace, ManagedNamespace
	controlPlaneSigner, controlPlaneCA := loc(op, "kube-control-plane-signer"), loc(op, "kube-control-plane-signer-ca")
	lbSigner, lbCA := loc(op, "loadbalancer-serving-signer"), loc(op, "loadbalancer-serving-ca")
	rows := []certs.Rotation{
		{Name: "AggregatorProxyClientCert", Signer: loc(op, "aggregator-client-signer"), Bundle: loc(ocm, "kube-apiserver-aggregator-client-ca"),
			Target: loc(tgt, "aggregator-client"), Kind: certs.Client, User: "system:openshift-aggregator",
			Description: "Client certificate the kube-apiserver uses to proxy to aggregated API servers."},
		{Name: "KubeAPIServerToKubeletClientCert", Signer: loc(op, "kube-apiserver-to-kubelet-signer"), Bundle: loc(op, "kube-apiserver-to-kubelet-client-ca"),
			Target: loc(tgt, "kubelet-client"), Kind: certs.Client, User: "system:kube-apiserver", Groups: []string{"kube-master"},
			Description: "Client certificate the kube-apiserver uses to reach kubelets."},
		{Name: "LocalhostServing", Signer: loc(op, "localhost-serving-signer"), Bundle: loc(op, "localhost-serving-ca"),
			Target: loc(tgt, "localhost-serving-cert-certkey"), Kind: certs.Serving,
			Hostnames:   func() ([]string, error) { return []string{"localhost", "127.0.0.1"}, nil },
			Description: "Serving certificate of the kube-apiserver on localhost."},
		{Name: "ServiceNetworkServing", Signer: loc(op, "service-network-serving-signer"), Bundle: loc(op, "service-network-serving-ca"),
			Target: loc(tgt, "service-network-serving-certkey"), Kind: certs.Serving,
			Hostnames: func() ([]string, error) { return serviceNetworkHostnames(network) }, Inputs: []loops.Object{clusterNetwork},
			Description: "Serving certificate of the kube-apiserver on the service network (kubernetes.default.svc)."},
		{Name: "ExternalLoadBalancerServing", Signer: lbSigner, Bundle: lbCA,
			Target: loc(tgt, "external-loadbalancer-serving-certkey"), Kind: certs.Serving,
			Hostnames: func() ([]string, error) { return apiHostname(infra, false) }, Inputs: []loops.Object{clusterInfrastructure},
			Description: "Serving certificate of the kube-apiserver for the api.<cluster domain> name."},
		{Name: "InternalLoadBalancerServing", Signer: lbSigner, Bundle: lbCA,
			Target: loc(tgt, "internal-loadbalancer-serving-certkey"), Kind: certs.Serving,
			Hostnames: func() ([]string, error) { return apiHostname(infra, true) }, Inputs: []loops.Object{clusterInfrastructure},
			Description: "Serving certificate of the kube-apiserver for the api-int.<cluster domain> name."},
		{Name: "LocalhostRecoveryServing", Signer: loc(op, "localhost-recovery-serving-signer"), Bundle: loc(op, "localhost-recovery-serving-ca"),
			Target: loc(tgt, "localhost-recovery-serving-certkey"), Kind: certs.Serving,
			Hostnames:   func() ([]string, error) { return []string{"localhost-recovery"}, nil },
			Description: "Serving certificate of the kube-apiserver for the localhost-recovery name."},
		{Name: "KubeControllerManagerClient", Signer: controlPlaneSigner, Bundle: controlPlaneCA,
			Target: loc(ocm, "kube-controller-manager-client-cert-key"), Kind: certs.Client, User: "system:kube-controller-manager",
			Description: "Client certificate of the kube-controller-manager."},
		{Name: "KubeSchedulerClient", Signer: controlPlaneSigner, Bundle: controlPlaneCA,
			Target: loc(ocm, "kube-scheduler-client-cert-key"), Kind: certs.Client, User: "system:kube-scheduler",
			Description: "Client certificate of the kube-scheduler."},
		{Name: "ControlPlaneNodeAdminClient", Signer: controlPlaneSigner, Bundle: controlPlaneCA,
			Target: loc(tgt, "control-plane-node-admin-client-cert-key"), Kind: certs.Client, User: "system:control-plane-node-admin", Groups: []string{"system:masters"},
			Description: "Client certificate of the control-plane node admin (cert syncers, recovery)."},
		{Name: "CheckEndpointsClient", Signer: controlPlaneSigner, Bundle: controlPlaneCA,
			Target: loc(tgt, "check-endpoints-client-cert-key"), Kind: certs.Client, User: "system:serviceaccount:openshift-kube-apiserver:check-endpoints",
			Description: "Client certificate of the kube-apiserver's check-endpoints container."},
		{Name: "NodeSystemAdminClient", Signer: loc(op, "node-system-admin-signer"), Bundle: loc(op, "node-system-admin-ca"),
			Target: loc(op, "node-system-admin-client"), Kind: certs.Client, User: "system:admin", Groups: []string{"system:masters"},
			Description: "Client certificate of the node's system:admin kubeconfigs (node-kubeconfigs)."},
	}
	for i := range rows {
		rows[i].JiraComponent = jira
	}
	return rows
}

// The config objects serving names are read from (the inputs of the rows that read them).
var (
	clusterNetwork        = loops.Object{Resource: "networks", Name: "cluster"}
	clusterInfrastructure = loops.Object{Resource: "infrastructures", Name: "cluster"}
)

// serviceNetworkHostnames is the service-network serving cert's names: the fixed in-cluster names plus the first
// IP of every service network in Network status (IPv4 and IPv6 for dual stack).
func serviceNetworkHostnames(network configlisters.NetworkLister) ([]string, error) {
	n, err := network.Get("cluster")
	if err != nil {
		return nil, fmt.Errorf("network.config.openshift.io/cluster: %w", err)
	}
	if len(n.Status.ServiceNetwork) == 0 {
		return nil, fmt.Errorf("network.config.openshift.io/cluster has no status.serviceNetwork yet")
	}
	out := append([]string(nil), serviceNetworkNames...)
	for _, cidr := range n.Status.ServiceNetwork {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return nil, fmt.Errorf("network.config.openshift.io/cluster status.serviceNetwork %q: %w", cidr, err)
		}
		out = append(out, p.Masked().Addr().Next().String())
	}
	return out, nil
}

func apiHostname(infra configlisters.InfrastructureLister, internal bool) ([]string, error) {
	i, err := infra.Get("cluster")
	if err != nil {
		return nil, fmt.Errorf("infrastructure.config.openshift.io/cluster: %w", err)
	}
	raw := i.Status.APIServerURL
	if internal {
		raw = i.Status.APIServerInternalURL
	}
	if raw == "" {
		return nil, fmt.Errorf("infrastructure.config.openshift.io/cluster has no API server URL yet")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(u.Host)
	if err != nil {
		host = u.Host
	}
	return []string{host}, nil
}
