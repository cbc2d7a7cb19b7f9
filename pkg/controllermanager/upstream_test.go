package controllermanager_test

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/upstreamtest"
	"github.com/render-static/render-static/pkg/controllermanager"
)

// Tests of --flavor upstream: the kube-controller-manager pod is a flag-only pod for the upstream image whose every
// flag is a flag of kube-controller-manager v1.34.3 and whose every file is one the render lays down (the files the
// OpenShift pod names); the rest of the render is the OpenShift flavor's.

var updateUpstreamFlags = flag.Bool("update-upstream-flags", false,
	"rewrite testdata/upstream/kube-controller-manager-flags.txt from the e2e-built kube-controller-manager's --help")

const (
	upstreamFlagList = "testdata/upstream/kube-controller-manager-flags.txt"
	upstreamVersion  = "Kubernetes v1.34.3"
	upstreamImage    = "registry.k8s.io/kube-controller-manager:v1.34.3"
)

func renderUpstream(t *testing.T, c upstreamtest.Case) *upstreamtest.Render {
	t.Helper()
	needShared(t)
	r, err := upstreamtest.Get(c)
	if err != nil {
		t.Fatalf("upstream render of %s: %v", c.InstallConfig, err)
	}
	return r
}

func loadUpstreamFlags(t *testing.T) *upstreamtest.FlagList {
	t.Helper()
	l, err := upstreamtest.LoadFlagList(upstreamFlagList)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Flags) < 120 || len(l.Values["controller"]) < 40 || len(l.Values["cipher-suite"]) < 10 || len(l.Values["tls-version"]) < 4 {
		t.Fatalf("%s is incomplete: %d flags, %d controllers, %d cipher suites, %d TLS versions", upstreamFlagList,
			len(l.Flags), len(l.Values["controller"]), len(l.Values["cipher-suite"]), len(l.Values["tls-version"]))
	}
	return l
}

// upstreamFileFlags are the flags whose values name files kube-controller-manager reads.
var upstreamFileFlags = map[string]bool{
	"kubeconfig": true, "authentication-kubeconfig": true, "authorization-kubeconfig": true,
	"client-ca-file": true, "requestheader-client-ca-file": true, "service-account-private-key-file": true,
	"root-ca-file": true, "cluster-signing-cert-file": true, "cluster-signing-key-file": true,
	"tls-cert-file": true, "tls-private-key-file": true,
}

// upstreamNetworks are each case's bind address, cluster networks and service networks.
var upstreamNetworks = map[string][3]string{
	"ipv4":      {"0.0.0.0", "10.128.0.0/14", "172.30.0.0/16"},
	"ipv6":      {"::", "fd01::/48", "fd02::/112"},
	"dualstack": {"::", "10.128.0.0/14,fd01::/48", "172.30.0.0/16,fd02::/112"},
	"proxy":     {"0.0.0.0", "10.128.0.0/14", "172.30.0.0/16"},
}

