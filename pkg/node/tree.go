package node

import (
	"context"
	"fmt"
	"io/fs"
	"net/netip"
	"path"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/podnetwork"
)

// Options are what the node side needs from the rest of the render.
type Options struct {
	// ManifestsDir is where the exported manifests lie on the node; AdminKubeconfig is the cluster-admin
	// kubeconfig there. aiokube uses both, and removes both once everything is created.
	ManifestsDir    string
	AdminKubeconfig string
	// Manifests are the exported manifests (after FilterExport), for the status patches and the legacy token
	// secrets aiokube waits for.
	Manifests []export.Manifest
}

func (o Options) validate() error {
	for name, p := range map[string]string{"ManifestsDir": o.ManifestsDir, "AdminKubeconfig": o.AdminKubeconfig} {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			return fmt.Errorf("node: %s %q is not a clean absolute path", name, p)
		}
	}
	return nil
}

// Tree builds the node side's files and units from the settled cluster: the kubelet, CRI-O's pull secret and
// drop-in, /etc/hosts, the CSR approver, and aiokube with its status patches.
func (n *Node) Tree(ctx context.Context, o Options) (*export.Tree, error) {
	if n == nil {
		return nil, fmt.Errorf("node: no node side in this render (node.New was not called)")
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	in := n.in
	t := export.NewTree()
	add := t.AddFile

	// The kubelet and CRI-O.
	serverCA, err := n.addKubelet(ctx, t, kubeletNode{name: in.NodeName, ips: in.NodeIPs, what: "all-in-one node", role: "master",
		labels: RegistrationLabels(in), taints: controlPlaneTaints(in), hosts: Hosts(in)})
	if err != nil {
		return nil, err
	}

	// The CSR approver.
	approverKubeconfig, err := n.kubeconfig(ctx, n.approverIdentity(), serverCA, "csr-approver")
	if err != nil {
		return nil, err
	}
	approverUnit, err := renderTemplate("aio-csr-approver.service", map[string]any{"Script": ApproverScript, "Env": envLines(approverEnv())})
	if err != nil {
		return nil, err
	}
	approverNodes, err := ApproverNodesFile(n.approverNodes())
	if err != nil {
		return nil, err
	}
	approverTimer, err := renderTemplate("aio-csr-approver.timer", nil)
	if err != nil {
		return nil, err
	}
	if err := add(ApproverKubeconfig, 0600, approverKubeconfig); err != nil {
		return nil, err
	}
	if err := addProgram(t, ApproverScript, "aio-csr-approver.sh"); err != nil {
		return nil, err
	}
	if err := add(ApproverNodesPath, 0644, approverNodes); err != nil {
		return nil, err
	}
	if err := t.AddUnit(export.Unit{Name: ApproverService, Contents: approverUnit}); err != nil {
		return nil, err
	}
	if err := t.AddUnit(export.Unit{Name: ApproverTimer, Contents: approverTimer, Enabled: true}); err != nil {
		return nil, err
	}

	// aiokube.
	tokens, err := legacyTokens(o.Manifests)
	if err != nil {
		return nil, err
	}
	aiokubeUnit, err := renderTemplate("aiokube.service", map[string]any{"Script": AIOKubeScript, "Env": envLines(o.aiokubeEnv(in.Images.Image("tools"), tokens, in.NodeName, APILabels(in)))})
	if err != nil {
		return nil, err
	}
	if err := addProgram(t, AIOKubeScript, "aiokube.sh"); err != nil {
		return nil, err
	}
	if err := t.AddUnit(export.Unit{Name: AIOKubeUnit, Contents: aiokubeUnit, Enabled: true}); err != nil {
		return nil, err
	}
	patches, err := StatusPatches(o.Manifests)
	if err != nil {
		return nil, err
	}
	for file, p := range patches {
		if err := add(path.Join(StatusDir, file+".json"), 0600, p); err != nil {
			return nil, err
		}
	}
	if err := t.AddDir(StateDir, 0700); err != nil {
		return nil, err
	}

	// aio-update: applies the updates of `render-static renew` (aioupdate.go).
	if err := n.addUpdater(t); err != nil {
		return nil, err
	}
	return t, nil
}

// kubeletNode is what differs between the kubelets a render configures: the control-plane node's and each
// worker's.
type kubeletNode struct {
	name  string
	ips   []netip.Addr
	what  string // in the unit's description: "all-in-one node", "worker node"
	role  string // the machine-config pool: master, worker
	hosts []byte // /etc/hosts
	// labels are those the kubelet registers with, taints those it registers with.
	labels, taints []string
	// declared: the control plane declares the node's Node (WorkerNodes), so the kubelet registers none.
	declared bool
}

// addKubelet adds a node's kubelet and CRI-O: kubelet.service, kubelet.conf, the kubelet's client CA and its
// kubeconfig (its own client certificate, as the render's CSR approval signed it), the pull secret and CRI-O's
// drop-ins, /etc/hosts, and the node files of the install-config's user inputs. It returns the bundle that verifies
// kube-apiserver's serving certificates.
func (n *Node) addKubelet(ctx context.Context, t *export.Tree, k kubeletNode) (serverCA []byte, err error) {
	in := n.in
	cfg, err := kubeletConfiguration(in, k.ips)
	if err != nil {
		return nil, err
	}
	if k.declared {
		cfg.RegisterNode = new(bool)
	}
	kubeletConf, err := MarshalKubeletConfiguration(cfg)
	if err != nil {
		return nil, err
	}
	clientCA, err := n.bundle(ctx, kubeletClientCA.Namespace, kubeletClientCA.Name, kubeletClientCA.Key)
	if err != nil {
		return nil, fmt.Errorf("kubelet client CA: %w", err)
	}
	serverCA, err = n.bundle(ctx, apiServerCA.Namespace, apiServerCA.Name, apiServerCA.Key)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver serving CA: %w", err)
	}
	kubeletKubeconfig, err := n.kubeconfig(ctx, nodeIdentityOf(k.name), serverCA, "kubelet")
	if err != nil {
		return nil, err
	}
	unit, err := renderTemplate("kubelet.service", map[string]any{"Node": k.what, "StaticPodPath": StaticPodPath,
		"Flags": kubeletFlagsOf(k.name, k.ips, k.labels, k.taints)})
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		path string
		mode fs.FileMode
		data []byte
	}{
		{KubeletConfigPath, 0644, kubeletConf},
		{KubeletClientCAPath, 0644, clientCA},
		{KubeletKubeconfigPath, 0600, kubeletKubeconfig},
		{PullSecretPath, 0600, pullSecret(in)},
		{CRIODropinPath, 0644, []byte(crioDropin(in))},
		{HostsPath, 0644, k.hosts},
	} {
		if err := t.AddFile(f.path, f.mode, f.data); err != nil {
			return nil, err
		}
	}
	if err := t.AddUnit(export.Unit{Name: KubeletUnit, Contents: unit, Enabled: true}); err != nil {
		return nil, err
	}
	if err := t.AddDir(KubeletConfigDir, 0755); err != nil {
		return nil, err
	}
	if err := addUserInputs(t, in.InstallConfig, k.role); err != nil {
		return nil, err
	}
	if err := addPodNetwork(t, in, k.name, serverCA); err != nil {
		return nil, err
	}
	if env := proxyEnv(in, k.ips); env != nil {
		dropin := "[Service]\n"
		for _, l := range envLines(env) {
			dropin += l + "\n"
		}
		if err := t.AddUnit(export.Unit{Name: "crio.service", Dropins: []export.Dropin{{Name: "10-render-static-proxy.conf", Contents: dropin}}}); err != nil {
			return nil, err
		}
	}
	return serverCA, nil
}

