package apiserver_test

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/keyutil"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/internal/testkit/upstreamtest"
	"github.com/render-static/render-static/pkg/apiserver"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
)

// Tests of --flavor upstream: the kube-apiserver pod is a flag-only pod for the upstream image whose every flag is a
// flag of kube-apiserver v1.34.3 and whose every file is one the render lays down; the rest of the render is the
// OpenShift flavor's.

const (
	upstreamFlagList   = "testdata/upstream/kube-apiserver-flags.txt"
	upstreamKASVersion = "Kubernetes v1.34.3"
)

// upstreamCases: the conformance install-config (IPv4, the node of sno()), IPv6 and dual stack.
var upstreamCases = []struct{ name, config, ips string }{
	{"ipv4", rendertest.InstallConfig(), "192.168.126.10"},
	{"ipv6", rendertest.Repo("testdata/installconfig/good/ipv6.yaml"), ""},
	{"dualstack", rendertest.Repo("testdata/installconfig/good/dualstack.yaml"), ""},
	{"proxy", rendertest.Repo("testdata/installconfig/good/proxy.yaml"), ""},
}

var (
	upstreamMu      sync.Mutex
	upstreamRenders = map[string]*rendered{}
)

// renderUpstream renders kube-apiserver of the upstream flavor once per case, like render() does for the OpenShift
// flavor (same seeds and stand-ins for etcd and kube-controller-manager).
func renderUpstream(t *testing.T, name, config, ips string) *rendered {
	t.Helper()
	upstreamMu.Lock()
	defer upstreamMu.Unlock()
	if r, ok := upstreamRenders[name]; ok {
		if r == nil {
			t.Fatalf("the upstream %s render failed before", name)
		}
		return r
	}
	upstreamRenders[name] = nil
	r := renderFlavor(t, config, ips, clusterconfig.FlavorUpstream, true)
	upstreamRenders[name] = r
	return r
}

// loadUpstreamFlags reads the committed list of kube-apiserver v1.34.3's flags, admission plugins (all and
// default), cipher suites (preferred and insecure) and TLS versions (testdata/upstream/kube-apiserver-flags.txt).
func loadUpstreamFlags(t *testing.T) *upstreamtest.FlagList {
	t.Helper()
	l, err := upstreamtest.LoadFlagList(upstreamFlagList)
	if err != nil {
		t.Fatal(err)
	}
	for kind := range l.Values {
		switch kind {
		case "admission-plugin", "default-admission-plugin", "cipher-suite", "insecure-cipher-suite", "tls-version":
		default:
			t.Fatalf("%s: unknown kind %q", upstreamFlagList, kind)
		}
	}
	plugins, suites, tlsVersions, defaultPlugins := l.Values["admission-plugin"], l.Values["cipher-suite"], l.Values["tls-version"], l.Values["default-admission-plugin"]
	if len(l.Flags) < 150 || len(plugins) < 30 || len(suites) < 10 || len(tlsVersions) < 4 || len(defaultPlugins) < 10 {
		t.Fatalf("%s is incomplete: %d flags, %d admission plugins, %d cipher suites, %d TLS versions, %d default plugins",
			upstreamFlagList, len(l.Flags), len(plugins), len(suites), len(tlsVersions), len(defaultPlugins))
	}
	return l
}

// apiserverFileFlags are the flags whose values name files kube-apiserver reads (tls-sni-cert-key: the certificate
// and key before the ':'); audit-log-path is a file it writes.
var apiserverFileFlags = map[string]bool{
	"client-ca-file": true, "etcd-cafile": true, "etcd-certfile": true, "etcd-keyfile": true,
	"tls-cert-file": true, "tls-private-key-file": true, "tls-sni-cert-key": true,
	"service-account-key-file": true, "service-account-signing-key-file": true,
	"kubelet-client-certificate": true, "kubelet-client-key": true, "kubelet-certificate-authority": true,
	"proxy-client-cert-file": true, "proxy-client-key-file": true, "requestheader-client-ca-file": true,
	"encryption-provider-config": true, "audit-policy-file": true,
}

// filesOf returns the files a file flag's value names.
func filesOf(name, value string) []string {
	if name == "tls-sni-cert-key" {
		pair, _, _ := strings.Cut(value, ":")
		return strings.Split(pair, ",")
	}
	return []string{value}
}

