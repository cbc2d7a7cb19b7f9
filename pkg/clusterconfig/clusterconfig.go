// Package clusterconfig turns a validated install-config into what the installer gives a new cluster before any
// operator runs (config.openshift.io resources, kube-system/cluster-config-v1, the pull secret, the user CA
// bundle), plus the render's own inputs (node, infrastructure name, certificate policy). These are the seeds of
// the render's in-memory cluster.
package clusterconfig

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/installconfig"
)

// Inputs is everything a render depends on.
type Inputs struct {
	InstallConfig *installconfig.InstallConfig
	NodeName      string
	// NodeIPs: the primary first; a second of the other family for dual stack.
	NodeIPs   []netip.Addr
	InfraID   string
	Lifetimes certs.Lifetimes
	Images    Images
	Flavor    Flavor
	// InstallDevice is the disk the live ISO installs the node to (live.ign's dest-device; "": none given).
	InstallDevice string
	// NetworkKeyfiles are the node's NetworkManager keyfiles (aio.ign and live.ign write them under
	// /etc/NetworkManager/system-connections), each read by NetworkManager when the inputs were validated.
	NetworkKeyfiles []Keyfile
}

// Keyfile is a NetworkManager keyfile: its file name on the node and its contents; Source names where it was
// read (messages).
type Keyfile struct {
	Name, Source string
	Contents     []byte
}

// Flavor says which control-plane binaries the static pods run.
type Flavor string

const (
	// FlavorOpenShift renders the operators' own static pods (OpenShift images: hyperkube, the operators).
	FlavorOpenShift Flavor = "openshift"
	// FlavorUpstream renders flag-only pods for upstream images (kube-apiserver, kube-controller-manager,
	// kube-scheduler v1.34, etcd 3.6) from the same loops, PKI, encryption config, layout and Ignition.
	FlavorUpstream Flavor = "upstream"
)

// ParseFlavor checks a --flavor value.
func ParseFlavor(s string) (Flavor, error) {
	switch Flavor(s) {
	case "", FlavorOpenShift:
		return FlavorOpenShift, nil
	case FlavorUpstream:
		return FlavorUpstream, nil
	}
	return "", fmt.Errorf("%q is not a flavor (openshift or upstream)", s)
}

// NodeIP is the node's primary IP.
func (in *Inputs) NodeIP() netip.Addr { return in.NodeIPs[0] }

// NewInfraID makes an infrastructure name the way the installer does: the cluster name cut to 21 characters,
// a dash, and five random lowercase letters or digits.
func NewInfraID(clusterName string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	base := clusterName
	if len(base) > 21 {
		base = strings.TrimRight(base[:21], "-")
	}
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return base + "-" + string(b)
}

// Objects returns the seeds of the cluster. Status that an operator would fill (Network status) is left to the
// emulation loops, so the trace shows who wrote it.
func Objects(in *Inputs) ([]runtime.Object, error) {
	ic := in.InstallConfig
	domain := ic.ClusterDomain()
	objs := []runtime.Object{
		&configv1.Infrastructure{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
			Spec: configv1.InfrastructureSpec{
				PlatformSpec: configv1.PlatformSpec{Type: configv1.NonePlatformType},
			},
			Status: configv1.InfrastructureStatus{
				InfrastructureName: in.InfraID,
				//lint:ignore SA1019 the installer still sets the deprecated status.platform beside platformStatus
				Platform:               configv1.NonePlatformType,
				PlatformStatus:         &configv1.PlatformStatus{Type: configv1.NonePlatformType},
				EtcdDiscoveryDomain:    "",
				APIServerURL:           ic.APIServerURL(),
				APIServerInternalURL:   ic.APIServerInternalURL(),
				ControlPlaneTopology:   configv1.SingleReplicaTopologyMode,
				InfrastructureTopology: configv1.SingleReplicaTopologyMode,
				CPUPartitioning:        cpuPartitioning(ic),
			},
		},
		NetworkConfig(ic),
		&configv1.DNS{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.DNSSpec{BaseDomain: domain}},
		&configv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.IngressSpec{Domain: "apps." + domain}},
		&configv1.APIServer{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
			Spec: configv1.APIServerSpec{
				Audit: configv1.Audit{Profile: configv1.DefaultAuditProfileType},
				// Secrets are encrypted at rest from the first boot: nobody can turn it on later.
				Encryption: configv1.APIServerEncryption{Type: configv1.EncryptionTypeAESCBC},
			},
		},
		&configv1.Authentication{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
		// A single node must run workloads: the scheduler config makes the control-plane node schedulable.
		&configv1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.SchedulerSpec{MastersSchedulable: true}},
		ProxyConfig(ic),
		&configv1.Image{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
	}
	if ingressEnabled(ic) {
		objs = append(objs, defaultIngressController())
	}
	clusterConfig, err := clusterConfigV1(ic)
	if err != nil {
		return nil, err
	}
	featureGate, err := FeatureGate(in)
	if err != nil {
		return nil, err
	}
	objs = append(objs, featureGate, clusterConfig, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-config", Name: "pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(ic.PullSecret)},
	})
	if cm := userCABundle(ic); cm != nil {
		objs = append(objs, cm)
	}
	objs = append(objs, mirrorSets(ic)...)
	return objs, nil
}

