package controllermanager_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/controllermanager"
	"github.com/render-static/render-static/pkg/emulate"
)

const (
	revDir    = "/etc/kubernetes/static-pod-resources/kube-controller-manager-pod-1"
	certDir   = "/etc/kubernetes/static-pod-resources/kube-controller-manager-certs"
	kasCerts  = "/etc/kubernetes/static-pod-resources/kube-apiserver-certs"
	podFile   = "kube-controller-manager-pod.yaml"
	component = "kube-controller-manager"
)

func sno(t *testing.T) *rendertest.Render {
	t.Helper()
	return rendertest.SNOFor(t)
}

func file(t *testing.T, r *rendertest.Render, p string) []byte {
	t.Helper()
	f, ok := r.File(p)
	if !ok {
		t.Fatalf("the render has no %s", p)
	}
	return f.Contents
}

// TestRevisionOne: one engine run brings all four components to exactly revision 1, made in the revision phase
// after the converge phase reached a pass without writes, within the time budget of a render.
func TestRevisionOne(t *testing.T) {
	r := sno(t)
	for _, name := range []string{"etcd", "kube-apiserver", component, "kube-scheduler"} {
		if rev := r.Revisions[name]; rev != 1 {
			t.Errorf("%s: latestAvailableRevision %d, want 1", name, rev)
		}
	}
	statuses, err := r.RevisionStatuses(controllermanager.TargetNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 1 || statuses[0] != "revision-status-1" {
		t.Errorf("revision status configmaps %v, want [revision-status-1]", statuses)
	}
	trace := r.Result.Trace()
	if !regexp.MustCompile(`(?m)^# converge pass \d+: 0 writes, 0 loop errors, .*\(fixpoint\)$`).MatchString(trace) {
		t.Errorf("the converge phase did not end with a pass without writes:\n%s", trace)
	}
	for _, w := range r.Result.Writes {
		if w.Phase == "revision" && w.Namespace == controllermanager.TargetNamespace && !strings.HasSuffix(w.Name, "-1") && w.Name != "cluster" {
			t.Errorf("the revision phase wrote %s/%s", w.Namespace, w.Name)
		}
	}
	// A render must stay under 10 s on this machine's two cores. Wall time grows when other tests share the
	// machine, processor time does not: the budget is checked on processor time, wall time is reported.
	t.Logf("the render took %s (%s of processor time)", r.Took.Round(time.Millisecond), r.CPU.Round(time.Millisecond))
	// The 10 s goal is held by `make bench` (BenchmarkRender), not by a timed test.
}

// TestLoopOrder: the loops run in the operator's order, as the package documents it.
func TestLoopOrder(t *testing.T) {
	r := sno(t)
	got := r.LoopOrder(component)
	want := []string{"cert-rotation/CSRSigningCert", "sa-token-signer", "static-resources/" + component, "node/" + component,
		"config-observer/" + component, "target-config", "resource-sync/" + component}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("loops %v, want %v", got, want)
	}
}

// TestConformance compares the pod, the config files and the file list (paths and modes) with the operator's
// reference output; only documented adaptations may differ, and every adaptation must still be needed.
func TestConformance(t *testing.T) {
	rendertest.CheckConformance(t, sno(t), component)
}

// execFlags returns the flags of the first "exec <cmd...>" statement of a script (or of the reference's
// summary), without the command words.
func execFlags(t *testing.T, script, command string) []string {
	t.Helper()
	i := strings.Index(script, "exec "+command)
	if i < 0 {
		t.Fatalf("no exec %s in %q", command, script)
	}
	line := script[i+len("exec "+command):]
	if j := strings.IndexAny(line, "\n>"); j >= 0 {
		line = line[:j]
	}
	return strings.Fields(line)
}

func withoutFeatureGates(flags []string) (rest, gates []string) {
	for _, f := range flags {
		if strings.HasPrefix(f, "--feature-gates=") {
			gates = append(gates, strings.TrimPrefix(f, "--feature-gates="))
		} else {
			rest = append(rest, f)
		}
	}
	return rest, gates
}

