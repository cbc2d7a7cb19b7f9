package etcd_test

import (
	"crypto/x509"
	"encoding/base64"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/etcd"
)

const (
	certDir = "etc/kubernetes/static-pod-resources/etcd-certs/"
	revDir  = "etc/kubernetes/static-pod-resources/etcd-pod-1/"
)

func pool(t *testing.T, pemData []byte) (*x509.CertPool, []*x509.Certificate) {
	t.Helper()
	cs, err := certs.ParseCertificates(pemData)
	if err != nil || len(cs) == 0 {
		t.Fatalf("no certificates in bundle: %v", err)
	}
	p := x509.NewCertPool()
	for _, c := range cs {
		p.AddCert(c)
	}
	return p, cs
}

func leaf(t *testing.T, pemData []byte) *x509.Certificate {
	t.Helper()
	cs, err := certs.ParseCertificates(pemData)
	if err != nil || len(cs) == 0 {
		t.Fatalf("no certificate: %v", err)
	}
	return cs[0]
}

// TestCertificates checks, for IPv4, IPv6 and dual stack, what other components and etcd itself rely on:
// openshift-config/etcd-serving-ca is the etcd CA bundle the pod trusts; openshift-config/etcd-client is a client
// certificate for etcd-client in system:etcd that verifies against it; the node's peer, serving and metrics
// certificates are client and server certificates for every node IP and the fixed etcd names; leaves live
// --cert-validity and signers at least ten years.
func TestCertificates(t *testing.T) {
	for _, nc := range []netCase{ipv4, ipv6, dual} {
		t.Run(nc.name, func(t *testing.T) {
			r := render(t, nc)
			caBundle := r.configMap(t, etcd.TargetNamespace, etcd.CABundleName).Data["ca-bundle.crt"]
			servingCA := r.configMap(t, etcd.ConfigNamespace, etcd.ServingCAName).Data["ca-bundle.crt"]
			if servingCA == "" || servingCA != caBundle {
				t.Errorf("openshift-config/etcd-serving-ca is not openshift-etcd/etcd-ca-bundle")
			}
			if got := r.configMap(t, etcd.ConfigNamespace, etcd.CABundleName).Data["ca-bundle.crt"]; got != caBundle {
				t.Errorf("openshift-config/etcd-ca-bundle is not openshift-etcd/etcd-ca-bundle")
			}
			serverBundle := r.file(t, certDir+"configmaps/etcd-all-bundles/server-ca-bundle.crt")
			if string(serverBundle) != caBundle || string(r.file(t, revDir+"configmaps/etcd-all-bundles/server-ca-bundle.crt")) != caBundle {
				t.Errorf("the pod's server-ca-bundle.crt is not the etcd CA bundle")
			}
			metricsBundle := r.file(t, certDir+"configmaps/etcd-all-bundles/metrics-ca-bundle.crt")
			if string(metricsBundle) != r.configMap(t, etcd.TargetNamespace, etcd.MetricsBundleName).Data["ca-bundle.crt"] {
				t.Errorf("the pod's metrics-ca-bundle.crt is not the metrics CA bundle")
			}
			roots, signers := pool(t, []byte(servingCA))
			metricRoots, metricSigners := pool(t, metricsBundle)
			for _, s := range append(signers, metricSigners...) {
				if !s.IsCA || s.NotAfter.Sub(s.NotBefore) < certs.MinSignerValidity-time.Hour {
					t.Errorf("signer %s: CA %v, lives %s", s.Subject.CommonName, s.IsCA, s.NotAfter.Sub(s.NotBefore))
				}
			}
			if string(metricsBundle) == servingCA {
				t.Errorf("metrics and server CA bundles are the same")
			}

			// The client certificates kube-apiserver and monitoring use.
			client := r.secret(t, etcd.ConfigNamespace, etcd.ClientName)
			if src := r.secret(t, etcd.TargetNamespace, etcd.ClientName); string(src.Data["tls.crt"]) != string(client.Data["tls.crt"]) || len(client.Data["tls.key"]) == 0 {
				t.Errorf("openshift-config/etcd-client is not openshift-etcd/etcd-client with its key")
			}
			for _, c := range []struct {
				pem    []byte
				roots  *x509.CertPool
				user   string
				groups string
			}{
				{client.Data["tls.crt"], roots, "etcd-client", "system:etcd,etcd-client"},
				{r.secret(t, etcd.TargetNamespace, etcd.MetricClientName).Data["tls.crt"], metricRoots, "etcd-metric", "system:etcd,etcd-metric"},
			} {
				cert := leaf(t, c.pem)
				if _, err := cert.Verify(x509.VerifyOptions{Roots: c.roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
					t.Errorf("%s does not verify as a client against its CA bundle: %v", c.user, err)
				}
				orgs := append([]string(nil), cert.Subject.Organization...)
				sort.Strings(orgs)
				want := strings.Split(c.groups, ",")
				sort.Strings(want)
				if cert.Subject.CommonName != c.user || strings.Join(orgs, ",") != strings.Join(want, ",") {
					t.Errorf("client subject = %v, want %s in %s", cert.Subject, c.user, c.groups)
				}
				checkLeafLifetime(t, c.user, cert)
			}
			if _, err := leaf(t, client.Data["tls.crt"]).Verify(x509.VerifyOptions{Roots: metricRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
				t.Errorf("etcd-client verifies against the metrics CA")
			}

			// The node's certificates, as the pod reads them.
			names := []string{"localhost", "etcd.kube-system.svc", "etcd.kube-system.svc.cluster.local", "etcd.openshift-etcd.svc", "etcd.openshift-etcd.svc.cluster.local", "127.0.0.1", "::1"}
			for _, ip := range r.nodeIPs() {
				names = append(names, ip.String())
			}
			for secret, rootPool := range map[string]*x509.CertPool{
				etcd.PeerSecret(node): roots, etcd.ServingSecret(node): roots, etcd.ServingMetricsSecret(node): metricRoots,
			} {
				p := certDir + "secrets/etcd-all-certs/" + secret + ".crt"
				if string(r.file(t, p)) != string(r.file(t, revDir+"secrets/etcd-all-certs/"+secret+".crt")) {
					t.Errorf("%s: cert dir and revision differ", secret)
				}
				if !strings.Contains(string(r.file(t, certDir+"secrets/etcd-all-certs/"+secret+".key")), "PRIVATE KEY") {
					t.Errorf("%s has no key", secret)
				}
				cert := leaf(t, r.file(t, p))
				for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
					if _, err := cert.Verify(x509.VerifyOptions{Roots: rootPool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
						t.Errorf("%s does not verify for usage %v: %v", secret, usage, err)
					}
				}
				for _, name := range names {
					if err := cert.VerifyHostname(name); err != nil {
						t.Errorf("%s: %v", secret, err)
					}
				}
				var ips []string
				for _, ip := range cert.IPAddresses {
					ips = append(ips, ip.String())
				}
				if len(cert.IPAddresses) != 2+len(r.nodeIPs()) {
					t.Errorf("%s IP SANs = %v, want 127.0.0.1, ::1 and %v", secret, ips, r.nodeIPs())
				}
				if d := r.secret(t, etcd.TargetNamespace, secret).Annotations["openshift.io/description"]; !strings.HasSuffix(d, "for node "+node) {
					t.Errorf("%s description %q does not name the node", secret, d)
				}
				checkLeafLifetime(t, secret, cert)
			}
			if _, err := leaf(t, r.file(t, certDir+"secrets/etcd-all-certs/"+etcd.ServingSecret(node)+".crt")).Verify(x509.VerifyOptions{Roots: metricRoots}); err == nil {
				t.Errorf("the serving certificate verifies against the metrics CA")
			}
		})
	}
}

func checkLeafLifetime(t *testing.T, name string, c *x509.Certificate) {
	t.Helper()
	if life := c.NotAfter.Sub(c.NotBefore); life < certs.DefaultLeafValidity-2*time.Hour || life > certs.DefaultLeafValidity+2*time.Hour {
		t.Errorf("%s lives %s, want --cert-validity %s", name, life, certs.DefaultLeafValidity)
	}
}

// TestNetworkFamilies checks what depends on the node's IPs: the endpoints configmap (the primary IP, keyed by its
// base64 text), the environment, and the listen addresses of the pod.
func TestNetworkFamilies(t *testing.T) {
	for _, nc := range []netCase{ipv4, ipv6, dual} {
		t.Run(nc.name, func(t *testing.T) {
			r := render(t, nc)
			primary := r.nodeIPs()[0]
			ep := r.configMap(t, etcd.TargetNamespace, etcd.EndpointsName)
			key := base64.RawStdEncoding.EncodeToString([]byte(primary.String()))
			if len(ep.Data) != 1 || ep.Data[key] != primary.String() || strings.Contains(key, "=") {
				t.Errorf("etcd-endpoints data = %v, want {%s: %s}", ep.Data, key, primary)
			}
			if _, ok := r.files[revDir+"configmaps/etcd-endpoints/"+key]; !ok {
				t.Errorf("the revision has no etcd-endpoints/%s", key)
			}
			pod := r.pod(t)
			env := envOf(container(t, pod, "etcd"))
			host := escaped(primary.String())
			url := "https://" + net.JoinHostPort(primary.String(), "2379")
			for k, v := range map[string]string{
				"ALL_ETCD_ENDPOINTS": url, "ETCDCTL_ENDPOINTS": url,
				"NODE_sno_0_IP": host, "NODE_sno_0_ETCD_URL_HOST": host, "NODE_sno_0_ETCD_NAME": node,
				"ETCDCTL_CERT":      "/etc/kubernetes/static-pod-certs/secrets/etcd-all-certs/etcd-peer-sno-0.crt",
				"ETCD_MAX_LEARNERS": "1", "ETCD_TLS_MIN_VERSION": "TLS1.2", "ETCD_QUOTA_BACKEND_BYTES": "8589934592",
				"ETCD_IMAGE": r.in.Images.Image("etcd"), "ETCD_STATIC_POD_VERSION": "1",
			} {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			arch, archSet := env["ETCD_UNSUPPORTED_ARCH"]
			if wantArch := r.in.InstallConfig.ControlPlane.Architecture; wantArch == "arm64" && arch != "arm64" || wantArch != "arm64" && archSet {
				t.Errorf("ETCD_UNSUPPORTED_ARCH = %q (set %v) for architecture %q", arch, archSet, wantArch)
			}
			// 0.0.0.0 and 127.0.0.1 on every family, as the operator's pod substitution has them.
			listen, loopback := "0.0.0.0", "127.0.0.1"
			etcdScript := container(t, pod, "etcd").Command[2]
			metricsScript := container(t, pod, "etcd-metrics").Command[2]
			for _, want := range []string{"--listen-client-urls=https://" + listen + ":2379", "--listen-peer-urls=https://" + listen + ":2380", "--listen-metrics-urls=https://" + listen + ":9978"} {
				if !strings.Contains(etcdScript, want) {
					t.Errorf("etcd script lacks %s", want)
				}
			}
			for _, want := range []string{"--metrics-addr https://" + listen + ":9979", "--listen-addr " + loopback + ":9977"} {
				if !strings.Contains(metricsScript, want) {
					t.Errorf("etcd-metrics script lacks %s", want)
				}
			}
		})
	}
}
