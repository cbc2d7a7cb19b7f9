package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v32 "github.com/coreos/ignition/v2/config/v3_2"
	"github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/vincent-petithory/dataurl"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/node"
)

// repo is the repository root, for testdata.
func repo(p string) string { return filepath.Join("..", "..", p) }

type renderCase struct {
	name       string
	config     string
	nodeIP     string
	serviceIPs []string // first IP of each service network, all expected in the service-network cert
}

var renderCases = []renderCase{
	{"ipv4", "examples/sno/install-config.yaml", "192.168.126.10", []string{"172.30.0.1"}},
	{"ipv6", "testdata/installconfig/good/ipv6.yaml", "", nil},
	{"dualstack", "testdata/installconfig/good/dualstack.yaml", "", nil},
	{"proxy", "testdata/installconfig/good/proxy.yaml", "", nil},
}

// rendered holds what one render wrote, decoded.
type rendered struct {
	dir     string
	out     *Output
	ign     types.Config
	files   map[string][]byte // node path → contents, from aio.ign
	modes   map[string]int
	domain  string
	sshKeys []string
	// secondaryIPs are node IPs after the primary (dual stack).
	secondaryIPs []string
}

// testOptions are the options of a test's render of config (repository-relative) on node sno-0 into a new
// directory.
func testOptions(t *testing.T, config, nodeIP string) Options {
	return Options{InstallConfig: repo(config), NodeIP: nodeIP, NodeName: "sno-0", Dir: filepath.Join(t.TempDir(), "out"),
		CertValidity: certs.DefaultLeafValidity, InfraID: "sno-x7k2p"}
}

func render(t *testing.T, config, nodeIP string) *rendered {
	t.Helper()
	if nodeIP == "" {
		nodeIP = nodeIPFromComment(t, repo(config))
	}
	o := testOptions(t, config, nodeIP)
	dir := o.Dir
	in, err := Validate(o)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	eng, err := Settle(context.Background(), in)
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	out, err := Export(context.Background(), eng)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	if err := out.Write(dir); err != nil {
		t.Fatalf("write: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "aio.ign"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, rpt, err := v32.Parse(raw)
	if err != nil || len(rpt.Entries) > 0 {
		t.Fatalf("aio.ign does not parse as spec 3.2: %v %v", err, rpt)
	}
	r := &rendered{dir: dir, out: out, ign: cfg, files: map[string][]byte{}, modes: map[string]int{}, domain: in.InstallConfig.ClusterDomain(), sshKeys: in.InstallConfig.SSHKeys()}
	for _, ip := range in.NodeIPs[1:] {
		r.secondaryIPs = append(r.secondaryIPs, ip.String())
	}
	for _, f := range cfg.Storage.Files {
		du, err := dataurl.DecodeString(*f.Contents.Source)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		data := du.Data
		if f.Contents.Compression != nil && *f.Contents.Compression == "gzip" {
			data = gunzip(t, data)
		}
		r.files[f.Path] = data
		r.modes[f.Path] = *f.Mode
	}
	return r
}

func gunzip(t *testing.T, data []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// nodeIPFromComment reads "# node-ip: IP" from a testdata install-config.
func nodeIPFromComment(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^# node-ip: (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no '# node-ip:' comment", path)
	}
	return string(m[1])
}

func TestRender(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, tc.config, tc.nodeIP)
			checkIgnitionValidate(t, filepath.Join(r.dir, "aio.ign"))
			checkModes(t, r)
			checkCertificates(t, r)
			r.certFor(t, kasCerts+"secrets/service-network-serving-certkey/tls.crt", tc.serviceIPs...)
			checkAdminKubeconfig(t, r)
			checkTrace(t, r)
			checkCRDs(t, r)
			checkInventoryFromObjects(t, r)
			if got := string(r.files["/etc/hostname"]); got != "sno-0\n" {
				t.Errorf("/etc/hostname = %q", got)
			}
			if keys := r.sshKeys; len(keys) > 0 && (len(r.ign.Passwd.Users) != 1 || r.ign.Passwd.Users[0].Name != "core" || len(r.ign.Passwd.Users[0].SSHAuthorizedKeys) != len(keys)) {
				t.Errorf("aio.ign users = %+v, want core with the sshKey", r.ign.Passwd.Users)
			}
		})
	}
}