// TestPodExecFlags compares kube-controller-manager's exec statement flag by flag with the reference: every flag
// but the feature gates (an api version gap) must be the same, in the same order; the feature gates are the
// Default feature set of the pinned openshift/api, enabled gates first, each part sorted.
func TestPodExecFlags(t *testing.T) {
	r := sno(t)
	var want corev1.Pod
	pod := r.PodAndExpected(t, podFile, &want)
	if len(pod.Spec.Containers[0].Args) != 1 || len(want.Spec.Containers[0].Args) != 1 {
		t.Fatalf("kube-controller-manager must have one script argument")
	}
	got, gotGates := withoutFeatureGates(execFlags(t, pod.Spec.Containers[0].Args[0], "hyperkube kube-controller-manager"))
	exp, expGates := withoutFeatureGates(execFlags(t, want.Spec.Containers[0].Args[0], "hyperkube kube-controller-manager"))
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("exec flags differ:\n got: %s\nwant: %s", strings.Join(got, " "), strings.Join(exp, " "))
	}
	enabled, disabled := rendertest.FeatureGates(t, r)
	var gates []string // flattened extendedArguments are sorted
	for _, g := range enabled {
		gates = append(gates, string(g)+"=true")
	}
	for _, g := range disabled {
		gates = append(gates, string(g)+"=false")
	}
	sort.Strings(gates)
	if len(expGates) == 0 || strings.Join(gotGates, ",") != strings.Join(gates, ",") {
		t.Errorf("--feature-gates flags %v, want the Default feature set %v", gotGates, gates)
	}
}

// TestKubeconfigs: controller-manager-kubeconfig reaches https://api-int.<domain>:6443, verifies kube-apiserver's
// internal load-balancer certificate with serviceaccount-ca, and authenticates as system:kube-controller-manager
// with a certificate kube-apiserver's client CA accepts; both containers that use it see the same files.
func TestKubeconfigs(t *testing.T) {
	r := sno(t)
	domain := r.Inputs.InstallConfig.ClusterDomain()
	for _, container := range []string{"kube-controller-manager", "cluster-policy-controller"} {
		err := r.CheckKubeconfig(rendertest.KubeconfigCheck{
			PodFile: podFile, Container: container,
			Path:   "/etc/kubernetes/static-pod-resources/configmaps/controller-manager-kubeconfig/kubeconfig",
			Server: "https://api-int." + domain + ":6443", User: "system:kube-controller-manager",
			ServerName: "api-int." + domain, ServingCertFile: kasCerts + "/secrets/internal-loadbalancer-serving-certkey/tls.crt",
			ClientCAFile: kasCerts + "/configmaps/client-ca/ca-bundle.crt",
		})
		if err != nil {
			t.Errorf("%s: %v", container, err)
		}
	}
}

