package node

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/podnetwork"
)

// CRI-O's socket on RHCOS.
const crioEndpoint = "unix:///var/run/crio/crio.sock"

// VolumePluginDir is where OpenShift keeps flexvolume plugins (kube-controller-manager's flex-volume-plugin-dir);
// the kubelet's default lies under /usr, which is read-only on RHCOS.
const VolumePluginDir = "/etc/kubernetes/kubelet-plugins/volume/exec"

// The node labels of the roles (the machine-config operator's kubelet units, templates/master and
// templates/worker 01-*-kubelet/_base/units/kubelet.service.yaml, --node-labels), and the taint of a control-plane
// node that runs no workloads (the master unit's --register-with-taints; with mastersSchedulable the
// machine-config operator's node controller removes it and adds the worker role: pkg/controller/node,
// reconcileMaster).
const (
	RoleControlPlane   = "node-role.kubernetes.io/control-plane"
	RoleMaster         = "node-role.kubernetes.io/master"
	RoleWorker         = "node-role.kubernetes.io/worker"
	osLabel            = "node.openshift.io/os_id=rhcos"
	ControlPlaneTaint  = RoleMaster + "=:NoSchedule"
	registerTaintsFlag = "--register-with-taints="
)

// NodeLabels are the control-plane node's labels: control plane and master, and worker too when it runs workloads
// (clusterconfig.Inputs.MastersSchedulable: no workers asked for at install), as the machine-config operator's
// node controller leaves them. OpenShift's kubelet accepts node-role labels at registration; an upstream kubelet
// refuses to start with labels in the kubernetes.io and k8s.io namespaces outside its allowed list
// (k8s.io/kubelet's IsKubeletLabel, pkg/kubelet/apis/well_known_labels.go), so for it those are set through the
// API after registration, as kubeadm's mark-control-plane phase does (RegistrationLabels, APILabels).
func NodeLabels(in *clusterconfig.Inputs) []string {
	out := []string{RoleControlPlane, RoleMaster}
	if in.MastersSchedulable() {
		out = append(out, RoleWorker)
	}
	return append(out, osLabel)
}

// WorkerLabels are a worker's labels (the machine-config operator's worker kubelet unit).
var WorkerLabels = []string{RoleWorker, osLabel}

// restrictedLabel reports whether an upstream kubelet refuses a label at registration: a key in the kubernetes.io
// or k8s.io namespace (or a subdomain of them) that is not one of the kubelet's own (none of the role labels is).
func restrictedLabel(label string) bool {
	key, _, _ := strings.Cut(label, "=")
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, ns := range []string{"kubernetes.io", "k8s.io"} {
		if prefix == ns || strings.HasSuffix(prefix, "."+ns) {
			return true
		}
	}
	return false
}

// RegistrationLabels are the labels kubelet.service passes (--node-labels): all of NodeLabels for OpenShift's
// kubelet, the unrestricted ones for an upstream kubelet.
func RegistrationLabels(in *clusterconfig.Inputs) []string {
	return registrationLabels(NodeLabels(in), in.Flavor)
}

func registrationLabels(labels []string, flavor clusterconfig.Flavor) []string {
	var out []string
	for _, l := range labels {
		if flavor != clusterconfig.FlavorUpstream || !restrictedLabel(l) {
			out = append(out, l)
		}
	}
	return out
}

// APILabels are the labels the first-boot apply sets on the Node through the API (key=value, "key=" for an empty
// value): the rest of NodeLabels.
func APILabels(in *clusterconfig.Inputs) []string { return apiLabels(NodeLabels(in), in.Flavor) }

func apiLabels(labels []string, flavor clusterconfig.Flavor) []string {
	reg := map[string]bool{}
	for _, l := range registrationLabels(labels, flavor) {
		reg[l] = true
	}
	var out []string
	for _, l := range labels {
		if !reg[l] {
			if !strings.Contains(l, "=") {
				l += "="
			}
			out = append(out, l)
		}
	}
	return out
}

// KubeletConfiguration is /etc/kubernetes/kubelet.conf for RHCOS: CRI-O, the systemd cgroup driver, static pods
// from StaticPodPath, client-certificate authentication against kube-apiserver's kubelet client CA and webhook
// authorization, serving certificates requested by CSR (serverTLSBootstrap) and client certificate rotation.
// Node name and IPs are flags (--hostname-override, --node-ip) in kubelet.service.
func KubeletConfiguration(in *clusterconfig.Inputs) (*kubeletv1beta1.KubeletConfiguration, error) {
	return kubeletConfiguration(in, in.NodeIPs)
}