// TestUpstreamPod checks the upstream kube-controller-manager pod of each case: one flag-only container of the
// upstream image; flags of kube-controller-manager v1.34.3 only, none deprecated, no OpenShift flag, feature gate or
// controller; every file it names laid down by the render, mapped through the pod's mounts, and only the revision
// and the cert directory mounted from the node; a kubeconfig that reaches api-int as system:kube-controller-manager;
// a token key kube-apiserver verifies; a CSR signer that is a CA with its key; the cluster's networks, name, signing
// duration, controllers, TLS profile and proxy; kubeadm's lease; HTTPS probes on 10257.
func TestUpstreamPod(t *testing.T) {
	list := loadUpstreamFlags(t)
	for _, tc := range upstreamtest.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := renderUpstream(t, tc)
			pod, err := r.Pod(podFile)
			if err != nil {
				t.Fatal(err)
			}
			if pod.Name != "kube-controller-manager" || pod.Namespace != controllermanager.TargetNamespace || pod.Labels["revision"] != "1" ||
				pod.Labels["component"] != "kube-controller-manager" {
				t.Errorf("pod %s/%s labels %v", pod.Namespace, pod.Name, pod.Labels)
			}
			if len(pod.Spec.InitContainers) != 0 || len(pod.Spec.Containers) != 1 {
				t.Fatalf("pod has %d init containers and %d containers, want 0 and 1", len(pod.Spec.InitContainers), len(pod.Spec.Containers))
			}
			c := &pod.Spec.Containers[0]
			if c.Name != "kube-controller-manager" || c.Image != upstreamImage || c.Image != r.Inputs.Images.Image(controllermanager.UpstreamImage) ||
				strings.Join(c.Command, " ") != "kube-controller-manager" {
				t.Errorf("container %s image %s command %v, want kube-controller-manager %s [kube-controller-manager]", c.Name, c.Image, c.Command, upstreamImage)
			}

			// Flags only; the cluster-wide proxy, as for the OpenShift pod, in the environment.
			var env []string
			for _, e := range c.Env {
				env = append(env, e.Name+"="+e.Value)
				if !strings.HasSuffix(e.Name, "_PROXY") || e.ValueFrom != nil {
					t.Errorf("env %s: the upstream pod takes flags only (proxy variables aside)", e.Name)
				}
			}
			proxy, err := r.Engine.Cluster.ConfigInformers.Config().V1().Proxies().Lister().Get("cluster")
			if err != nil {
				t.Fatal(err)
			}
			if want := proxyEnv(proxy.Status); strings.Join(env, " ") != strings.Join(want, " ") || (tc.Name == "proxy") != (len(want) > 0) {
				t.Errorf("proxy env %v, want %v", env, want)
			}

			args, err := upstreamtest.ParseArgs(c.Args)
			if err != nil {
				t.Fatal(err)
			}
			upstreamtest.CheckCommandLine(t, c, []string{"openshift", "/bin/sh", "/bin/bash", "hyperkube", "config.yaml", "feature-gates", "cluster-policy"})
			upstreamtest.CheckFlags(t, args, list, "kube-controller-manager v1.34.3", nil)
			one := func(name string) string {
				t.Helper()
				return upstreamtest.One(t, args, name)
			}

			// Every file flag names a non-empty file of the render (through the mounts); every other absolute path is
			// --cert-dir's, a writable emptyDir.
			upstreamtest.CheckFileFlags(t, r, pod, c, args, upstreamFileFlags)
			for _, name := range []string{"kubeconfig", "client-ca-file", "requestheader-client-ca-file", "service-account-private-key-file",
				"root-ca-file", "cluster-signing-cert-file", "cluster-signing-key-file"} {
				one(name)
			}
			certDir := one("cert-dir")
			upstreamtest.CheckScratchDir(t, pod, c, certDir)
			upstreamtest.CheckVolumes(t, r, pod, c, "kube-controller-manager")

			// All three client connections: controller-manager-kubeconfig, api-int as system:kube-controller-manager.
			domain := r.Inputs.InstallConfig.ClusterDomain()
			kubeconfig := one("kubeconfig")
			if a, z := one("authentication-kubeconfig"), one("authorization-kubeconfig"); a != kubeconfig || z != kubeconfig {
				t.Errorf("--authentication-kubeconfig=%s --authorization-kubeconfig=%s, want --kubeconfig's %s", a, z, kubeconfig)
			}
			if err := r.CheckKubeconfig(pod, c.Name, upstreamtest.Kubeconfig{
				Path: kubeconfig, Server: "https://api-int." + domain + ":6443", User: "system:kube-controller-manager",
				ServerName: "api-int." + domain, ServingCertFile: kasCerts + "/secrets/internal-loadbalancer-serving-certkey/tls.crt",
				ClientCAFile: kasCerts + "/configmaps/client-ca/ca-bundle.crt",
			}); err != nil {
				t.Error(err)
			}
			get := func(flag string) []byte {
				t.Helper()
				b, err := r.ContainerFile(pod, c.Name, one(flag))
				if err != nil {
					t.Fatalf("--%s: %v", flag, err)
				}
				return b
			}
			// It authenticates the clients kube-apiserver does.
			for flag, kas := range map[string]string{"client-ca-file": "client-ca", "requestheader-client-ca-file": "aggregator-client-ca"} {
				f, ok := r.File(kasCerts + "/configmaps/" + kas + "/ca-bundle.crt")
				if !ok || string(get(flag)) != string(f.Contents) {
					t.Errorf("--%s is not kube-apiserver's %s", flag, kas)
				}
			}
			// Pods get a CA that verifies kube-apiserver on the service network.
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(get("root-ca-file")) {
				t.Errorf("--root-ca-file holds no certificate")
			}
			if svc, err := r.Certificate(kasCerts + "/secrets/service-network-serving-certkey/tls.crt"); err != nil {
				t.Error(err)
			} else if _, err := svc.Verify(x509.VerifyOptions{Roots: roots, DNSName: "kubernetes.default.svc"}); err != nil {
				t.Errorf("--root-ca-file does not verify kube-apiserver for kubernetes.default.svc: %v", err)
			}
			// The CSR signer is a CA and its key.
			pair, err := tls.X509KeyPair(get("cluster-signing-cert-file"), get("cluster-signing-key-file"))
			if err != nil {
				t.Errorf("CSR signer: %v", err)
			} else if signer, err := x509.ParseCertificate(pair.Certificate[0]); err != nil || !signer.IsCA || !strings.HasPrefix(signer.Subject.CommonName, "kube-csr-signer") {
				t.Errorf("CSR signer %v: want the kube-csr-signer CA (%v)", signer.Subject, err)
			}
			// Tokens it signs verify at kube-apiserver: its public key is in kube-apiserver's revision.
			checkTokenKey(t, r, get("service-account-private-key-file"))

			// The cluster's values, kubeadm's lease, the TLS profile.
			nets := upstreamNetworks[tc.Name]
			want := map[string]string{
				"bind-address": nets[0], "cluster-cidr": nets[1], "service-cluster-ip-range": nets[2],
				"secure-port": "10257", "allocate-node-cidrs": "false", "cluster-name": r.Inputs.InfraID,
				"cluster-signing-duration": "720h", "use-service-account-credentials": "true",
				"leader-elect": "true", "leader-elect-resource-namespace": "kube-system", "leader-elect-resource-name": "kube-controller-manager",
				"permit-address-sharing": "true", "v": "2", "tls-min-version": "VersionTLS12",
				"controllers": "*,-ttl-controller,-bootstrap-signer-controller,-token-cleaner-controller,selinux-warning-controller",
			}
			for name, v := range want {
				if got := one(name); got != v {
					t.Errorf("--%s=%s, want %s", name, got, v)
				}
			}
			for _, entry := range strings.Split(one("controllers"), ",") {
				if name := strings.TrimPrefix(entry, "-"); entry != "*" && !list.Values["controller"][name] {
					t.Errorf("--controllers: %s is not a kube-controller-manager v1.34.3 controller", entry)
				}
			}
			suites := strings.Split(one("tls-cipher-suites"), ",")
			for _, s := range suites {
				if !list.Values["cipher-suite"][s] {
					t.Errorf("cipher suite %s is not one kube-controller-manager prefers (insecure: %v)", s, list.Values["insecure-cipher-suite"][s])
				}
			}
			if len(suites) < 4 || !list.Values["tls-version"][one("tls-min-version")] {
				t.Errorf("TLS profile: suites %v, min version %s", suites, one("tls-min-version"))
			}

			upstreamtest.CheckProbes(t, pod, c, r.Inputs.NodeIP().String(), 10257)
		})
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