// TestCSRSigner: the intermediate kube-csr-signer in the cert directory (--cluster-signing-cert-file) is a CA
// that lives as long as signers do, signed by csr-signer-signer; kube-apiserver trusts what it signs through
// openshift-config-managed/csr-controller-ca.
func TestCSRSigner(t *testing.T) {
	r := sno(t)
	signerPEM := file(t, r, certDir+"/secrets/csr-signer/tls.crt")
	cs, err := certs.ParseCertificates(signerPEM)
	if err != nil || len(cs) != 1 {
		t.Fatalf("csr-signer/tls.crt: %d certificates, %v", len(cs), err)
	}
	signer := cs[0]
	if !signer.IsCA || !strings.HasPrefix(signer.Subject.CommonName, "kube-csr-signer_@") {
		t.Errorf("csr-signer: IsCA %v CN %q, want the kube-csr-signer intermediate", signer.IsCA, signer.Subject.CommonName)
	}
	if life := signer.NotAfter.Sub(signer.NotBefore); life < certs.MinSignerValidity-time.Hour {
		t.Errorf("csr-signer lives %s, want a signer's lifetime", life)
	}
	get := func(ns, name string) *corev1.ConfigMap {
		cm, err := r.Cluster.Kube.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	pool := func(bundle string) *x509.CertPool {
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM([]byte(bundle)) {
			t.Fatalf("empty bundle")
		}
		return p
	}
	signerCA := get(controllermanager.OperatorNamespace, "csr-controller-signer-ca").Data["ca-bundle.crt"]
	if _, err := signer.Verify(x509.VerifyOptions{Roots: pool(signerCA), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("csr-signer does not chain to csr-controller-signer-ca: %v", err)
	}
	published := get(controllermanager.ManagedNamespace, "csr-controller-ca").Data["ca-bundle.crt"]
	for _, want := range []string{string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: signer.Raw})), signerCA} {
		if !strings.Contains(published, strings.TrimSpace(want)) {
			t.Errorf("openshift-config-managed/csr-controller-ca lacks %s", want)
		}
	}
	clientCA := string(file(t, r, kasCerts+"/configmaps/client-ca/ca-bundle.crt"))
	if !strings.Contains(clientCA, strings.TrimSpace(signerCA)) {
		t.Errorf("kube-apiserver's client-ca does not trust the CSR signer")
	}
	cfg := string(file(t, r, revDir+"/configmaps/config/config.yaml"))
	if !strings.Contains(cfg, `"cluster-signing-cert-file":["/etc/kubernetes/static-pod-certs/secrets/csr-signer/tls.crt"]`) {
		t.Errorf("config.yaml does not sign with the cert directory's csr-signer")
	}
}