// kubeconfig is the api-int kubeconfig (context user) of a node-side client identity: its certificate as the
// render's CSR approval signed it, trusting serverCA.
func (n *Node) kubeconfig(ctx context.Context, id clientIdentity, serverCA []byte, user string) ([]byte, error) {
	cert, key, err := n.clientCertificate(ctx, id)
	if err != nil {
		return nil, err
	}
	ic := n.in.InstallConfig
	return certs.Kubeconfig(ic.Metadata.Name, ic.APIServerInternalURL(), serverCA, cert, key, user)
}

func (n *Node) bundle(ctx context.Context, ns, name, key string) ([]byte, error) {
	cm, err := n.cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return configMapKey(cm, key)
}

// addUserInputs adds the node files of the install-config fields the user sets: the mirrors' registries.conf, the
// user CA bundle's trust anchor, cpuPartitioningMode AllNodes' workload pinning and fips' encapsulated
// MachineConfig of the node's machine-config pool (role) (userinputs.go). Every one applies to every node.
func addUserInputs(t *export.Tree, ic *installconfig.InstallConfig, role string) error {
	kubeletPinning, crioPinning := workloadPinning(ic)
	fips, err := fipsMachineConfig(ic, role)
	if err != nil {
		return fmt.Errorf("fips: %w", err)
	}
	for _, f := range []struct {
		path string
		mode fs.FileMode
		data []byte
	}{
		{RegistriesConfPath, 0644, RegistriesConf(ic)},
		{UserCATrustAnchorPath, 0600, userCATrustAnchor(ic)},
		{WorkloadPinningPath, 0644, kubeletPinning},
		{CRIOWorkloadPinningPath, 0644, crioPinning},
		{EncapsulatedMachineConfigPath, 0644, fips},
	} {
		if f.data == nil {
			continue
		}
		if err := t.AddFile(f.path, f.mode, f.data); err != nil {
			return err
		}
	}
	return nil
}

// addPodNetwork adds a node's side of the built-in pod network (pkg/podnetwork: the CNI conflist, the routes data,
// kube-proxy's static pod and files) and aio-pod-network, which installs the routes on every boot; nothing when the
// install-config names a network of the user's.
func addPodNetwork(t *export.Tree, in *clusterconfig.Inputs, name string, serverCA []byte) error {
	if !podnetwork.Enabled(in) {
		return nil
	}
	n, err := podnetwork.NodeNamed(in, name)
	if err != nil {
		return err
	}
	files, err := podnetwork.NodeFiles(in, n, serverCA)
	if err != nil {
		return fmt.Errorf("pod network: %w", err)
	}
	for _, f := range files {
		if err := t.AddFile(f.Path, f.Mode, f.Data); err != nil {
			return err
		}
	}
	unit, err := renderTemplate(PodNetworkUnit, map[string]any{"Script": PodNetworkScript, "Env": envLines(podNetworkEnv())})
	if err != nil {
		return err
	}
	if err := addProgram(t, PodNetworkScript, "aio-pod-network.sh"); err != nil {
		return err
	}
	return t.AddUnit(export.Unit{Name: PodNetworkUnit, Contents: unit, Enabled: true})
}

// podNetworkEnv is aio-pod-network's configuration (aio-pod-network.service).
func podNetworkEnv() map[string]string {
	return map[string]string{"AIO_POD_NETWORK_ROUTES": podnetwork.RoutesPath, "AIO_POD_NETWORK_KUBELET_DROPIN": PodNetworkResolvDropin}
}