// TestUpstreamSameFilesAsOpenShift: every flag the upstream pod shares with the OpenShift pod's exec line or
// config.yaml names the same file, and the two pods mount the same node directories at the same places: the
// upstream flavor only changes which binary reads the revision.
func TestUpstreamSameFilesAsOpenShift(t *testing.T) {
	up := renderUpstream(t, upstreamtest.Cases[0])
	openshift := sno(t)
	osPod, err := openshift.Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	osFlags := map[string]string{}
	for _, f := range execFlags(t, osPod.Spec.Containers[0].Args[0], "hyperkube kube-controller-manager") {
		name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		osFlags[name] = value
	}
	for name, v := range extendedArgs(t, openshift) {
		if len(v) == 1 {
			osFlags[name] = v[0]
		}
	}
	upPod, err := up.Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	args, err := upstreamtest.ParseArgs(upPod.Spec.Containers[0].Args)
	if err != nil {
		t.Fatal(err)
	}
	same := upstreamtest.SamePathFlags(t, args, osFlags)
	want := "authentication-kubeconfig authorization-kubeconfig cert-dir client-ca-file cluster-signing-cert-file cluster-signing-key-file " +
		"kubeconfig requestheader-client-ca-file root-ca-file service-account-private-key-file"
	if strings.Join(same, " ") != want {
		t.Errorf("path flags shared with the OpenShift pod: %v, want %s", same, want)
	}
	if o, u := upstreamtest.HostPathMounts(osPod), upstreamtest.HostPathMounts(upPod); fmt.Sprint(o) != fmt.Sprint(u) {
		t.Errorf("node directories mounted: OpenShift pod %v, upstream pod %v", o, u)
	}
}