// TestUpstreamPod checks the upstream kube-apiserver pod of each network case: one flag-only container of the
// upstream image; flags of kube-apiserver v1.34.3 only (no OpenShift flag, admission plugin or feature gate); every
// file it names laid down by the render, mapped through the pod's mounts; certificates and keys that belong
// together; the addresses, networks, issuer, encryption, audit and TLS profile of the cluster.
func TestUpstreamPod(t *testing.T) {
	list := loadUpstreamFlags(t)
	for _, tc := range upstreamCases {
		t.Run(tc.name, func(t *testing.T) {
			r := renderUpstream(t, tc.name, tc.config, tc.ips)
			if r.rev != 1 {
				t.Fatalf("revision %d, want 1\n%s", r.rev, r.runner.Result().Trace())
			}
			pod := podOf(t, r.file(t, "etc/kubernetes/manifests/kube-apiserver-pod.yaml"))
			if _, ok := r.files["etc/kubernetes/manifests/kube-apiserver-startup-monitor-pod.yaml"]; ok {
				t.Errorf("the upstream flavor has the startup monitor (an operator binary)")
			}
			if len(pod.Spec.InitContainers) != 0 || len(pod.Spec.Containers) != 1 {
				t.Fatalf("pod has %d init containers and %d containers, want 0 and 1", len(pod.Spec.InitContainers), len(pod.Spec.Containers))
			}
			c := &pod.Spec.Containers[0]
			if c.Name != "kube-apiserver" || c.Image != "registry.k8s.io/kube-apiserver:v1.34.3" || strings.Join(c.Command, " ") != "kube-apiserver" {
				t.Errorf("container %s image %s command %v, want kube-apiserver registry.k8s.io/kube-apiserver:v1.34.3 [kube-apiserver]", c.Name, c.Image, c.Command)
			}
			// Flags only; the cluster proxy, as for the OpenShift pod, in the environment.
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
				if !strings.HasSuffix(e.Name, "_PROXY") || e.ValueFrom != nil {
					t.Errorf("env %s: the upstream pod takes flags only (proxy variables aside)", e.Name)
				}
			}
			if tc.name == "proxy" {
				if env["HTTPS_PROXY"] != "https://user:pass@proxy.corp.example.net:3129" || !strings.Contains(env["NO_PROXY"], ".svc") {
					t.Errorf("proxy env %v", env)
				}
			} else if len(env) > 0 {
				t.Errorf("proxy env %v without a proxy", env)
			}
			args, err := upstreamtest.ParseArgs(c.Args)
			if err != nil {
				t.Fatal(err)
			}
			upstreamtest.CheckCommandLine(t, c, []string{"openshift-config", "/bin/sh", "/bin/bash", "hyperkube", "watch-termination", "config.yaml"})

			// Flags of kube-apiserver v1.34.3, none deprecated; bool flags with a bool.
			seen := map[string]int{}
			for _, a := range args {
				seen[a.Name]++
				typ, ok := list.Flags[a.Name]
				switch {
				case !ok:
					t.Errorf("--%s is not a kube-apiserver v1.34.3 flag", a.Name)
				case list.Deprecated[a.Name]:
					t.Errorf("--%s is deprecated in kube-apiserver v1.34.3", a.Name)
				case typ == "bool" && a.Value != "true" && a.Value != "false":
					t.Errorf("--%s=%s: a bool flag", a.Name, a.Value)
				case seen[a.Name] > 1 && !strings.HasSuffix(typ, "s") && typ != "namedCertKey" && typ != "stringArray":
					t.Errorf("--%s (%s) given more than once", a.Name, typ)
				}
			}
			if v := upstreamtest.Values(args, "feature-gates"); len(v) > 0 {
				t.Errorf("--feature-gates=%v: no gate is needed (and no OpenShift gate may be passed)", v)
			}
			if v := upstreamtest.One(t, args, "authorization-mode"); v != "Node,RBAC" {
				t.Errorf("--authorization-mode=%s, want Node,RBAC", v)
			}
			plugins := strings.Split(upstreamtest.One(t, args, "enable-admission-plugins"), ",")
			for _, p := range plugins {
				if !list.Values["admission-plugin"][p] {
					t.Errorf("admission plugin %s is not an upstream kube-apiserver plugin", p)
				}
			}
			if !slices.Contains(plugins, "NodeRestriction") {
				t.Errorf("admission plugins %v lack NodeRestriction", plugins)
			}
			if v := upstreamtest.Values(args, "disable-admission-plugins"); len(v) > 0 {
				t.Errorf("--disable-admission-plugins=%v: the upstream defaults stay on", v)
			}
			if v := upstreamtest.One(t, args, "tls-min-version"); !list.Values["tls-version"][v] || v != "VersionTLS12" {
				t.Errorf("--tls-min-version=%s, want VersionTLS12 (the Intermediate profile)", v)
			}
			suites := strings.Split(upstreamtest.One(t, args, "tls-cipher-suites"), ",")
			for _, s := range suites {
				if !list.Values["cipher-suite"][s] {
					t.Errorf("cipher suite %s is not one kube-apiserver prefers (insecure: %v)", s, list.Values["insecure-cipher-suite"][s])
				}
			}
			if len(suites) < 4 {
				t.Errorf("cipher suites %v: the Intermediate profile has more", suites)
			}

			// Every file flag names a file the render lays down; every absolute path is a file flag's.
			pathRE := regexp.MustCompile(`(?:^|[=,])(/(?:etc|var|usr|opt|run)/[^,:]*)`)
			for _, a := range args {
				if !apiserverFileFlags[a.Name] {
					if a.Name != "audit-log-path" && pathRE.MatchString(a.Value) {
						t.Errorf("--%s=%s names a path but is not a known file flag", a.Name, a.Value)
					}
					continue
				}
				for _, f := range filesOf(a.Name, a.Value) {
					hp, _, err := rendertest.MountedPath(pod, c, f)
					if err != nil {
						t.Errorf("--%s: %v", a.Name, err)
						continue
					}
					file, ok := r.files[strings.TrimPrefix(hp, "/")]
					if !ok {
						t.Errorf("--%s=%s: the render lays down no %s", a.Name, f, hp)
					} else if len(file.Contents) == 0 {
						t.Errorf("--%s=%s: %s is empty", a.Name, f, hp)
					}
				}
			}
			auditLog := upstreamtest.One(t, args, "audit-log-path")
			if hp, v, err := rendertest.MountedPath(pod, c, auditLog); err != nil {
				t.Errorf("--audit-log-path: %v", err)
			} else if v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate || path.Dir(hp) != v.HostPath.Path {
				t.Errorf("--audit-log-path=%s: %s is not directly in a DirectoryOrCreate hostPath (%+v)", auditLog, hp, v.HostPath)
			}
			for _, v := range pod.Spec.Volumes {
				if v.HostPath == nil {
					t.Errorf("volume %s is not a hostPath", v.Name)
				}
			}
			get := func(name string) []byte {
				hp, _, err := rendertest.MountedPath(pod, c, name)
				if err != nil {
					t.Fatal(err)
				}
				return r.file(t, strings.TrimPrefix(hp, "/"))
			}

			// Certificates and keys that belong together.
			pairs := [][2]string{
				{upstreamtest.One(t, args, "tls-cert-file"), upstreamtest.One(t, args, "tls-private-key-file")},
				{upstreamtest.One(t, args, "etcd-certfile"), upstreamtest.One(t, args, "etcd-keyfile")},
				{upstreamtest.One(t, args, "kubelet-client-certificate"), upstreamtest.One(t, args, "kubelet-client-key")},
				{upstreamtest.One(t, args, "proxy-client-cert-file"), upstreamtest.One(t, args, "proxy-client-key-file")},
			}
			sni := map[string]string{}
			for _, v := range upstreamtest.Values(args, "tls-sni-cert-key") {
				files, names, ok := strings.Cut(v, ":")
				f := strings.Split(files, ",")
				if !ok || len(f) != 2 || names == "" {
					t.Errorf("--tls-sni-cert-key=%s: want cert,key:names", v)
					continue
				}
				pairs = append(pairs, [2]string{f[0], f[1]})
				sni[path.Base(path.Dir(f[0]))] = names
			}
			for _, p := range pairs {
				if _, err := tls.X509KeyPair(get(p[0]), get(p[1])); err != nil {
					t.Errorf("%s and %s are not a key pair: %v", p[0], p[1], err)
				}
			}
			domain := r.in.InstallConfig.ClusterDomain()
			wantSNI := map[string]string{
				"localhost-serving-cert-certkey":        "localhost,127.0.0.1",
				"localhost-recovery-serving-certkey":    "localhost-recovery",
				"external-loadbalancer-serving-certkey": "api." + domain,
				"internal-loadbalancer-serving-certkey": "api-int." + domain,
			}
			if fmt.Sprint(sni) != fmt.Sprint(wantSNI) {
				t.Errorf("SNI certificates %v, want %v", sni, wantSNI)
			}
			// Each SNI certificate verifies for its names against kube-apiserver-server-ca.
			serverCA := x509.NewCertPool()
			serverCA.AppendCertsFromPEM(r.file(t, "etc/kubernetes/static-pod-resources/kube-apiserver-pod-1/configmaps/kube-apiserver-server-ca/ca-bundle.crt"))
			for _, v := range upstreamtest.Values(args, "tls-sni-cert-key") {
				files, names, _ := strings.Cut(v, ":")
				leaf, err := certs.ParseCertificates(get(strings.Split(files, ",")[0]))
				if err != nil || len(leaf) == 0 {
					t.Errorf("%s: %v", files, err)
					continue
				}
				for _, n := range strings.Split(names, ",") {
					if _, err := leaf[0].Verify(x509.VerifyOptions{Roots: serverCA, DNSName: n}); err != nil {
						t.Errorf("SNI certificate %s for %s: %v", files, n, err)
					}
				}
			}
			for _, f := range []string{"client-ca-file", "etcd-cafile", "kubelet-certificate-authority", "requestheader-client-ca-file"} {
				if cas, err := certs.ParseCertificates(get(upstreamtest.One(t, args, f))); err != nil || len(cas) == 0 {
					t.Errorf("--%s: no CA certificates (%v)", f, err)
				}
			}

			// Service-account tokens: every published public key verifies, the bound signer's key among them.
			keyFiles := upstreamtest.Values(args, "service-account-key-file")
			var want []string
			for _, cm := range []string{"sa-token-signing-certs", "bound-sa-token-signing-certs"} {
				for p := range r.files {
					if strings.HasPrefix(p, "etc/kubernetes/static-pod-resources/kube-apiserver-pod-1/configmaps/"+cm+"/") {
						want = append(want, "/etc/kubernetes/static-pod-resources/configmaps/"+cm+"/"+path.Base(p))
					}
				}
			}
			got := append([]string(nil), keyFiles...)
			sort.Strings(got)
			sort.Strings(want)
			if fmt.Sprint(got) != fmt.Sprint(want) || len(want) < 2 {
				t.Errorf("--service-account-key-file %v, want every key of the revision's signing certs %v", keyFiles, want)
			}
			signer, err := keyutil.ParsePrivateKeyPEM(get(upstreamtest.One(t, args, "service-account-signing-key-file")))
			if err != nil {
				t.Fatal(err)
			}
			signerPub, err := x509.MarshalPKIXPublicKey(signer.(crypto.Signer).Public())
			if err != nil {
				t.Fatal(err)
			}
			verifies := false
			for _, f := range keyFiles {
				keys, err := keyutil.ParsePublicKeysPEM(get(f))
				if err != nil {
					t.Errorf("--service-account-key-file=%s: %v", f, err)
				}
				for _, k := range keys {
					if der, _ := x509.MarshalPKIXPublicKey(k); string(der) == string(signerPub) {
						verifies = true
					}
				}
			}
			if !verifies {
				t.Errorf("no --service-account-key-file holds the public key of --service-account-signing-key-file")
			}
			issuer := apiserver.DefaultServiceAccountIssuer
			if v := upstreamtest.Values(args, "service-account-issuer"); fmt.Sprint(v) != fmt.Sprint([]string{issuer}) {
				t.Errorf("--service-account-issuer %v, want %s", v, issuer)
			}
			if v := upstreamtest.One(t, args, "api-audiences"); v != issuer {
				t.Errorf("--api-audiences=%s, want %s", v, issuer)
			}
			if v := upstreamtest.One(t, args, "service-account-jwks-uri"); v != "https://api."+domain+":6443/openid/v1/jwks" {
				t.Errorf("--service-account-jwks-uri=%s", v)
			}

			// Encryption at rest and audit: the revision's files.
			if v := upstreamtest.One(t, args, "encryption-provider-config"); v != apiserver.EncryptionConfigPath {
				t.Errorf("--encryption-provider-config=%s, want %s", v, apiserver.EncryptionConfigPath)
			} else if cfg := decodeYAML(t, get(v)); cfg["kind"] != "EncryptionConfiguration" || cfg["apiVersion"] != "apiserver.config.k8s.io/v1" {
				t.Errorf("encryption config is %v %v", cfg["apiVersion"], cfg["kind"])
			}
			if pol := decodeYAML(t, get(upstreamtest.One(t, args, "audit-policy-file"))); pol["kind"] != "Policy" || pol["apiVersion"] != "audit.k8s.io/v1" {
				t.Errorf("audit policy is %v %v", pol["apiVersion"], pol["kind"])
			}

			// Addresses and networks.
			ip := r.in.NodeIP()
			host := ip.String()
			if ip.Is6() {
				host = "[" + host + "]"
			}
			bind, svc := "0.0.0.0", "172.30.0.0/16"
			switch tc.name {
			case "ipv6":
				bind, svc = "::", "fd02::/112"
			case "dualstack":
				bind, svc = "::", "172.30.0.0/16,fd02::/112"
			}
			check := func(name, want string) {
				t.Helper()
				if got := upstreamtest.One(t, args, name); got != want {
					t.Errorf("--%s=%s, want %s", name, got, want)
				}
			}
			check("advertise-address", ip.String())
			check("bind-address", bind)
			check("secure-port", "6443")
			check("service-cluster-ip-range", svc)
			check("etcd-servers", "https://"+host+":2379,https://localhost:2379")
			check("allow-privileged", "true")
			check("shutdown-delay-duration", "0s")
			if pod.Spec.TerminationGracePeriodSeconds == nil || *pod.Spec.TerminationGracePeriodSeconds != 15 {
				t.Errorf("terminationGracePeriodSeconds %v, want 15 (single node)", pod.Spec.TerminationGracePeriodSeconds)
			}

			// Probes: kubeadm's, over HTTPS on the secure port of the advertised address.
			upstreamtest.CheckHTTPProbes(t, c, upstreamtest.Probes{Scheme: corev1.URISchemeHTTPS, Host: ip.String(), Port: 6443,
				Startup: "/livez", Liveness: "/livez", Readiness: "/readyz"})
			if !pod.Spec.HostNetwork {
				t.Errorf("not on the host network")
			}
		})
	}
}

