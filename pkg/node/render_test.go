package node_test

import (
	"crypto/x509"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/node"
	"github.com/render-static/render-static/pkg/pipeline"
)

// TestRenderedNode renders the dual-stack example through the whole pipeline (every component's loops, then the
// node side's) and checks the node side against what the other components produced: the kubelet's and the
// approver's client certificates chain to kube-apiserver's client-ca, the kubeconfigs trust the api-int serving
// certificate, the kubelet trusts kube-apiserver's client certificate to it, kube-apiserver trusts the CSR
// signer for kubelet serving certificates; nothing FilterExport drops is exported; legacy token secrets are
// exported without the render's token and UID; and aiokube, run on the rendered rootfs with a stub API, creates
// every manifest in order, puts the live legacy tokens into the revision directories, and leaves nothing only the
// first boot needed.
func TestRenderedNode(t *testing.T) {
	testtools.Long(t, "renders the whole cluster")
	dir := filepath.Join(t.TempDir(), "out")
	_, _, out, err := rendertest.Pipeline(pipeline.Options{InstallConfig: rendertest.Repo("testdata/installconfig/good/dualstack.yaml"),
		NodeIP: "192.168.126.10,fd00::10", NodeName: rendertest.NodeName, Dir: dir, CertValidity: certs.DefaultLeafValidity, InfraID: "dual-x7k2p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Write(dir); err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(dir, "rootfs")
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(rootfs, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pool := func(p string) *x509.CertPool {
		t.Helper()
		cp := x509.NewCertPool()
		if !cp.AppendCertsFromPEM(read(p)) {
			t.Fatalf("%s holds no certificate", p)
		}
		return cp
	}
	kasCerts := "/etc/kubernetes/static-pod-resources/kube-apiserver-certs"
	clientCA := pool(kasCerts + "/configmaps/client-ca/ca-bundle.crt")
	for _, kc := range []string{node.KubeletKubeconfigPath, node.ApproverKubeconfig} {
		cfg, err := clientcmd.Load(read(kc))
		if err != nil {
			t.Fatal(err)
		}
		ctx := cfg.Contexts[cfg.CurrentContext]
		user, cluster := cfg.AuthInfos[ctx.AuthInfo], cfg.Clusters[ctx.Cluster]
		leaf, err := certs.ParseCertificates(user.ClientCertificateData)
		if err != nil || len(leaf) == 0 {
			t.Fatalf("%s: %v", kc, err)
		}
		if _, err := leaf[0].Verify(x509.VerifyOptions{Roots: clientCA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: the client certificate (%s) does not chain to kube-apiserver's client-ca: %v", kc, leaf[0].Subject, err)
		}
		if cluster.Server != "https://api-int.dual.example.com:6443" {
			t.Errorf("%s: server %s", kc, cluster.Server)
		}
		servers := x509.NewCertPool()
		servers.AppendCertsFromPEM(cluster.CertificateAuthorityData)
		lb, _ := certs.ParseCertificates(read(kasCerts + "/secrets/internal-loadbalancer-serving-certkey/tls.crt"))
		if _, err := lb[0].Verify(x509.VerifyOptions{Roots: servers, DNSName: "api-int.dual.example.com"}); err != nil {
			t.Errorf("%s: its CA does not verify kube-apiserver's api-int certificate: %v", kc, err)
		}
	}
	kasToKubelet, _ := certs.ParseCertificates(read(kasCerts + "/secrets/kubelet-client/tls.crt"))
	if _, err := kasToKubelet[0].Verify(x509.VerifyOptions{Roots: pool(node.KubeletClientCAPath), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the kubelet does not trust kube-apiserver's client certificate: %v", err)
	}
	// kube-apiserver verifies kubelet serving certificates (signed by kube-controller-manager with the CSR signer)
	// with kubelet-serving-ca.
	signer := csrSigner(t, filepath.Join(dir, "manifests"))
	servingCA, err := filepath.Glob(filepath.Join(rootfs, "/etc/kubernetes/static-pod-resources/kube-apiserver-pod-*/configmaps/kubelet-serving-ca/ca-bundle.crt"))
	if err != nil || len(servingCA) == 0 {
		t.Fatalf("no kubelet-serving-ca in kube-apiserver's revision: %v", err)
	}
	if b, _ := os.ReadFile(servingCA[0]); !strings.Contains(string(b), strings.TrimSpace(signer)) {
		t.Error("kube-apiserver's kubelet-serving-ca does not hold the CSR signer")
	}

	// Nothing a rule drops is exported.
	for _, m := range out.Manifests {
		for _, r := range node.ExportRules {
			if r.Match(m) {
				t.Errorf("%s is exported although rule %s drops it", m.File, r.Name)
			}
		}
	}

	// Legacy service-account tokens: exported without the render's token and UID, while the revision directories
	// aio.ign lays down keep the render's token (what conformance compares); after the first boot they hold the
	// token the live cluster filled the secret with.
	tokenDirs := map[string]string{} // revision directory → namespace/service account
	for _, m := range out.Manifests {
		if !node.IsLegacyToken(m) {
			continue
		}
		if y := string(m.YAML); strings.Contains(y, "\n  token:") || strings.Contains(y, corev1.ServiceAccountUIDKey) {
			t.Errorf("%s is exported with the render's token or service-account UID:\n%s", m.File, y)
		}
		sa := regexp.MustCompile(`(?m)^    kubernetes\.io/service-account\.name: (\S+)$`).FindStringSubmatch(string(m.YAML))
		if sa == nil {
			t.Fatalf("%s names no service account", m.File)
		}
		dirs, _ := filepath.Glob(filepath.Join(rootfs, "/etc/kubernetes/static-pod-resources/*/secrets", m.Name))
		for _, d := range dirs {
			if string(read(strings.TrimPrefix(d, rootfs)+"/namespace")) == m.Namespace {
				tokenDirs[d] = m.Namespace + "-" + sa[1]
				if tok := read(strings.TrimPrefix(d, rootfs) + "/token"); !strings.HasPrefix(string(tok), "eyJ") {
					t.Errorf("%s/token does not hold the render's token: %.20q", d, tok)
				}
			}
		}
	}
	if len(tokenDirs) < 3 {
		t.Fatalf("legacy token secrets on the node: %v; want kube-apiserver's, kube-controller-manager's and kube-scheduler's", tokenDirs)
	}

	// The first boot, with a stub API.
	runFirstBoot(t, rootfs, len(out.Manifests))
	for d, nsSA := range tokenDirs {
		if got, want := string(read(strings.TrimPrefix(d, rootfs)+"/token")), "live-token-"+nsSA+"-live-uid-"+nsSA; got != want {
			t.Errorf("after the first boot %s/token = %.40q…, want %q", strings.TrimPrefix(d, rootfs), got, want)
		}
	}
}

// csrSigner returns the PEM certificate of openshift-kube-controller-manager-operator/csr-signer from the
// exported manifests.
func csrSigner(t *testing.T, manifests string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(manifests, "05_"+node.SignerNamespace+"_secret_"+node.SignerName+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]interface{}
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	data, err := export.SecretData(obj) // its certificate as text (stringData) since export.SecretsAsText
	if err != nil {
		t.Fatal(err)
	}
	pemBytes := data["tls.crt"]
	if pemBytes == nil {
		t.Fatal("csr-signer has no tls.crt")
	}
	cs, err := certs.ParseCertificates(pemBytes)
	if err != nil || len(cs) == 0 {
		t.Fatalf("csr-signer: %v", err)
	}
	return string(pemBytes)
}

// runFirstBoot runs aiokube.sh on the rendered rootfs as aiokube.service would, against the stub API, and checks
// the apply and the clean-up.
func runFirstBoot(t *testing.T, rootfs string, manifests int) {
	t.Helper()
	out, created, err := node.FirstBoot(t, rootfs)
	if err != nil {
		t.Fatalf("aiokube on the rendered rootfs: %v\n%s", err, out)
	}
	if !strings.Contains(out, "every legacy service-account token on the node is the live one") {
		t.Errorf("aiokube did not put the live legacy tokens on the node:\n%s", out)
	}
	if len(created) != manifests {
		t.Errorf("aiokube created %d manifests, the render exported %d", len(created), manifests)
	}
	phase := func(f string) int {
		switch {
		case strings.HasPrefix(f, "00_"):
			return 0
		case strings.HasPrefix(f, "01_"):
			return 1
		}
		return 2
	}
	for i := 1; i < len(created); i++ {
		if phase(created[i]) < phase(created[i-1]) || (phase(created[i]) == phase(created[i-1]) && created[i] < created[i-1]) {
			t.Errorf("%s created after %s", created[i], created[i-1])
		}
	}
	// Nothing only the first boot needed is left, and the control plane's files are all there.
	_ = filepath.WalkDir(rootfs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(p, rootfs), "/")
		if strings.HasPrefix(rel, "/opt/openshift") || strings.Contains(rel, "aiokube") {
			t.Errorf("%s is left after the first boot", rel)
		}
		if !d.IsDir() && strings.HasSuffix(rel, ".preset") {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "aiokube") {
				t.Errorf("%s still enables aiokube", rel)
			}
		}
		return nil
	})
	for _, p := range []string{node.KubeletConfigPath, node.KubeletKubeconfigPath, node.PullSecretPath, node.HostsPath, node.ApproverScript,
		"/etc/systemd/system/" + node.KubeletUnit, "/etc/kubernetes/manifests"} {
		if _, err := os.Stat(filepath.Join(rootfs, p)); err != nil {
			t.Errorf("the first boot removed %s", p)
		}
	}
}