// TestServiceCAAndSAKey: the revision's service-ca is the emulated service-ca-operator's CA and config.yaml
// points at it; the token signing key is the installer's initial key, whose public half kube-apiserver trusts.
func TestServiceCAAndSAKey(t *testing.T) {
	r := sno(t)
	ctx := t.Context()
	kube := r.Cluster.Kube.CoreV1()
	signing, err := kube.Secrets(emulate.ServiceCANamespace).Get(ctx, emulate.ServiceCASigningKey, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(file(t, r, revDir+"/configmaps/service-ca/ca-bundle.crt")); got != string(signing.Data["tls.crt"]) {
		t.Errorf("the revision's service-ca is not service-ca-operator's signing CA")
	}
	var cfg struct {
		ServiceServingCert struct {
			CertFile string `json:"certFile"`
		} `json:"serviceServingCert"`
	}
	if err := yaml.Unmarshal(file(t, r, revDir+"/configmaps/config/config.yaml"), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ServiceServingCert.CertFile != "/etc/kubernetes/static-pod-resources/configmaps/service-ca/ca-bundle.crt" {
		t.Errorf("serviceServingCert.certFile = %q", cfg.ServiceServingCert.CertFile)
	}

	initial, err := kube.Secrets(clusterconfig.SAPrivateKeyNamespace).Get(ctx, clusterconfig.SAPrivateKeySecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := file(t, r, revDir+"/secrets/service-account-private-key/service-account.key")
	if string(keyPEM) != string(initial.Data[clusterconfig.SAPrivateKeyKey]) {
		t.Errorf("service-account.key is not the installer's initial key")
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		t.Fatal("service-account.key is not PEM")
	}
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := kube.ConfigMaps(clusterconfig.SAPublicKeyNamespace).Get(ctx, clusterconfig.SAPublicKeyConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range trusted.Data {
		if b, _ := pem.Decode([]byte(v)); b != nil && string(b.Bytes) == string(pub) {
			found = true
		}
	}
	if !found {
		t.Errorf("kube-apiserver does not trust the token signing key (sa-token-signing-certs)")
	}
}

// TestRecyclerConfig: the recycler pod template runs the payload's tools image.
func TestRecyclerConfig(t *testing.T) {
	r := sno(t)
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(file(t, r, revDir+"/configmaps/recycler-config/recycler-pod.yaml"), &pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Image != r.Inputs.Images.Image("tools") {
		t.Errorf("recycler pod containers %+v, want one with the tools image", pod.Spec.Containers)
	}
}

func render(t *testing.T, config string) *rendertest.Render {
	t.Helper()
	ips, err := rendertest.NodeIPs(config)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rendertest.Get(config, ips)
	if err != nil {
		t.Fatalf("render %s: %v", config, err)
	}
	return r
}

func extendedArgs(t *testing.T, r *rendertest.Render) map[string][]string {
	t.Helper()
	var cfg struct {
		ExtendedArguments map[string][]string `json:"extendedArguments"`
	}
	if err := yaml.Unmarshal(file(t, r, revDir+"/configmaps/config/config.yaml"), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.ExtendedArguments
}

// TestDualStack: one --service-cluster-ip-range with both service networks, one --cluster-cidr with both cluster
// networks (each a single comma-joined value, as the operator's network observers write them).
func TestDualStack(t *testing.T) {
	r := render(t, "../../testdata/installconfig/good/dualstack.yaml")
	args := extendedArgs(t, r)
	if got := strings.Join(args["service-cluster-ip-range"], " "); got != "172.30.0.0/16,fd02::/112" {
		t.Errorf("service-cluster-ip-range %q", got)
	}
	if got := strings.Join(args["cluster-cidr"], " "); got != "10.128.0.0/14,fd01::/48" {
		t.Errorf("cluster-cidr %q", got)
	}
	if r.Revisions[component] != 1 {
		t.Errorf("revision %d", r.Revisions[component])
	}
}

// TestProxy: every container gets the cluster-wide proxy of Proxy status as environment, sorted.
func TestProxy(t *testing.T) {
	r := render(t, "../../testdata/installconfig/good/proxy.yaml")
	proxy, err := r.Cluster.ConfigInformers.Config().V1().Proxies().Lister().Get("cluster")
	if err != nil {
		t.Fatal(err)
	}
	if proxy.Status.HTTPProxy == "" && proxy.Status.HTTPSProxy == "" {
		t.Fatalf("the proxy case has no proxy in Proxy status: %+v", proxy.Status)
	}
	want := proxyEnv(proxy.Status)
	pod, err := r.Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Spec.Containers {
		var got []string
		for _, e := range c.Env {
			if strings.HasSuffix(e.Name, "_PROXY") {
				got = append(got, e.Name+"="+e.Value)
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: proxy env %v, want %v", c.Name, got, want)
		}
	}
}

func proxyEnv(s configv1.ProxyStatus) []string {
	var out []string
	for _, kv := range [][2]string{{"HTTPS_PROXY", s.HTTPSProxy}, {"HTTP_PROXY", s.HTTPProxy}, {"NO_PROXY", s.NoProxy}} {
		if kv[1] != "" {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out
}

// TestOperatorResource: the exported KubeControllerManager keeps the secure service CA mode the pod was rendered
// for (without it the operator on the node would add the legacy service CA variable: a revision 2).
func TestOperatorResource(t *testing.T) {
	r := sno(t)
	matches, err := filepath.Glob(filepath.Join(r.Dir, "manifests", "*_kubecontrollermanager.operator.openshift.io_cluster.yaml"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("KubeControllerManager manifest: %v %v", matches, err)
	}
	raw, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	var kcm operatorv1.KubeControllerManager
	if err := yaml.UnmarshalStrict(raw, &kcm); err != nil {
		t.Fatal(err)
	}
	if !kcm.Spec.UseMoreSecureServiceCA || kcm.Spec.ManagementState != operatorv1.Managed || kcm.Status.LatestAvailableRevision != 1 {
		t.Errorf("KubeControllerManager spec %+v, latestAvailableRevision %d", kcm.Spec, kcm.Status.LatestAvailableRevision)
	}
	pod, err := r.Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "OPENSHIFT_USE_VULNERABLE_LEGACY_SERVICE_CA_CRT" {
				t.Errorf("%s has %s", c.Name, e.Name)
			}
		}
	}
}