// TestUpstreamLayoutIsTheOpenShiftFlavors: the upstream flavor lays down the same files with the same modes as the
// OpenShift flavor (same loops, certificates, encryption config, revision and cert directory), except the OpenShift
// flavor's startup monitor; the revisioned OpenShift config file is still there, unused.
func TestUpstreamLayoutIsTheOpenShiftFlavors(t *testing.T) {
	up := renderUpstream(t, upstreamCases[0].name, upstreamCases[0].config, upstreamCases[0].ips)
	openshift := sno(t)
	onlyOpenShift := map[string]bool{
		"etc/kubernetes/manifests/kube-apiserver-startup-monitor-pod.yaml":                                 true,
		"etc/kubernetes/static-pod-resources/kube-apiserver-pod-1/kube-apiserver-startup-monitor-pod.yaml": true,
		revDir + "/configmaps/kube-apiserver-pod/kube-apiserver-startup-monitor-pod.yaml":                  true,
	}
	for p, f := range openshift.files {
		u, ok := up.files[p]
		switch {
		case onlyOpenShift[p]:
			if ok {
				t.Errorf("the upstream flavor lays down %s", p)
			}
		case !ok:
			t.Errorf("the upstream flavor lacks %s", p)
		case u.Mode != f.Mode:
			t.Errorf("%s: mode %o, the OpenShift flavor's %o", p, u.Mode, f.Mode)
		}
	}
	for p := range up.files {
		if _, ok := openshift.files[p]; !ok {
			t.Errorf("only the upstream flavor lays down %s", p)
		}
	}
	// The audit policy is the same; the OpenShift config file is still revisioned.
	p := revDir + "/configmaps/kube-apiserver-audit-policies/policy.yaml"
	if string(up.file(t, p)) != string(openshift.file(t, p)) {
		t.Errorf("%s differs between the flavors", p)
	}
}

