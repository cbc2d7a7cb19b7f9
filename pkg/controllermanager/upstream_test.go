package controllermanager_test

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"maps"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/internal/testkit/upstreamtest"
	"github.com/render-static/render-static/pkg/controllermanager"
)

// upstreamPod is what --flavor upstream's kube-controller-manager pod must be: a flag-only pod for the upstream
// image, every flag one of kube-controller-manager v1.34.3's, every file one the render lays down (the files the
// OpenShift pod names; the rest of the render is the OpenShift flavor's), and what every upstream pod must be
// (upstreamtest.Pod's tests); beyond that a token key kube-apiserver verifies, a CSR signer that is a CA with its
// key, clients authenticated as kube-apiserver does, a root CA for pods; the cluster's networks, name and signing
// duration; the controllers, all of v1.34.3's; the proxy as for the OpenShift pod.
var upstreamPod = &upstreamtest.Pod{
	Component: component,
	PodName:   "kube-controller-manager", Namespace: controllermanager.TargetNamespace, PodFile: podFile,
	ImageName: controllermanager.UpstreamImage,
	MinFlags:  120, MinValues: map[string]int{"controller": 40, "cipher-suite": 10, "tls-version": 4},
	FileFlags: map[string]bool{
		"client-ca-file": true, "requestheader-client-ca-file": true, "service-account-private-key-file": true,
		"root-ca-file": true, "cluster-signing-cert-file": true, "cluster-signing-key-file": true,
	},
	Once: []string{"kubeconfig", "client-ca-file", "requestheader-client-ca-file", "service-account-private-key-file",
		"root-ca-file", "cluster-signing-cert-file", "cluster-signing-key-file"},
	Forbidden: []string{"cluster-policy"},
	Port:      10257,
	ProxyEnv: func(r *upstreamtest.Render) ([]string, error) {
		proxy, err := r.Settled.Cluster.ConfigInformers.Config().V1().Proxies().Lister().Get("cluster")
		if err != nil {
			return nil, err
		}
		return proxyEnv(proxy.Status), nil
	},
	Want: func(r *upstreamtest.Render, c upstreamtest.Case) map[string]string {
		nets := upstreamNetworks[c.Name]
		return map[string]string{
			"cluster-cidr": nets[0], "service-cluster-ip-range": nets[1], "allocate-node-cidrs": "false",
			"cluster-name": r.Inputs.InfraID, "cluster-signing-duration": "720h", "use-service-account-credentials": "true",
			"controllers": "*,-ttl-controller,-bootstrap-signer-controller,-token-cleaner-controller,selinux-warning-controller",
		}
	},
	Check: checkUpstreamPod,

	OpenShiftFlags: func(t *testing.T, openshift *rendertest.Render, pod *corev1.Pod) map[string]string {
		osFlags := map[string]string{}
		for _, f := range execFlags(t, pod.Spec.Containers[0].Args[0], "hyperkube kube-controller-manager") {
			name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
			osFlags[name] = value
		}
		for name, v := range extendedArgs(t, openshift) {
			if len(v) == 1 {
				osFlags[name] = v[0]
			}
		}
		return osFlags
	},
	SamePaths: "authentication-kubeconfig authorization-kubeconfig cert-dir client-ca-file cluster-signing-cert-file cluster-signing-key-file " +
		"kubeconfig requestheader-client-ca-file root-ca-file service-account-private-key-file",
	MinLayoutFiles:      20,
	SameFiles:           []string{revDir + "/configmaps/config/config.yaml", revDir + "/configmaps/controller-manager-kubeconfig/kubeconfig"},
	OpenShiftContainers: "kube-controller-manager cluster-policy-controller kube-controller-manager-cert-syncer kube-controller-manager-recovery-controller",
	OpenShiftFlag:       "--openshift-config=",

	FlagListHeader: `kube-controller-manager v1.34.3, from the --help of the binary test/e2e builds (k8s.io/kubernetes v1.34.3):
flag NAME TYPE [deprecated] (TYPE bool: no value type), controller, default-disabled-controller,
cipher-suite (preferred), insecure-cipher-suite, tls-version. Regenerate with
  go test ./pkg/controllermanager -run TestUpstreamFlagsParseWithTheBinary -args -update-upstream-flags`,
	ValueLists: append([]upstreamtest.ValueList{
		{Kind: "controller", Flag: "controllers", After: "All controllers:", Before: "Disabled-by-default"},
		{Kind: "default-disabled-controller", Flag: "controllers", After: "Disabled-by-default controllers:", Before: "(default"},
	}, upstreamtest.TLSValueLists...),
	Rejected: [][]string{{"--openshift-config=/x"}, {"--bind-address=not-an-ip"}, {"--cluster-signing-duration=forever"}},
}

