package podnetwork

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
)

// ClusterDomain is the cluster's DNS domain: the kubelet's clusterDomain and CoreDNS's zone (OpenShift's and
// kubeadm's default).
const ClusterDomain = "cluster.local"

// CoreDNSReplicas are kubeadm's (cmd/kubeadm/app/constants CoreDNSReplicas).
const CoreDNSReplicas = 2

// ClusterDNSIPs are the cluster DNS Service's IPs: the tenth address of each service network, in their order
// (172.30.0.10, fd02::a), as OpenShift's DNS operator (cluster-dns-operator pkg/operator/controller
// controller_dns_service.go) and kubeadm (cmd/kubeadm/app/constants GetDNSIP) choose it. The first is the kubelet's
// clusterDNS (pkg/node).
func ClusterDNSIPs(ic *installconfig.InstallConfig) ([]netip.Addr, error) {
	cidrs := ic.ServiceCIDRs()
	if len(cidrs) == 0 {
		return nil, fmt.Errorf("no service network")
	}
	var out []netip.Addr
	for _, c := range cidrs {
		ip := c.Masked().Addr()
		for i := 0; i < 10; i++ {
			ip = ip.Next()
		}
		if !c.Contains(ip) {
			return nil, fmt.Errorf("service network %s is too small for the cluster DNS address", c)
		}
		out = append(out, ip)
	}
	return out, nil
}

// coreDNSCommand is the command of the CoreDNS container (YAML flow items), "" for the image's entrypoint: the
// upstream image's entrypoint is /coredns (coredns/coredns Dockerfile), which kubeadm relies on; OKD's
// origin-coredns has none of its own and runs coredns from its PATH (the DNS operator's
// assets/dns/daemonset.yaml: command ["coredns"]).
func coreDNSCommand(f clusterconfig.Flavor) string {
	if f == clusterconfig.FlavorUpstream {
		return ""
	}
	return `"coredns"`
}

// ControlPlaneTaints are the control-plane taints CoreDNS tolerates: kubeadm's and the one this render's
// control-plane node registers with when it runs no workloads (pkg/node ControlPlaneTaint: the machine-config
// operator's).
var ControlPlaneTaints = []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"}

// Manifests are the API objects of the add-ons, which the first-boot apply creates (pkg/pipeline exports them with
// the others): kubeadm's CoreDNS addon (manifests/podnetwork/coredns.yaml) and the binding that lets the nodes,
// whose client certificates kube-proxy runs with, act as kube-proxy (node-proxier-clusterrolebinding.yaml).
// None when the network is the user's.
func Manifests(in *clusterconfig.Inputs) ([]export.Manifest, error) {
	if !Enabled(in) {
		return nil, nil
	}
	ips, err := ClusterDNSIPs(in.InstallConfig)
	if err != nil {
		return nil, fmt.Errorf("cluster DNS: %w", err)
	}
	dns, err := manifests.Execute("podnetwork/coredns.yaml", nil, map[string]any{
		"DNSDomain": ClusterDomain, "Replicas": CoreDNSReplicas, "Image": in.Images.Image(clusterconfig.CoreDNSImage),
		"Command": coreDNSCommand(in.Flavor), "ControlPlaneTaints": ControlPlaneTaints, "DNSIPs": ips,
	})
	if err != nil {
		return nil, err
	}
	binding, err := manifests.Read("podnetwork/node-proxier-clusterrolebinding.yaml")
	if err != nil {
		return nil, err
	}
	var out []export.Manifest
	for _, src := range []struct {
		name string
		data []byte
	}{{"podnetwork/coredns.yaml", dns}, {"podnetwork/node-proxier-clusterrolebinding.yaml", binding}} {
		for i, doc := range splitYAML(src.data) {
			// As JSON into an Unstructured: integers stay int64, as the API's objects have them.
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return nil, fmt.Errorf("manifests/%s document %d: %w", src.name, i, err)
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(j); err != nil {
				return nil, fmt.Errorf("manifests/%s document %d: %w", src.name, i, err)
			}
			m, err := export.ToManifest(obj)
			if err != nil {
				return nil, fmt.Errorf("manifests/%s document %d: %w", src.name, i, err)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// splitYAML splits a multi-document YAML stream at its "---" lines, leaving out documents of comments only.
func splitYAML(b []byte) [][]byte {
	var out [][]byte
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		empty := true
		for _, l := range strings.Split(string(doc), "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				empty = false
				break
			}
		}
		if !empty {
			out = append(out, doc)
		}
	}
	return out
}