func checkIgnitionValidate(t *testing.T, path string) {
	bin := testtools.Tool(t, "ignition-validate")
	out, err := exec.Command(bin, path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("ignition-validate %s: %v\n%s", path, err, out)
	}
}

// checkModes: every file holding a private key or a token is 0600, in aio.ign and in rootfs/; aio.ign itself and
// the admin kubeconfig are 0600.
func checkModes(t *testing.T, r *rendered) {
	for p, data := range r.files {
		if strings.Contains(string(data), "PRIVATE KEY") || strings.Contains(p, "/secrets/") || strings.HasSuffix(p, "kubeconfig") {
			if r.modes[p] != 0600 {
				t.Errorf("%s holds secret material but has mode %o in aio.ign", p, r.modes[p])
			}
			st, err := os.Stat(filepath.Join(r.dir, "rootfs", p))
			if err != nil {
				t.Errorf("rootfs lacks %s: %v", p, err)
			} else if st.Mode().Perm() != 0600 {
				t.Errorf("rootfs%s has mode %o", p, st.Mode().Perm())
			}
		}
	}
	for _, p := range []string{"aio.ign", "auth/kubeconfig"} {
		st, err := os.Stat(filepath.Join(r.dir, p))
		if err != nil || st.Mode().Perm() != 0600 {
			t.Errorf("%s: mode %v err %v, want 0600", p, st.Mode().Perm(), err)
		}
	}
	// rootfs/ holds exactly the files aio.ign lays down.
	n := 0
	_ = filepath.WalkDir(filepath.Join(r.dir, "rootfs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
			rel := "/" + strings.TrimPrefix(p, filepath.Join(r.dir, "rootfs")+"/")
			if _, ok := r.files[rel]; !ok && !strings.HasPrefix(rel, "/etc/systemd/") {
				t.Errorf("rootfs has %s, aio.ign does not", rel)
			}
		}
		return nil
	})
	if n < len(r.files) {
		t.Errorf("rootfs has %d files, aio.ign %d", n, len(r.files))
	}
}