// TestUpstreamLayoutIsTheOpenShiftFlavors: the upstream flavor lays down the same kube-controller-manager files,
// with the same modes, as the OpenShift flavor (same loops, certificates, revision and cert directory); only the
// pod differs.
func TestUpstreamLayoutIsTheOpenShiftFlavors(t *testing.T) {
	up := renderUpstream(t, upstreamtest.Cases[0])
	openshift := sno(t)
	n := upstreamtest.CompareLayout(t, up, openshift, component)
	if n < 20 {
		t.Errorf("only %d kube-controller-manager files compared", n)
	}
	// The configuration the operator renders is the same (same node and infrastructure name); only the pod differs.
	for _, p := range []string{revDir + "/configmaps/config/config.yaml", revDir + "/configmaps/controller-manager-kubeconfig/kubeconfig"} {
		var a, b map[string]interface{}
		if err := yaml.Unmarshal(file(t, openshift, p), &a); err != nil {
			t.Fatal(err)
		}
		u, ok := up.File(p)
		if !ok {
			t.Fatalf("the upstream flavor lacks %s", p)
		}
		if err := yaml.Unmarshal(u.Contents, &b); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s differs between the flavors", p)
		}
	}
}

// TestUpstreamFlagsParseWithTheBinary: when the e2e harness has built kube-controller-manager v1.34.3, the committed
// flag list is its --help, and its own flag set parses every case's arguments (an unknown flag or a malformed value
// fails, as the last check shows). Skipped without the binary.
func TestUpstreamFlagsParseWithTheBinary(t *testing.T) {
	bin := upstreamtest.RequireBinary(t, "kube-controller-manager", upstreamVersion, *updateUpstreamFlags)
	help, err := upstreamtest.Help(bin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := upstreamtest.FlagListFromHelp(help, `kube-controller-manager v1.34.3, from the --help of the binary test/e2e builds (k8s.io/kubernetes v1.34.3):
flag NAME TYPE [deprecated] (TYPE bool: no value type), controller, default-disabled-controller,
cipher-suite (preferred), insecure-cipher-suite, tls-version. Regenerate with
  go test ./pkg/controllermanager -run TestUpstreamFlagsParseWithTheBinary -args -update-upstream-flags`,
		append([]upstreamtest.ValueList{
			{Kind: "controller", Flag: "controllers", After: "All controllers:", Before: "Disabled-by-default"},
			{Kind: "default-disabled-controller", Flag: "controllers", After: "Disabled-by-default controllers:", Before: "(default"},
		}, upstreamtest.TLSValueLists...))
	if err != nil {
		t.Fatal(err)
	}
	upstreamtest.CheckFlagList(t, upstreamFlagList, bin, got, *updateUpstreamFlags, "go test ./pkg/controllermanager -run TestUpstreamFlagsParseWithTheBinary -args -update-upstream-flags")
	for _, tc := range upstreamtest.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			pod, err := renderUpstream(t, tc).Pod(podFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := upstreamtest.ParsesFlags(bin, pod.Spec.Containers[0].Args); err != nil {
				t.Error(err)
			}
		})
	}
	for _, bad := range [][]string{{"--openshift-config=/x"}, {"--bind-address=not-an-ip"}, {"--cluster-signing-duration=forever"}} {
		if err := upstreamtest.ParsesFlags(bin, bad); err == nil {
			t.Errorf("kube-controller-manager accepted %v", bad)
		}
	}
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
	list := loadUpstreamFlags(t)
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

