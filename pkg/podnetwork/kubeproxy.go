package podnetwork

import (
	"fmt"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/render-static/render-static/internal/kubeconfig"
	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/clusterconfig"
)

// kubeProxyBinary is the kube-proxy binary of each flavor's image: the upstream image's (registry.k8s.io/kube-proxy,
// k8s.io/kubernetes build/server-image: /usr/local/bin/kube-proxy) and OKD's origin-kube-proxy (the
// cluster-network-operator's bindata/kube-proxy runs /usr/bin/kube-proxy).
func kubeProxyBinary(f clusterconfig.Flavor) string {
	if f == clusterconfig.FlavorUpstream {
		return "/usr/local/bin/kube-proxy"
	}
	return "/usr/bin/kube-proxy"
}

// KubeProxyPod is kube-proxy's static pod (manifests/podnetwork/kube-proxy-pod.yaml).
func KubeProxyPod(in *clusterconfig.Inputs) ([]byte, error) {
	return manifests.Execute("podnetwork/kube-proxy-pod.yaml", nil, map[string]any{
		"Image": in.Images.Image(clusterconfig.KubeProxyImage), "Binary": kubeProxyBinary(in.Flavor),
		"ConfigPath": KubeProxyConfigPath, "ConfigDir": KubeProxyDir, "CertDir": KubeletCertDir,
	})
}

// KubeProxyConfig is the node's KubeProxyConfiguration (manifests/podnetwork/kube-proxy-config.yaml): iptables
// mode; clusterCIDR every cluster network (kube-proxy's local-traffic detection, one per family on dual stack);
// the node's name, which kube-proxy reads its Node by (its IPs, its primary family); bind addresses of the first
// service network's family (the kubelet's rule, docs/network-rules.md): healthz on every address at kube-proxy's
// port 10256, metrics on the loopback at 10249 (kube-proxy's defaults, k8s.io/kubernetes
// pkg/proxy/apis/config/v1alpha1 defaults.go).
func KubeProxyConfig(in *clusterconfig.Inputs, n Node) ([]byte, error) {
	var cidrs []string
	for _, c := range in.InstallConfig.ClusterCIDRs() {
		cidrs = append(cidrs, c.Masked().String())
	}
	bind, healthz := "0.0.0.0", "0.0.0.0:10256"
	if in.InstallConfig.IPv6Primary() {
		bind, healthz = "::", "[::]:10256"
	}
	return manifests.Execute("podnetwork/kube-proxy-config.yaml", nil, map[string]any{
		"NodeName": n.Name, "Kubeconfig": KubeProxyKubeconfigPath, "BindAddress": bind, "HealthzBindAddress": healthz,
		"ClusterCIDR": strings.Join(cidrs, ","),
	})
}

// KubeProxyKubeconfig is kube-proxy's kubeconfig: the server the node's kubelet uses (api-int), trusting serverCA
// (the kubelet's kubeconfig's), and the node's own client certificate and key BY FILE, the kubelet's current one
// (KubeletClientCurrent), so that kube-proxy follows the kubelet's rotation: client-go reloads a certificate named
// by file (k8s.io/client-go transport/transport.go loadTLSFiles, ReloadTLSFiles). No key of its own: it is listed
// by `render-static certs` and renewed by renew as the node's client certificate.
func KubeProxyKubeconfig(in *clusterconfig.Inputs, serverCA []byte) ([]byte, error) {
	if len(serverCA) == 0 {
		return nil, fmt.Errorf("kube-proxy kubeconfig: no kube-apiserver serving CA")
	}
	ic := in.InstallConfig
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ic.Metadata.Name] = &clientcmdapi.Cluster{Server: ic.APIServerInternalURL(), CertificateAuthorityData: serverCA}
	cfg.AuthInfos["kube-proxy"] = &clientcmdapi.AuthInfo{ClientCertificate: KubeletClientCurrent, ClientKey: KubeletClientCurrent}
	cfg.Contexts["kube-proxy"] = &clientcmdapi.Context{Cluster: ic.Metadata.Name, AuthInfo: "kube-proxy"}
	cfg.CurrentContext = "kube-proxy"
	return kubeconfig.Write(*cfg)
}

// NodeFiles are the pod network's and kube-proxy's files of a node (none when the network is the user's): the CNI
// conflist, the routes data, kube-proxy's static pod, configuration and kubeconfig. serverCA verifies
// kube-apiserver's serving certificates (the kubelet's kubeconfig's bundle).
func NodeFiles(in *clusterconfig.Inputs, n Node, serverCA []byte) ([]File, error) {
	if !Enabled(in) {
		return nil, nil
	}
	conflist, err := Conflist(in, n)
	if err != nil {
		return nil, err
	}
	routes, err := Routes(in, n)
	if err != nil {
		return nil, err
	}
	pod, err := KubeProxyPod(in)
	if err != nil {
		return nil, err
	}
	cfg, err := KubeProxyConfig(in, n)
	if err != nil {
		return nil, err
	}
	kc, err := KubeProxyKubeconfig(in, serverCA)
	if err != nil {
		return nil, err
	}
	return []File{
		{ConflistPath, 0644, conflist},
		{RoutesPath, 0644, routes},
		{KubeProxyPodPath, 0644, pod},
		{KubeProxyConfigPath, 0644, cfg},
		{KubeProxyKubeconfigPath, 0600, kc},
	}, nil
}