// upstreamNetworks are each case's cluster networks and service networks.
var upstreamNetworks = map[string][2]string{
	"ipv4":      {"10.128.0.0/14", "172.30.0.0/16"},
	"ipv6":      {"fd01::/48", "fd02::/112"},
	"dualstack": {"10.128.0.0/14,fd01::/48", "172.30.0.0/16,fd02::/112"},
	"proxy":     {"10.128.0.0/14", "172.30.0.0/16"},
}

// TestUpstream runs upstreamtest.Pod's tests of the pod, the files it shares with the OpenShift pod, the layout and
// the OpenShift flavor; TestUpstreamFlagsParseWithTheBinary its flag-list test.
func TestUpstream(t *testing.T)                        { upstreamPod.Run(t) }
func TestUpstreamFlagsParseWithTheBinary(t *testing.T) { upstreamPod.TestFlagsParseWithTheBinary(t) }

// checkUpstreamPod: kube-controller-manager authenticates the clients kube-apiserver does; pods get a CA that
// verifies kube-apiserver on the service network; the CSR signer is a CA and its key; tokens it signs verify at
// kube-apiserver; every controller it names is one of v1.34.3's.
func checkUpstreamPod(t *testing.T, p *upstreamtest.PodUnderTest) {
	r := p.R
	for flag, kas := range map[string]string{"client-ca-file": "client-ca", "requestheader-client-ca-file": "aggregator-client-ca"} {
		f, ok := r.File(kasCerts + "/configmaps/" + kas + "/ca-bundle.crt")
		if !ok || string(p.File(t, flag)) != string(f.Contents) {
			t.Errorf("--%s is not kube-apiserver's %s", flag, kas)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.File(t, "root-ca-file")) {
		t.Errorf("--root-ca-file holds no certificate")
	}
	if svc, err := r.Certificate(kasCerts + "/secrets/service-network-serving-certkey/tls.crt"); err != nil {
		t.Error(err)
	} else if _, err := svc.Verify(x509.VerifyOptions{Roots: roots, DNSName: "kubernetes.default.svc"}); err != nil {
		t.Errorf("--root-ca-file does not verify kube-apiserver for kubernetes.default.svc: %v", err)
	}
	pair, err := tls.X509KeyPair(p.File(t, "cluster-signing-cert-file"), p.File(t, "cluster-signing-key-file"))
	if err != nil {
		t.Errorf("CSR signer: %v", err)
	} else if signer, err := x509.ParseCertificate(pair.Certificate[0]); err != nil || !signer.IsCA || !strings.HasPrefix(signer.Subject.CommonName, "kube-csr-signer") {
		t.Errorf("CSR signer %v: want the kube-csr-signer CA (%v)", signer.Subject, err)
	}
	checkTokenKey(t, r, p.File(t, "service-account-private-key-file"))
	for _, entry := range strings.Split(p.One(t, "controllers"), ",") {
		if name := strings.TrimPrefix(entry, "-"); entry != "*" && !p.List.Values["controller"][name] {
			t.Errorf("--controllers: %s is not a kube-controller-manager v1.34.3 controller", entry)
		}
	}
}

// checkTokenKey: the token signing key's public half is one of kube-apiserver's revisioned token verification keys.
func checkTokenKey(t *testing.T, r *upstreamtest.Render, keyPEM []byte) {
	t.Helper()
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		t.Errorf("--service-account-private-key-file: %v", err)
		return
	}
	pub, err := x509.MarshalPKIXPublicKey(key.(crypto.Signer).Public())
	if err != nil {
		t.Fatal(err)
	}
	for p, f := range r.Files() {
		if !strings.HasPrefix(p, "/etc/kubernetes/static-pod-resources/kube-apiserver-pod-1/configmaps/sa-token-signing-certs/") {
			continue
		}
		keys, err := keyutil.ParsePublicKeysPEM(f.Contents)
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
		for _, k := range keys {
			if der, _ := x509.MarshalPKIXPublicKey(k); string(der) == string(pub) {
				return
			}
		}
	}
	t.Errorf("kube-apiserver's revision does not verify tokens signed with --service-account-private-key-file")
}

