package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The runner self-test: a hand-written pair of upstream static pods (testdata/selftest: etcd with an init
// container, kube-apiserver with an aescbc encryption config) and certificates made here are packed into an
// Ignition 3.2.0 config, laid out by Debian's Ignition and booted by the runner in a private network
// namespace, for an IPv4 and an IPv6 node. It proves the harness independently of render-static.

type selftestCase struct {
	name, nodeCIDR, serviceCIDR, serviceIP string
}

var selftestCases = []selftestCase{
	{"ipv4", "192.168.126.10/24", "172.30.0.0/16", "172.30.0.1"},
	{"ipv6", "fd2e:6f44:5dd8:c956::14/120", "fd02::/112", "fd02::1"},
}

const selftestDomain = "selftest.example.com"

func TestRunnerSelfTest(t *testing.T) {
	preconditions(t)
	bins := binaries(t)
	for _, c := range selftestCases {
		t.Run(c.name, func(t *testing.T) {
			tm := newTimings("selftest/" + c.name)
			work := workDir(t)
			ign := filepath.Join(work, "aio.ign")
			kubeconfig := filepath.Join(work, "admin.kubeconfig")
			tm.step("render", func() { writeSelftestIgnition(t, c, ign, kubeconfig) })
			tm.step("validate", func() {
				if err := ValidateIgnition(context.Background(), ign); err != nil {
					t.Fatal(err)
				}
			})
			t.Log(tm.String())
			runInner(t, &innerSpec{
				Kind: "selftest", Case: c.name, Ign: ign, Work: work, BinDir: bins.BinDir, NodeName: "master-0",
				NodeAddrs:  []string{c.nodeCIDR},
				Hostnames:  []string{"api." + selftestDomain, "api-int." + selftestDomain, "master-0"},
				Kubeconfig: kubeconfig, Domain: selftestDomain,
			}, 10*time.Minute)
		})
	}
}

// workDir is a scratch directory: t.TempDir(), or a kept one under $RENDER_STATIC_E2E_WORK.
func workDir(t *testing.T) string {
	if base := os.Getenv("RENDER_STATIC_E2E_WORK"); base != "" {
		d := filepath.Join(base, strings.ReplaceAll(t.Name(), "/", "_"))
		os.RemoveAll(d)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("work directory (kept): %s", d)
		return d
	}
	d := t.TempDir()
	// Ignition writes core's ssh key as core (uid 1000): the root's ancestors must be traversable, and
	// t.TempDir makes them 0700.
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func innerSelfTest(t *testing.T, spec *innerSpec) {
	tm := newTimings("selftest/" + spec.Case + " (inner)")
	r := bootInner(t, spec, tm)
	checkIgnitionRoot(t, r.Root)
	controlPlaneChecks(t, spec, r, tm)
}

// checkIgnitionRoot: what the self-test's config asks Ignition for landed: modes, the core user and its key.
func checkIgnitionRoot(t *testing.T, root string) {
	t.Helper()
	for p, want := range map[string]os.FileMode{
		"etc/kubernetes/pki/apiserver.key": 0o600, "etc/kubernetes/pki/apiserver.crt": 0o644,
		"etc/kubernetes/encryption/config.yaml": 0o600, "etc/kubernetes/manifests/etcd.yaml": 0o644,
	} {
		st, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Errorf("ignition root: %v", err)
		} else if st.Mode().Perm() != want {
			t.Errorf("ignition root: %s has mode %o, want %o", p, st.Mode().Perm(), want)
		}
	}
	keys, err := os.ReadFile(filepath.Join(root, "home/core/.ssh/authorized_keys.d/ignition"))
	if err != nil || !strings.Contains(string(keys), "selftest@e2e") {
		t.Errorf("core's ssh key not where Ignition 2.14 puts it: %v %q", err, keys)
	}
}

// --- certificates and the Ignition config ---

type pki struct {
	t     *testing.T
	files map[string][]byte // node path -> content
	modes map[string]int
}

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial int64 = 100

func (p *pki) add(path string, data []byte, mode int) { p.files[path], p.modes[path] = data, mode }

func (p *pki) newKey() (*ecdsa.PrivateKey, []byte) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		p.t.Fatal(err)
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func (p *pki) newCA(cn string) *ca {
	k, _ := p.newKey()
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		p.t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &ca{cert: c, key: k, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf issues a certificate; hosts become DNS or IP SANs.
func (p *pki) leaf(issuer *ca, cn string, orgs []string, server, client bool, hosts ...string) (certPEM, keyPEM []byte) {
	k, keyPEM := p.newKey()
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	if server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer.cert, &k.PublicKey, issuer.key)
	if err != nil {
		p.t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM
}

func urlHost(ip string) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]"
	}
	return ip
}