func cpuPartitioning(ic *installconfig.InstallConfig) configv1.CPUPartitioningMode {
	if ic.CPUPartitioningMode == "AllNodes" {
		return configv1.CPUPartitioningAllNodes
	}
	return configv1.CPUPartitioningNone
}

// NetworkConfig is network.config.openshift.io/cluster as the installer makes it from the install-config.
func NetworkConfig(ic *installconfig.InstallConfig) *configv1.Network {
	n := &configv1.Network{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	n.Spec.NetworkType = ic.Networking.NetworkType
	for _, cn := range ic.Networking.ClusterNetwork {
		n.Spec.ClusterNetwork = append(n.Spec.ClusterNetwork, configv1.ClusterNetworkEntry{CIDR: cn.CIDR, HostPrefix: uint32(cn.HostPrefix)})
	}
	for _, p := range ic.ServiceCIDRs() {
		n.Spec.ServiceNetwork = append(n.Spec.ServiceNetwork, p.String())
	}
	return n
}

// ProxyConfig is proxy.config.openshift.io/cluster as the installer makes it from the install-config.
func ProxyConfig(ic *installconfig.InstallConfig) *configv1.Proxy {
	p := &configv1.Proxy{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	if ic.Proxy != nil {
		p.Spec.HTTPProxy = ic.Proxy.HTTPProxy
		p.Spec.HTTPSProxy = ic.Proxy.HTTPSProxy
		p.Spec.NoProxy = ic.Proxy.NoProxy
	}
	if proxyTrustsUserCA(ic) {
		p.Spec.TrustedCA = configv1.ConfigMapNameReference{Name: UserCABundleName}
	}
	return p
}

// clusterConfigV1 is kube-system/cluster-config-v1 as the installer writes it: the install-config without the
// pull secret (operators read networking and platform from it).
func clusterConfigV1(ic *installconfig.InstallConfig) (*corev1.ConfigMap, error) {
	redacted := *ic
	redacted.PullSecret = ""
	b, err := yaml.Marshal(&redacted)
	if err != nil {
		return nil, fmt.Errorf("cluster-config-v1: %w", err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cluster-config-v1"},
		Data:       map[string]string{"install-config": string(b)},
	}, nil
}

// ingressEnabled says whether the Ingress capability is on: everywhere but a None baseline that does not add it.
func ingressEnabled(ic *installconfig.InstallConfig) bool {
	c := ic.Capabilities
	if c == nil || c.BaselineCapabilitySet != "None" {
		return true
	}
	for _, name := range c.AdditionalEnabledCapabilities {
		if name == "Ingress" {
			return true
		}
	}
	return false
}

// defaultIngressController is the default IngressController of a single-replica infrastructure topology: one
// replica, pinned to the control-plane node so that *.apps keeps pointing at it when workers join later (the
// ingress operator makes the same choice when Infrastructure status.infrastructureTopology is SingleReplica).
func defaultIngressController() *operatorv1.IngressController {
	replicas := int32(1)
	return &operatorv1.IngressController{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-ingress-operator", Name: "default"},
		Spec: operatorv1.IngressControllerSpec{
			Replicas: &replicas,
			NodePlacement: &operatorv1.NodePlacement{
				NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/master": ""}},
			},
		},
	}
}