func parsePEMCerts(t *testing.T, data []byte) []*x509.Certificate {
	cs, err := certs.ParseCertificates(data)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// checkCertificates: every leaf certificate on the node verifies against a CA bundle aio.ign carries, with the
// SANs the operator gives it; leaves live --cert-validity, signers at least ten years.
func checkCertificates(t *testing.T, r *rendered) {
	roots := x509.NewCertPool()
	nBundles := 0
	for _, data := range r.caBundles(t) {
		for _, c := range parsePEMCerts(t, data) {
			if c.IsCA {
				roots.AddCert(c)
				nBundles++
			}
		}
	}
	if nBundles == 0 {
		t.Fatal("aio.ign carries no CA bundle")
	}
	leaves := 0
	for p, data := range r.files {
		if !strings.HasSuffix(p, "/tls.crt") {
			continue
		}
		cs := parsePEMCerts(t, data)
		if len(cs) == 0 {
			t.Errorf("%s holds no certificate", p)
			continue
		}
		leaf := cs[0]
		leaves++
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}, CurrentTime: time.Now()}); err != nil {
			t.Errorf("%s (CN %s) does not verify against aio.ign's CA bundles: %v", p, leaf.Subject.CommonName, err)
		}
		life := leaf.NotAfter.Sub(leaf.NotBefore)
		switch {
		case leaf.IsCA: // an intermediate signer (kube-controller-manager's csr-signer) lives as long as signers
			if life < certs.MinSignerValidity-time.Hour {
				t.Errorf("%s: signer %s lives only %s", p, leaf.Subject.CommonName, life)
			}
		case life < certs.DefaultLeafValidity-2*time.Hour || life > certs.DefaultLeafValidity+2*time.Hour:
			t.Errorf("%s lives %s, want --cert-validity %s", p, life, certs.DefaultLeafValidity)
		}
		keyPath := strings.TrimSuffix(p, "tls.crt") + "tls.key"
		if _, ok := r.files[keyPath]; !ok {
			t.Errorf("%s has no %s", p, keyPath)
		}
	}
	if leaves < 8 {
		t.Errorf("only %d leaf certificates on the node", leaves)
	}
	// Signers (the CAs in the bundles) live at least ten years.
	for p, data := range r.caBundles(t) {
		for _, c := range parsePEMCerts(t, data) {
			if c.IsCA && c.NotAfter.Sub(c.NotBefore) < certs.MinSignerValidity-time.Hour {
				t.Errorf("%s: signer %s lives only %s", p, c.Subject.CommonName, c.NotAfter.Sub(c.NotBefore))
			}
		}
	}

	// kube-apiserver's serving certificates carry the names the operator gives them; its client certificates
	// are the users it authenticates as.
	for _, c := range []struct {
		secret string
		names  []string // a serving certificate's SANs
		user   string   // a client certificate's common name
	}{
		{secret: "localhost-serving-cert-certkey", names: []string{"localhost", "127.0.0.1"}},
		{secret: "external-loadbalancer-serving-certkey", names: []string{"api." + r.domain}},
		{secret: "internal-loadbalancer-serving-certkey", names: []string{"api-int." + r.domain}},
		{secret: "service-network-serving-certkey",
			names: append([]string{"kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "openshift.default.svc"}, r.serviceIPs()...)},
		{secret: "aggregator-client", user: "system:openshift-aggregator"},
		{secret: "kubelet-client", user: "system:kube-apiserver"},
		{secret: "control-plane-node-admin-client-cert-key", user: "system:control-plane-node-admin"},
		{secret: "check-endpoints-client-cert-key", user: "system:serviceaccount:openshift-kube-apiserver:check-endpoints"},
	} {
		cert := r.certFor(t, kasCerts+"secrets/"+c.secret+"/tls.crt", c.names...)
		if cert != nil && c.user != "" && cert.Subject.CommonName != c.user {
			t.Errorf("%s: a client certificate for %s, want %s", c.secret, cert.Subject.CommonName, c.user)
		}
	}
}

// certFor returns the first certificate of the node file p after checking that it is valid for every name; where
// the render has no certificate there it reports it and returns nil.
func (r *rendered) certFor(t *testing.T, p string, names ...string) *x509.Certificate {
	t.Helper()
	cs := parsePEMCerts(t, r.files[p])
	if len(cs) == 0 {
		t.Errorf("%s missing", p)
		return nil
	}
	for _, name := range names {
		if err := cs[0].VerifyHostname(name); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	return cs[0]
}

// caBundles returns every CA bundle aio.ign carries: ca-bundle.crt files, and the ca-bundle.crt key of every
// ConfigMap manifest it lays down, by where it was found.
func (r *rendered) caBundles(t *testing.T) map[string][]byte {
	out := map[string][]byte{}
	for p, data := range r.files {
		if strings.HasSuffix(p, "ca-bundle.crt") {
			out[p] = data
		}
		if strings.HasPrefix(p, node.ManifestsDir+"/") && strings.Contains(p, "_configmap_") {
			var cm corev1.ConfigMap
			if err := yaml.UnmarshalStrict(data, &cm); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if b, ok := cm.Data["ca-bundle.crt"]; ok {
				out[p] = []byte(b)
			}
		}
	}
	return out
}

// serviceIPs reads the service networks back from the rendered Network manifest.
func (r *rendered) serviceIPs() []string {
	var out []string
	for _, m := range r.out.Manifests {
		if m.GVK.Kind == "Network" && m.GVK.Group == "config.openshift.io" {
			spec, _ := m.Object["spec"].(map[string]interface{})
			nets, _ := spec["serviceNetwork"].([]interface{})
			for _, n := range nets {
				_, ipn, err := net.ParseCIDR(n.(string))
				if err != nil {
					continue
				}
				ip := ipn.IP
				ip[len(ip)-1]++
				out = append(out, ip.String())
			}
		}
	}
	return out
}

// checkAdminKubeconfig: server is the external API name, the CA verifies that name's serving certificate, and the
// client certificate is system:admin in system:masters, chaining to kube-apiserver's client CA bundle.
func checkAdminKubeconfig(t *testing.T, r *rendered) {
	raw, err := os.ReadFile(filepath.Join(r.dir, "auth", "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != string(r.files[node.AdminKubeconfigPath]) {
		t.Errorf("auth/kubeconfig differs from the node's %s", node.AdminKubeconfigPath)
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if want := "https://api." + r.domain + ":6443"; cluster.Server != want {
		t.Errorf("server = %s, want %s", cluster.Server, want)
	}
	serverRoots := x509.NewCertPool()
	serverRoots.AppendCertsFromPEM(cluster.CertificateAuthorityData)
	lb := parsePEMCerts(t, r.files[kasCerts+"secrets/external-loadbalancer-serving-certkey/tls.crt"])
	if _, err := lb[0].Verify(x509.VerifyOptions{Roots: serverRoots, DNSName: "api." + r.domain}); err != nil {
		t.Errorf("kubeconfig CA does not verify the API serving cert: %v", err)
	}
	block, _ := pem.Decode(user.ClientCertificateData)
	client, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if client.Subject.CommonName != "system:admin" || len(client.Subject.Organization) != 1 || client.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin client subject = %v", client.Subject)
	}
	clientCA := x509.NewCertPool()
	clientCA.AppendCertsFromPEM(r.files[kasCerts+"configmaps/client-ca/ca-bundle.crt"])
	if _, err := client.Verify(x509.VerifyOptions{Roots: clientCA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin client cert does not chain to kube-apiserver's client-ca: %v", err)
	}
}

// checkCRDs: every exported custom resource has its CRD among the manifests, ordered before it.
func checkCRDs(t *testing.T, r *rendered) {
	crdFor := map[string]string{}
	for _, m := range r.out.Manifests {
		if m.GVK.Kind == "CustomResourceDefinition" {
			spec, _ := m.Object["spec"].(map[string]interface{})
			names, _ := spec["names"].(map[string]interface{})
			crdFor[fmt.Sprintf("%v/%v", spec["group"], names["kind"])] = m.File
		}
	}
	if len(crdFor) == 0 {
		t.Fatal("no CRD exported")
	}
	for _, m := range r.out.Manifests {
		if m.GVK.Group == "config.openshift.io" || m.GVK.Group == "operator.openshift.io" {
			f, ok := crdFor[m.GVK.Group+"/"+m.GVK.Kind]
			if !ok {
				t.Errorf("%s is exported without its CRD", m.File)
			} else if f >= m.File {
				t.Errorf("CRD %s is not applied before %s", f, m.File)
			}
		}
	}
}

// checkTrace: the trace names the loops that wrote, and ends with a pass that wrote nothing.
func checkTrace(t *testing.T, r *rendered) {
	trace, err := os.ReadFile(filepath.Join(r.dir, "trace.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// Every phase ends with a pass that wrote nothing: the last pass line of each phase is a fixpoint.
	lastOfPhase := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(trace)), "\n") {
		if m := regexp.MustCompile(`^# (\w+) pass \d+: `).FindStringSubmatch(l); m != nil {
			lastOfPhase[m[1]] = l
		}
	}
	if lastOfPhase["converge"] == "" {
		t.Errorf("trace has no converge phase")
	}
	for phase, l := range lastOfPhase {
		if !regexp.MustCompile(`: 0 writes, 0 loop errors, .*\(fixpoint\)$`).MatchString(l) {
			t.Errorf("phase %s does not end with a pass without writes: %q", phase, l)
		}
	}
	if !strings.Contains(string(trace), "cert-rotation/ServiceNetworkServing") || !strings.Contains(string(trace), "emulate/cluster-network-operator") {
		t.Errorf("trace does not attribute writes to loops:\n%s", trace)
	}
}
