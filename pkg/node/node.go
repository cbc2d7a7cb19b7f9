// Package node is the node side of aio.ign: everything besides the static pods that turns a plain RHCOS machine
// into the all-in-one control-plane node, and the first-boot apply of the exported manifests.
//
//   - kubelet: kubelet.service, /etc/kubernetes/kubelet.conf (KubeletConfiguration v1beta1), the kubelet's client
//     CA, and /var/lib/kubelet/kubeconfig with a client certificate for system:node:<name> signed at render time
//     with kube-controller-manager's CSR signer (loop "emulate/node-client-csr-approval"), so the node registers
//     without a CSR approval step; CRI-O reads the pull secret from /var/lib/kubelet/config.json;
//   - certificate renewal without operators: a bounded systemd timer (aio-csr-approver) approves the kubelet-serving
//     and kubelet-client CSRs of the nodes of its list (ApproverNodesFile), each for its own identity, names and
//     IPs only, and nothing else, with a least-privileged identity of its own;
//   - names: api.<domain> and api-int.<domain> resolve to the node in /etc/hosts;
//   - first boot: aiokube.service applies /opt/openshift/manifests in order (namespaces, CRDs, the rest), restores
//     status, records progress, puts the live legacy service-account tokens into the revision directories
//     (legacytokens.go), and removes what only the first boot needed;
//   - FilterExport: the one place that decides which exported objects must not reach a cluster without operators,
//     and exports legacy token secrets without the render's token and service-account UID.
//
// docs/node.md walks through the first boot step by step.
package node

import (
	"crypto"
	"sync"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// Images are the default pull specs of the images the node side runs (pkg/components' DefaultImages adds them):
// the pause image CRI-O runs every pod sandbox with (the CRI-O drop-in) and the tools image of aiokube.service.
var Images = clusterconfig.Images{
	"pod":   clusterconfig.OKDImage("pod"),
	"tools": clusterconfig.OKDImage("tools"),
}

// Paths and units on the node. Everything the node side writes is named here.
const (
	// ManifestsDir holds the exported manifests the first-boot apply creates, bootkube style.
	ManifestsDir = "/opt/openshift/manifests"
	// AdminKubeconfigPath is the cluster-admin kubeconfig on the node.
	AdminKubeconfigPath = "/opt/openshift/auth/kubeconfig"

	KubeletUnit       = "kubelet.service"
	KubeletConfigPath = "/etc/kubernetes/kubelet.conf"
	// KubeletConfigDir is the kubelet's --config-dir: KubeletConfiguration drop-ins merged over KubeletConfigPath
	// (aio-pod-network writes its resolv.conf drop-in there). The render makes it: the kubelet refuses a missing one.
	KubeletConfigDir      = "/etc/kubernetes/kubelet.conf.d"
	KubeletClientCAPath   = "/etc/kubernetes/kubelet-ca.crt"
	KubeletKubeconfigPath = "/var/lib/kubelet/kubeconfig"
	// PullSecretPath is where CRI-O reads registry credentials (global_auth_file) on RHCOS.
	PullSecretPath = "/var/lib/kubelet/config.json"
	CRIODropinPath = "/etc/crio/crio.conf.d/50-render-static.conf"
	HostsPath      = "/etc/hosts"
	// StaticPodPath is where the kubelet reads static pods (export.PodManifestDir).
	StaticPodPath = "/etc/kubernetes/manifests"

	AIOKubeUnit   = "aiokube.service"
	AIOKubeScript = "/usr/local/bin/aiokube.sh"
	// AIOKubeDir holds aiokube's own first-boot inputs and progress; all of it goes with the cleanup.
	AIOKubeDir = "/opt/openshift/aiokube"
	// StatusDir holds one merge patch {"status": ...} per manifest whose status must be restored after create.
	StatusDir = AIOKubeDir + "/status"
	// StateDir holds the progress markers: done/<manifest file> per created manifest, and "applied".
	StateDir = AIOKubeDir + "/state"

	// AIOUpdateScript applies the updates of `render-static renew` on the node (aio-update.sh); AIOUpdateConfig is
	// its settings (AIO_UPDATE_* variables), AIOUpdateStateDir its backups and records.
	AIOUpdateScript   = "/usr/local/bin/aio-update"
	AIOUpdateConfig   = "/etc/kubernetes/aio-update.env"
	AIOUpdateStateDir = "/var/lib/aio-update"
	// LocalhostKubeconfig is kube-apiserver's node-kubeconfigs localhost.kubeconfig (system:admin) in its cert
	// directory, as the installer lays it out: what aio-update uses after the first boot's admin kubeconfig is gone.
	LocalhostKubeconfig = "/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/localhost.kubeconfig"

	// PodNetworkUnit runs PodNetworkScript (manifests/node/scripts/aio-pod-network.sh) on every boot of a node of the
	// built-in pod network (pkg/podnetwork); PodNetworkResolvDropin is the kubelet drop-in it writes when
	// /etc/resolv.conf holds only loopback nameservers.
	PodNetworkUnit         = "aio-pod-network.service"
	PodNetworkScript       = "/usr/local/bin/aio-pod-network.sh"
	PodNetworkResolvDropin = KubeletConfigDir + "/90-aio-pod-network-resolv.conf"

	ApproverService    = "aio-csr-approver.service"
	ApproverTimer      = "aio-csr-approver.timer"
	ApproverScript     = "/usr/local/bin/aio-csr-approver.sh"
	ApproverKubeconfig = "/etc/kubernetes/aio-csr-approver.kubeconfig"
)

// Node is the node side of one render. Its emulation loop runs in the converge phase; Tree builds the files once
// the loops settled. The private keys of the certificates it signs live only here, never in the cluster.
type Node struct {
	cluster *loops.Cluster
	in      *clusterconfig.Inputs

	mu   sync.Mutex
	keys map[string]crypto.Signer // by CSR name
}

// New returns the node side of a render.
func New(c *loops.Cluster, in *clusterconfig.Inputs) *Node {
	return &Node{cluster: c, in: in, keys: map[string]crypto.Signer{}}
}

// Loops are the node side's loops, run in the converge phase after every component's loops: its static
// resources and the emulated approval of its first client certificates. The namespaces no component creates
// come after them (emulate.Namespaces, appended by pkg/pipeline).
func (n *Node) Loops() []loops.Loop {
	return []loops.Loop{n.StaticResourcesLoop(), n.CSRApprovalLoop()}
}