// writeSelftestIgnition makes the certificates, the two static pods and an encryption config, and writes them
// as an Ignition 3.2.0 config (files as base64 data URLs with modes, user core with a key), plus an admin
// kubeconfig for the checks.
func writeSelftestIgnition(t *testing.T, c selftestCase, ignPath, kubeconfigPath string) {
	writeSelftestIgnitionFor(t, c, selftestDomain, ignPath, kubeconfigPath)
}

// writeSelftestIgnitionFor is writeSelftestIgnition for another cluster domain (api.<domain>, api-int.<domain>).
func writeSelftestIgnitionFor(t *testing.T, c selftestCase, domain, ignPath, kubeconfigPath string) {
	prefix := netip.MustParsePrefix(c.nodeCIDR)
	nodeIP := prefix.Addr().String()
	loop := "127.0.0.1"
	if prefix.Addr().Is6() {
		loop = "::1"
	}
	p := &pki{t: t, files: map[string][]byte{}, modes: map[string]int{}}
	etcdCA, kubeCA := p.newCA("etcd-ca"), p.newCA("kubernetes")
	const etcdDir, kubeDir = "/etc/kubernetes/static-pod-resources/etcd-certs", "/etc/kubernetes/pki"
	p.add(etcdDir+"/ca.crt", etcdCA.pem, 0o644)
	for _, n := range []string{"server", "peer"} {
		crt, key := p.leaf(etcdCA, "master-0", nil, true, true, "localhost", "master-0", nodeIP, "127.0.0.1", "::1")
		p.add(etcdDir+"/"+n+".crt", crt, 0o644)
		p.add(etcdDir+"/"+n+".key", key, 0o600)
	}
	crt, key := p.leaf(etcdCA, "kube-apiserver-etcd-client", nil, false, true)
	p.add(kubeDir+"/apiserver-etcd-client.crt", crt, 0o644)
	p.add(kubeDir+"/apiserver-etcd-client.key", key, 0o600)
	p.add(kubeDir+"/ca.crt", kubeCA.pem, 0o644)
	caKeyDER, err := x509.MarshalECPrivateKey(kubeCA.key)
	if err != nil {
		t.Fatal(err)
	}
	p.add(kubeDir+"/ca.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: caKeyDER}), 0o600)
	crt, key = p.leaf(kubeCA, "kube-apiserver", nil, true, false, "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local", "api."+domain, "api-int."+domain, "localhost", nodeIP, c.serviceIP, "127.0.0.1")
	p.add(kubeDir+"/apiserver.crt", crt, 0o644)
	p.add(kubeDir+"/apiserver.key", key, 0o600)
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	p.add(kubeDir+"/sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}), 0o600)
	p.add(kubeDir+"/sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
	aes := make([]byte, 32)
	rand.Read(aes)
	p.add("/etc/kubernetes/encryption/config.yaml", []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - name: key1
        secret: `+base64.StdEncoding.EncodeToString(aes)+`
  - identity: {}
`), 0o600)
	vals := map[string]string{"NodeIP": nodeIP, "NodeIPURL": urlHost(nodeIP), "Loopback": loop, "LoopbackURL": urlHost(loop), "ServiceCIDR": c.serviceCIDR}
	for _, n := range []string{"etcd.yaml", "kube-apiserver.yaml", "kube-controller-manager.yaml", "kube-scheduler.yaml"} {
		tmpl, err := template.ParseFiles(filepath.Join("testdata", "selftest", n))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := tmpl.Option("missingkey=error").Execute(&b, vals); err != nil {
			t.Fatal(err)
		}
		p.add("/etc/kubernetes/manifests/"+n, b.Bytes(), 0o644)
	}

	// Kubeconfigs: the components talk to api-int.<domain>, the admin to api.<domain>; only the namespace's
	// /etc/hosts resolves them.
	kubeconfig := func(server, cn string, orgs []string) []byte {
		crt, key := p.leaf(kubeCA, cn, orgs, false, true)
		kc := clientcmdapi.NewConfig()
		kc.Clusters["selftest"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: kubeCA.pem}
		kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
		kc.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "selftest", AuthInfo: "user"}
		kc.CurrentContext = "ctx"
		data, err := clientcmd.Write(*kc)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	apiInt := "https://api-int." + domain + ":6443"
	p.add("/etc/kubernetes/controller-manager.conf", kubeconfig(apiInt, "system:kube-controller-manager", nil), 0o600)
	p.add("/etc/kubernetes/scheduler.conf", kubeconfig(apiInt, "system:kube-scheduler", nil), 0o600)
	admin := kubeconfig("https://api."+domain+":6443", "selftest-admin", []string{"system:masters"})
	if err := os.WriteFile(kubeconfigPath, admin, 0o600); err != nil {
		t.Fatal(err)
	}

	// A stand-in for pkg/node's first-boot apply: manifests, a kubeconfig, the aiokube script and its unit.
	p.add("/opt/openshift/auth/kubeconfig", kubeconfig(apiInt, "selftest-aiokube", []string{"system:masters"}), 0o600)
	ms, err := filepath.Glob(filepath.Join("testdata", "selftest", "manifests", "*.yaml"))
	if err != nil || len(ms) == 0 {
		t.Fatalf("self-test manifests: %v", err)
	}
	for _, m := range ms {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		p.add("/opt/openshift/manifests/"+filepath.Base(m), data, 0o644)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "selftest", "aiokube.sh"))
	if err != nil {
		t.Fatal(err)
	}
	p.add("/usr/local/bin/aiokube.sh", script, 0o755)
	unit := "[Unit]\nDescription=Apply the exported manifests (runner self-test stand-in)\n\n[Service]\nType=oneshot\nExecStart=/usr/local/bin/aiokube.sh\n\n[Install]\nWantedBy=multi-user.target\n"

	type source struct {
		Source string `json:"source"`
	}
	type file struct {
		Path      string `json:"path"`
		Mode      int    `json:"mode"`
		Overwrite bool   `json:"overwrite"`
		Contents  source `json:"contents"`
	}
	var files []file
	for _, path := range sortedKeys(p.files) {
		files = append(files, file{Path: path, Mode: p.modes[path], Overwrite: true,
			Contents: source{"data:;base64," + base64.StdEncoding.EncodeToString(p.files[path])}})
	}
	cfg := map[string]any{
		"ignition": map[string]any{"version": "3.2.0"},
		"storage": map[string]any{"files": files,
			"directories": []map[string]any{{"path": "/var/log/kube-apiserver", "mode": 0o700}}},
		"systemd": map[string]any{"units": []map[string]any{{"name": "aiokube.service", "enabled": true, "contents": unit}}},
		"passwd": map[string]any{"users": []map[string]any{{"name": "core",
			"sshAuthorizedKeys": []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample selftest@e2e"}}}},
	}
	data, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ignPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