// TestUpstreamControllers: config.yaml's controller names become kube-controller-manager v1.34's current names; a
// name that is no upstream controller is refused; the package's controller list is v1.34.3's.
func TestUpstreamControllers(t *testing.T) {
	got, err := controllermanager.UpstreamControllers([]string{"*", "-ttl", "-bootstrapsigner", "-tokencleaner", "selinux-warning-controller"})
	if want := "*,-ttl-controller,-bootstrap-signer-controller,-token-cleaner-controller,selinux-warning-controller"; err != nil || strings.Join(got, ",") != want {
		t.Errorf("UpstreamControllers = %v, %v; want %s", got, err, want)
	}
	for _, bad := range [][]string{nil, {"*", "-openshift.io/build"}, {"serviceaccount-pull-secrets"}, {"*,-nosuch"}} {
		if got, err := controllermanager.UpstreamControllers(bad); err == nil {
			t.Errorf("UpstreamControllers(%v) = %v, want an error", bad, got)
		}
	}
	list := upstreamPod.FlagList(t)
	var want []string
	for c := range list.Values["controller"] {
		want = append(want, c)
	}
	sort.Strings(want)
	names := append([]string(nil), controllermanager.UpstreamControllerNames...)
	sort.Strings(names)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("UpstreamControllerNames\n %v\nkube-controller-manager v1.34.3's --help\n %v", names, want)
	}
	// Every default-disabled controller the OpenShift list names is named explicitly.
	for c := range list.Values["default-disabled-controller"] {
		if !strings.Contains(","+strings.Join(got, ",")+",", c+",") {
			t.Errorf("default-disabled controller %s: neither enabled nor disabled explicitly", c)
		}
	}
}

// TestUpstreamArgsFail: the flags of the rendered inputs are the pod's; UpstreamArgs refuses inputs without what
// kube-controller-manager cannot run without, naming it.
func TestUpstreamArgsFail(t *testing.T) {
	r := upstreamPod.Render(t, upstreamtest.Cases[0])
	observed := r.ObservedConfig(t, component)
	var ext struct {
		ExtendedArguments map[string][]string `json:"extendedArguments"`
	}
	cfg, ok := r.File(revDir + "/configmaps/config/config.yaml")
	if !ok {
		t.Fatal("no config.yaml")
	}
	if err := yaml.Unmarshal(cfg.Contents, &ext); err != nil {
		t.Fatal(err)
	}
	inputs := func() controllermanager.UpstreamInputs {
		return controllermanager.UpstreamInputs{ExtendedArguments: maps.Clone(ext.ExtendedArguments), Observed: observed(), NodeIPs: r.Inputs.NodeIPs, Verbosity: 2}
	}
	refused := []upstreamtest.ArgsCase[controllermanager.UpstreamInputs]{
		{Name: "without servingInfo.minTLSVersion", Says: "minTLSVersion", Mutate: func(in *controllermanager.UpstreamInputs) { upstreamtest.WithoutMinTLSVersion(in.Observed) }},
		{Name: "without node IPs", Mutate: func(in *controllermanager.UpstreamInputs) { in.NodeIPs = nil }},
	}
	for _, missing := range []string{"cluster-name", "cluster-cidr", "service-cluster-ip-range", "cluster-signing-duration", "allocate-node-cidrs", "controllers"} {
		refused = append(refused, upstreamtest.ArgsCase[controllermanager.UpstreamInputs]{Name: "without " + missing, Says: missing,
			Mutate: func(in *controllermanager.UpstreamInputs) { delete(in.ExtendedArguments, missing) }})
	}
	upstreamtest.CheckArgs(t, r, podFile, inputs, controllermanager.UpstreamArgs, refused)

	in := inputs()
	in.ServingCert = true
	args, err := controllermanager.UpstreamArgs(in)
	if err != nil || !strings.Contains(strings.Join(args, " "), "--tls-cert-file=/etc/kubernetes/static-pod-resources/secrets/serving-cert/tls.crt") {
		t.Errorf("with a serving certificate: %v %v", args, err)
	}
}
