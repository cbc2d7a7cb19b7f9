package pipeline

import (
	"bytes"
	"crypto/x509"
	"net"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	kasRev    = "/etc/kubernetes/static-pod-resources/kube-apiserver-pod-1/"
	kasCerts  = "/etc/kubernetes/static-pod-resources/kube-apiserver-certs/"
	etcdRev   = "/etc/kubernetes/static-pod-resources/etcd-pod-1/"
	etcdCerts = "/etc/kubernetes/static-pod-resources/etcd-certs/"
)

// TestCrossComponent checks what one component's revision takes from another, on the node, for every IP family:
// kube-apiserver's etcd CA is etcd's server CA bundle, its etcd client certificate verifies against it, its
// etcd-servers are the node IP and localhost (IPv6 bracketed), and etcd's serving and peer certificates carry the
// node's IPs and name.
func TestCrossComponent(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, tc.config, tc.nodeIP)
			etcdCA := r.files[etcdRev+"configmaps/etcd-all-bundles/server-ca-bundle.crt"]
			kasCA := r.files[kasRev+"configmaps/etcd-serving-ca/ca-bundle.crt"]
			if len(etcdCA) == 0 || !bytes.Equal(etcdCA, kasCA) {
				t.Fatalf("kube-apiserver's etcd-serving-ca (%d bytes) is not etcd's server CA bundle (%d bytes)", len(kasCA), len(etcdCA))
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(etcdCA)
			client := parsePEMCerts(t, r.files[kasRev+"secrets/etcd-client/tls.crt"])
			if _, err := client[0].Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("kube-apiserver's etcd client certificate does not verify against etcd's CA: %v", err)
			}

			var cfg struct {
				APIServerArguments map[string][]string `json:"apiServerArguments"`
			}
			if err := yaml.Unmarshal(r.files[kasRev+"configmaps/config/config.yaml"], &cfg); err != nil {
				t.Fatal(err)
			}
			ips := r.nodeIPs(t)
			want := []string{"https://" + net.JoinHostPort(ips[0], "2379"), "https://localhost:2379"}
			if got := cfg.APIServerArguments["etcd-servers"]; strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("etcd-servers = %v, want %v", got, want)
			}

			for _, kind := range []string{"etcd-serving-", "etcd-peer-", "etcd-serving-metrics-"} {
				p := etcdCerts + "secrets/etcd-all-certs/" + kind + "sno-0.crt"
				cert := r.certFor(t, p, ips...)
				if cert == nil {
					continue
				}
				if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil && kind != "etcd-serving-metrics-" {
					t.Errorf("%s does not verify against etcd's server CA: %v", p, err)
				}
			}
		})
	}
}

// nodeIPs reads the primary node IP back from etcd.env (NODE_<node>_IP, bracketed for IPv6), then the others.
func (r *rendered) nodeIPs(t *testing.T) []string {
	t.Helper()
	env := string(r.files[etcdCerts+"configmaps/etcd-scripts/etcd.env"])
	var out []string
	for _, line := range strings.Split(env, "\n") {
		if strings.HasPrefix(line, "export NODE_sno_0_IP=") {
			out = append(out, strings.Trim(strings.TrimPrefix(line, "export NODE_sno_0_IP="), `"[]`))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no NODE_sno_0_IP in etcd.env")
	}
	return append(out, r.secondaryIPs...)
}