// TestUpstreamArgsFail: UpstreamArgs refuses inputs without what kube-controller-manager cannot run without,
// naming it.
func TestUpstreamArgsFail(t *testing.T) {
	r := renderUpstream(t, upstreamtest.Cases[0])
	spec, _, _, err := r.Engine.Component(component).Operator().GetStaticPodOperatorState()
	if err != nil {
		t.Fatal(err)
	}
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
		var observed map[string]interface{}
		if err := yaml.Unmarshal(spec.ObservedConfig.Raw, &observed); err != nil {
			t.Fatal(err)
		}
		e := map[string][]string{}
		for k, v := range ext.ExtendedArguments {
			e[k] = v
		}
		return controllermanager.UpstreamInputs{ExtendedArguments: e, Observed: observed, NodeIPs: r.Inputs.NodeIPs, Verbosity: 2}
	}
	args, err := controllermanager.UpstreamArgs(inputs())
	if err != nil {
		t.Fatalf("the rendered inputs: %v", err)
	}
	pod, err := r.Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(args, " ") != strings.Join(pod.Spec.Containers[0].Args, " ") {
		t.Errorf("UpstreamArgs of the rendered inputs %v, the pod's %v", args, pod.Spec.Containers[0].Args)
	}
	for _, missing := range []string{"cluster-name", "cluster-cidr", "service-cluster-ip-range", "cluster-signing-duration", "allocate-node-cidrs", "controllers"} {
		in := inputs()
		delete(in.ExtendedArguments, missing)
		if _, err := controllermanager.UpstreamArgs(in); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("without %s: error %v", missing, err)
		}
	}
	in := inputs()
	delete(in.Observed["servingInfo"].(map[string]interface{}), "minTLSVersion")
	if _, err := controllermanager.UpstreamArgs(in); err == nil || !strings.Contains(err.Error(), "minTLSVersion") {
		t.Errorf("without servingInfo.minTLSVersion: error %v", err)
	}
	in = inputs()
	in.NodeIPs = nil
	if _, err := controllermanager.UpstreamArgs(in); err == nil {
		t.Errorf("no error without node IPs")
	}
	in = inputs()
	in.ServingCert = true
	args, err = controllermanager.UpstreamArgs(in)
	if err != nil || !strings.Contains(strings.Join(args, " "), "--tls-cert-file=/etc/kubernetes/static-pod-resources/secrets/serving-cert/tls.crt") {
		t.Errorf("with a serving certificate: %v %v", args, err)
	}
}

// TestUpstreamOpenShiftFlavorUnchanged: the OpenShift flavor still renders the operator's pod (the conformance
// tests compare it with the reference field by field).
func TestUpstreamOpenShiftFlavorUnchanged(t *testing.T) {
	pod, err := sno(t).Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
		if strings.Contains(c.Image, "registry.k8s.io") {
			t.Errorf("container %s runs the upstream image %s in the OpenShift flavor", c.Name, c.Image)
		}
	}
	if want := "kube-controller-manager cluster-policy-controller kube-controller-manager-cert-syncer kube-controller-manager-recovery-controller"; strings.Join(names, " ") != want {
		t.Errorf("containers %v, want %s", names, want)
	}
	if !strings.Contains(pod.Spec.Containers[0].Args[0], "--openshift-config=") {
		t.Errorf("the OpenShift pod lost --openshift-config")
	}
}
