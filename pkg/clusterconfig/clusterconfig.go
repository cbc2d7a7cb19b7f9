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
	// Release is the release input the images were taken from (nil: none): its version is the payload's
	// (PayloadVersion).
	Release *Release
	Flavor  Flavor
	// Workers are the worker nodes beside the control-plane node: the install-config's compute replicas
	// (rendered with the control plane: day 1) and those added later (`render-static worker`: day 2).
	Workers []Worker
	// InstallDevice is the disk the live ISO installs the node to (live.ign's dest-device; "": none given).
	InstallDevice string
	// NetworkKeyfiles are the node's NetworkManager keyfiles (aio.ign and live.ign write them under
	// /etc/NetworkManager/system-connections), each read by NetworkManager when the inputs were validated.
	NetworkKeyfiles []Keyfile
	// Warnings are what validation accepted but looks like a mistake (a keyfile's gateway outside its subnet, ...),
	// each naming its input as a problem would; no loop reads them: the summary says them.
	Warnings installconfig.ErrorList
}

// Worker is a worker node: its name (the kubelet's system:node:<name> identity) and its IPs (primary first, of
// the control-plane node's families); InstallDevice and NetworkKeyfiles are its live ISO install's, as the
// control-plane node's (Inputs): its live.ign installs it to that disk, and worker.ign and live.ign write its keyfiles.
type Worker struct {
	Name            string
	IPs             []netip.Addr
	InstallDevice   string
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

// MastersSchedulable says whether the control-plane node runs workloads: the installer makes it so when the
// install-config asks for no workers (openshift/installer pkg/asset/manifests/scheduler.go: Scheduler
// spec.mastersSchedulable). Workers added later leave it so: the control-plane node stays in the worker pool
// (seed 004).
func (in *Inputs) MastersSchedulable() bool { return in.InstallConfig.ComputeReplicas() == 0 }

// Topologies are the Infrastructure's control-plane and infrastructure topologies, as the installer decides them
// from the install-config (openshift/installer pkg/asset/manifests/topologies.go, determineTopologies): one
// control-plane replica is SingleReplica; the infrastructure follows the control plane with no workers, is
// SingleReplica with one and HighlyAvailable with more. Seed 004 proposed SingleReplica for every platform-none
// single node; the installer kept HighlyAvailable for two workers or more and pins ingress to the control plane
// instead (IngressDefaultPlacement), which keeps *.apps on the control-plane node either way. Decided at
// install time: workers added later change neither (seed 004: the topology is read-only).
func (in *Inputs) Topologies() (controlPlane, infrastructure configv1.TopologyMode) {
	controlPlane = configv1.SingleReplicaTopologyMode
	switch n := in.InstallConfig.ComputeReplicas(); {
	case n == 0:
		infrastructure = controlPlane
	case n == 1:
		infrastructure = configv1.SingleReplicaTopologyMode
	default:
		infrastructure = configv1.HighlyAvailableTopologyMode
	}
	return controlPlane, infrastructure
}

// IngressDefaultPlacement is the Ingress status.defaultPlacement the installer gives a platform-none cluster with
// a single control-plane node, workers or not (openshift/installer pkg/asset/manifests/ingress.go): the ingress
// operator then places the default router on the control-plane node, with as many replicas as the control-plane
// topology says (one), so that *.apps, pointed at that node, keeps working when workers join (seed 004).
const IngressDefaultPlacement = configv1.DefaultPlacementControlPlane

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
	controlPlaneTopology, infrastructureTopology := in.Topologies()
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
				ControlPlaneTopology:   controlPlaneTopology,
				InfrastructureTopology: infrastructureTopology,
				CPUPartitioning:        cpuPartitioning(ic),
			},
		},
		NetworkConfig(ic),
		&configv1.DNS{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.DNSSpec{BaseDomain: domain}},
		&configv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.IngressSpec{Domain: "apps." + domain},
			Status: configv1.IngressStatus{DefaultPlacement: IngressDefaultPlacement}},
		&configv1.APIServer{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
			Spec: configv1.APIServerSpec{
				Audit: configv1.Audit{Profile: configv1.DefaultAuditProfileType},
				// Secrets are encrypted at rest from the first boot: nobody can turn it on later.
				Encryption: configv1.APIServerEncryption{Type: configv1.EncryptionTypeAESCBC},
			},
		},
		&configv1.Authentication{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
		// A single node must run workloads: without workers the control-plane node is schedulable.
		&configv1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.SchedulerSpec{MastersSchedulable: in.MastersSchedulable()}},
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

// defaultIngressController is the default IngressController the ingress operator makes from Ingress
// status.defaultPlacement ControlPlane (IngressDefaultPlacement) and a SingleReplica control-plane topology (its
// ensureDefaultIngressController, DetermineReplicas and the deployment's node selector): one replica, pinned to
// the control-plane node, so that *.apps keeps pointing at it with or without workers.
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