// TestUpstreamFlagsParseWithTheBinary: when the e2e harness has built kube-apiserver v1.34.3, its own flag set
// parses every case's arguments (with --help last, it exits 0 after parsing; an unknown flag or a malformed value
// fails), and the committed flag list is the binary's --help. Skipped without the binary.
func TestUpstreamFlagsParseWithTheBinary(t *testing.T) {
	bin := upstreamtest.RequireBinary(t, "kube-apiserver", upstreamKASVersion, *upstreamtest.Update)
	help, err := upstreamtest.Help(bin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := upstreamtest.FlagListFromHelp(help, `kube-apiserver v1.34.3, from the --help of the binary test/e2e builds (k8s.io/kubernetes v1.34.3):
flag NAME TYPE [deprecated] (TYPE bool: no value type), admission-plugin, default-admission-plugin,
cipher-suite (preferred), insecure-cipher-suite, tls-version. Regenerate with
  go test ./pkg/apiserver -run TestUpstreamFlagsParseWithTheBinary -update-upstream-flags`,
		append([]upstreamtest.ValueList{
			{Kind: "admission-plugin", Flag: "enable-admission-plugins", After: "Comma-delimited list of admission plugins:", Before: "."},
			{Kind: "default-admission-plugin", Flag: "enable-admission-plugins", After: "default enabled ones (", Before: ")"},
		}, upstreamtest.TLSValueLists...))
	if err != nil {
		t.Fatal(err)
	}
	upstreamtest.CheckFlagList(t, upstreamFlagList, bin, got, *upstreamtest.Update, "go test ./pkg/apiserver -run TestUpstreamFlagsParseWithTheBinary -update-upstream-flags")
	for _, tc := range upstreamCases {
		t.Run(tc.name, func(t *testing.T) {
			r := renderUpstream(t, tc.name, tc.config, tc.ips)
			c := podOf(t, r.file(t, "etc/kubernetes/manifests/kube-apiserver-pod.yaml")).Spec.Containers[0]
			if err := upstreamtest.ParsesFlags(bin, c.Args); err != nil {
				t.Error(err)
			}
		})
	}
	// The check can fail: an unknown flag and a malformed value are refused.
	for _, bad := range [][]string{{"--openshift-config=/x"}, {"--advertise-address=not-an-ip"}} {
		if err := upstreamtest.ParsesFlags(bin, bad); err == nil {
			t.Errorf("kube-apiserver accepted %v", bad)
		}
	}
}

// TestUpstreamArgsFail: UpstreamArgs refuses an observed config without what kube-apiserver cannot start
// without, naming it.
func TestUpstreamArgsFail(t *testing.T) {
	r := renderUpstream(t, upstreamCases[0].name, upstreamCases[0].config, upstreamCases[0].ips)
	spec, _, _, err := r.comp.Operator().GetStaticPodOperatorState()
	if err != nil {
		t.Fatal(err)
	}
	in := apiserver.UpstreamInputs{NodeIP: r.in.NodeIP(), ServiceAccountPublicKeys: []string{"/k.pub"}, Verbosity: 2,
		SNINames: map[string][]string{"localhost-serving-cert-certkey": {"localhost"}, "localhost-recovery-serving-certkey": {"a"},
			"external-loadbalancer-serving-certkey": {"b"}, "internal-loadbalancer-serving-certkey": {"c"}}}
	observed := func() map[string]interface{} { return decodeYAML(t, spec.ObservedConfig.Raw) }
	if _, err := apiserver.UpstreamArgs(observed(), in); err != nil {
		t.Fatalf("the rendered observed config: %v", err)
	}
	for _, missing := range [][]string{
		{"apiServerArguments", "etcd-servers"}, {"servicesSubnet"}, {"servingInfo", "bindAddress"},
		{"apiServerArguments", "service-account-issuer"}, {"servingInfo", "minTLSVersion"},
	} {
		o := observed()
		m := o
		for _, k := range missing[:len(missing)-1] {
			m = m[k].(map[string]interface{})
		}
		delete(m, missing[len(missing)-1])
		if _, err := apiserver.UpstreamArgs(o, in); err == nil || !strings.Contains(err.Error(), missing[len(missing)-1]) {
			t.Errorf("without %s: error %v", strings.Join(missing, "."), err)
		}
	}
	noKeys := in
	noKeys.ServiceAccountPublicKeys = nil
	if _, err := apiserver.UpstreamArgs(observed(), noKeys); err == nil {
		t.Errorf("no error without service-account public keys")
	}
}