// kubeletConfiguration is KubeletConfiguration of a node with these IPs: a worker's is the control-plane node's
// but for the address it listens on, which follows its own IPs' families.
func kubeletConfiguration(in *clusterconfig.Inputs, nodeIPs []netip.Addr) (*kubeletv1beta1.KubeletConfiguration, error) {
	dns, err := clusterDNSIP(in)
	if err != nil {
		return nil, err
	}
	address := "0.0.0.0"
	for _, ip := range nodeIPs {
		if ip.Is6() {
			// "::" listens on both families; the API server reaches the kubelet at the node's InternalIP(s).
			address = "::"
		}
	}
	f, t := false, true
	maxPods, pids := int32(250), int64(4096)
	return &kubeletv1beta1.KubeletConfiguration{
		TypeMeta:                 metav1.TypeMeta{APIVersion: kubeletv1beta1.SchemeGroupVersion.String(), Kind: "KubeletConfiguration"},
		StaticPodPath:            StaticPodPath,
		ContainerRuntimeEndpoint: crioEndpoint,
		CgroupDriver:             "systemd",
		CgroupRoot:               "/",
		SystemCgroups:            "/system.slice",
		Address:                  address,
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: KubeletClientCAPath},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: &t},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: &f},
		},
		Authorization:             kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook},
		RotateCertificates:        true,
		ServerTLSBootstrap:        true,
		TLSMinVersion:             "VersionTLS12",
		ClusterDomain:             podnetwork.ClusterDomain,
		ClusterDNS:                []string{dns.String()},
		MaxPods:                   maxPods,
		PodPidsLimit:              &pids,
		SerializeImagePulls:       &f,
		NodeStatusUpdateFrequency: metav1.Duration{Duration: 10 * time.Second},
		ContainerLogMaxSize:       "50Mi",
		VolumePluginDir:           VolumePluginDir,
		SystemReserved:            map[string]string{"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
	}, nil
}

// clusterDNSIP is the cluster DNS service IP OpenShift's DNS operator uses: the tenth address of the first
// service network (172.30.0.10, fd02::a): the first of the cluster DNS Service's IPs (podnetwork.ClusterDNSIPs, the
// one rule for both).
func clusterDNSIP(in *clusterconfig.Inputs) (netip.Addr, error) {
	ips, err := podnetwork.ClusterDNSIPs(in.InstallConfig)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("kubelet: %w", err)
	}
	return ips[0], nil
}

// MarshalKubeletConfiguration writes the configuration as YAML with only what is set: unset durations ("0s"),
// empty objects and nulls are left out, so the kubelet's defaults apply to them.
func MarshalKubeletConfiguration(cfg *kubeletv1beta1.KubeletConfiguration) ([]byte, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if reflect.ValueOf(cfg.Logging).IsZero() {
		// Its fields are not omitempty; unset, the kubelet's logging defaults apply.
		delete(m, "logging")
	}
	pruneZero(m, func(v any) bool { return v == nil || v == "0s" })
	return yaml.Marshal(m)
}

// pruneZero removes, recursively, the map entries whose value is zero by isZero, and maps left empty; list
// elements are kept as they are (they are values, not optional fields). It reports whether m ended up empty.
func pruneZero(m map[string]any, isZero func(any) bool) bool {
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			if pruneZero(x, isZero) {
				delete(m, k)
			}
		case []any:
			if len(x) == 0 {
				delete(m, k)
			}
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					pruneZero(em, isZero)
				}
			}
		default:
			if isZero(v) {
				delete(m, k)
			}
		}
	}
	return len(m) == 0
}

// kubeletFlags are what kubelet.service passes besides --config: the node's name and IPs (primary first), its
// kubeconfig, the registration labels, and the control-plane taint when it runs no workloads.
func kubeletFlags(in *clusterconfig.Inputs) []string {
	return kubeletFlagsOf(in.NodeName, in.NodeIPs, RegistrationLabels(in), controlPlaneTaints(in))
}

// controlPlaneTaints are the taints the control-plane node registers with: ControlPlaneTaint when it runs no
// workloads.
func controlPlaneTaints(in *clusterconfig.Inputs) []string {
	if in.MastersSchedulable() {
		return nil
	}
	return []string{ControlPlaneTaint}
}

// kubeletFlagsOf are kubeletFlags of a node (the control-plane node, or a worker).
func kubeletFlagsOf(name string, nodeIPs []netip.Addr, labels, taints []string) []string {
	ips := make([]string, len(nodeIPs))
	for i, ip := range nodeIPs {
		ips[i] = ip.String()
	}
	flags := []string{
		"--config=" + KubeletConfigPath,
		"--config-dir=" + KubeletConfigDir,
		"--kubeconfig=" + KubeletKubeconfigPath,
		"--runtime-cgroups=/system.slice/crio.service",
		"--node-ip=" + strings.Join(ips, ","),
		"--hostname-override=" + name,
		"--node-labels=" + strings.Join(labels, ","),
	}
	if len(taints) > 0 {
		flags = append(flags, registerTaintsFlag+strings.Join(taints, ","))
	}
	return append(flags, "--v=2")
}

// crioDropin makes CRI-O read the cluster's pull secret and use the payload's pause image (registry credentials
// for it from the same file), and find the CNI configuration and plugins where the machine-config operator's CRI-O
// configuration puts them (templates/common/_base/files/crio.yaml: network_dir /etc/kubernetes/cni/net.d/,
// plugin_dirs /var/lib/cni/bin and /usr/libexec/cni, where RHCOS ships the reference plugins): the built-in pod
// network's conflist (pkg/podnetwork), or the one a network of the user's writes there.
func crioDropin(in *clusterconfig.Inputs) string {
	return fmt.Sprintf(`# Written by render-static: CRI-O pulls with the cluster's pull secret and uses the payload's pause image.
[crio.image]
global_auth_file = %q
pause_image = %q
pause_image_auth_file = %q

[crio.network]
network_dir = %q
plugin_dirs = [%q, %q]
`, PullSecretPath, in.Images.Image("pod"), PullSecretPath, podnetwork.CNIConfDir+"/", "/var/lib/cni/bin", "/usr/libexec/cni")
}

// proxyEnv is the environment CRI-O pulls images with when the install-config sets a proxy: the proxies, and a
// no-proxy list of the user's entries plus everything that must never go through a proxy on a node with these IPs (the
// control-plane node's, or a worker's own).
func proxyEnv(in *clusterconfig.Inputs, nodeIPs []netip.Addr) map[string]string {
	p := in.InstallConfig.Proxy
	if p == nil || (p.HTTPProxy == "" && p.HTTPSProxy == "") {
		return nil
	}
	var no []string
	seen := map[string]bool{}
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s != "" && !seen[s] {
			seen[s] = true
			no = append(no, s)
		}
	}
	for _, s := range strings.Split(p.NoProxy, ",") {
		add(s)
	}
	for _, s := range []string{"localhost", "127.0.0.1", "::1", ".svc", ".cluster.local", "api-int." + in.InstallConfig.ClusterDomain()} {
		add(s)
	}
	for _, ip := range nodeIPs {
		add(ip.String())
	}
	for _, set := range [][]netip.Prefix{in.InstallConfig.MachineCIDRs(), in.InstallConfig.ClusterCIDRs(), in.InstallConfig.ServiceCIDRs()} {
		for _, c := range set {
			add(c.String())
		}
	}
	env := map[string]string{"NO_PROXY": strings.Join(no, ",")}
	if p.HTTPProxy != "" {
		env["HTTP_PROXY"] = p.HTTPProxy
	}
	if p.HTTPSProxy != "" {
		env["HTTPS_PROXY"] = p.HTTPSProxy
	}
	return env
}

// pullSecret is the install-config's pull secret, as CRI-O reads it.
func pullSecret(in *clusterconfig.Inputs) []byte {
	s := in.InstallConfig.PullSecret
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return []byte(s)
}

// kubeletClientCA is the bundle the kubelet authenticates clients with: kube-apiserver's kubelet client CA.
var kubeletClientCA = struct{ Namespace, Name, Key string }{"openshift-kube-apiserver-operator", "kube-apiserver-to-kubelet-client-ca", "ca-bundle.crt"}

// apiServerCA is the bundle that verifies every kube-apiserver serving certificate (api-int included).
var apiServerCA = struct{ Namespace, Name, Key string }{"openshift-kube-apiserver", "kube-apiserver-server-ca", "ca-bundle.crt"}

func configMapKey(cm *corev1.ConfigMap, key string) ([]byte, error) {
	v, ok := cm.Data[key]
	if !ok || strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("configmap %s/%s has no %s", cm.Namespace, cm.Name, key)
	}
	return []byte(v), nil
}

// cutLabel splits a label as the kubelet's --node-labels takes it ("key=value", or "key" for an empty value).
func cutLabel(l string) (key, value string, ok bool) { return strings.Cut(l, "=") }
