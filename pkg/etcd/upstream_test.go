package etcd_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/internal/testkit/upstreamtest"
	"github.com/render-static/render-static/pkg/etcd"
)

// Tests of --flavor upstream: the etcd pod is a flag-only pod for the upstream etcd image whose every flag is one
// of etcd 3.6.5 (none deprecated or experimental) and whose every file is one the render lays down; the rest of the
// render is the OpenShift flavor's.

const (
	upstreamFlagList    = "testdata/upstream/etcd-flags.txt"
	upstreamEtcdVersion = "etcd Version: 3.6.5"
)

var upstreamCases = []netCase{ipv4, ipv6, dual}

// etcdFlags is the committed list of etcd 3.6.5's flags and feature gates (testdata/upstream/etcd-flags.txt).
type etcdFlags struct {
	flags, deprecated, gates map[string]bool
}

func loadEtcdFlags(t *testing.T) *etcdFlags {
	t.Helper()
	raw, err := os.ReadFile(upstreamFlagList)
	if err != nil {
		t.Fatal(err)
	}
	l := &etcdFlags{flags: map[string]bool{}, deprecated: map[string]bool{}, gates: map[string]bool{}}
	for i, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "flag" && (len(f) == 2 || len(f) == 3 && f[2] == "deprecated"):
			l.flags[f[1]] = true
			l.deprecated[f[1]] = len(f) == 3
		case f[0] == "feature-gate" && len(f) == 2:
			l.gates[f[1]] = true
		default:
			t.Fatalf("%s:%d: cannot parse %q", upstreamFlagList, i+1, line)
		}
	}
	if len(l.flags) < 100 || len(l.gates) < 5 {
		t.Fatalf("%s is incomplete: %d flags, %d feature gates", upstreamFlagList, len(l.flags), len(l.gates))
	}
	return l
}

// etcdFileFlags name files etcd reads.
var etcdFileFlags = map[string]bool{
	"cert-file": true, "key-file": true, "trusted-ca-file": true,
	"peer-cert-file": true, "peer-key-file": true, "peer-trusted-ca-file": true,
}

// upstreamArgs parses the pod's --name=value arguments; each flag must be given once.
func upstreamArgs(t *testing.T, c *corev1.Container) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range c.Args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Errorf("argument %q is not --name=value", a)
			continue
		}
		if _, dup := out[name]; dup {
			t.Errorf("--%s given twice", name)
		}
		out[name] = value
	}
	return out
}

// TestUpstreamPod checks the upstream etcd pod of each network case: one flag-only container of the upstream image;
// flags of etcd 3.6.5 only; every file it names laid down by the render; certificates that serve every address it
// listens on and advertises; a single new member of this node that kube-apiserver's etcd-servers reach; kubeadm's
// probes on the loopback metrics listener.
func TestUpstreamPod(t *testing.T) {
	list := loadEtcdFlags(t)
	for _, nc := range upstreamCases {
		t.Run(nc.name, func(t *testing.T) {
			r := renderUpstream(t, nc)
			if r.rev != 1 {
				t.Fatalf("revision %d, want 1", r.rev)
			}
			pod := r.pod(t)
			if len(pod.Spec.InitContainers) != 0 || len(pod.Spec.Containers) != 1 {
				t.Fatalf("pod has %d init containers and %d containers, want 0 and 1", len(pod.Spec.InitContainers), len(pod.Spec.Containers))
			}
			c := &pod.Spec.Containers[0]
			if c.Name != "etcd" || c.Image != "registry.k8s.io/etcd:3.6.5-0" || strings.Join(c.Command, " ") != "etcd" {
				t.Errorf("container %s image %s command %v, want etcd registry.k8s.io/etcd:3.6.5-0 [etcd]", c.Name, c.Image, c.Command)
			}
			if len(c.Env) > 0 || len(c.EnvFrom) > 0 {
				t.Errorf("env %v: etcd reads ETCD_* variables as flags; the upstream pod takes flags only", c.Env)
			}
			for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
				for _, token := range []string{"/bin/sh", "bash", "REVISION", "NODE_NAME", "NODE_ENVVAR_NAME", "$("} {
					if strings.Contains(a, token) {
						t.Errorf("argument %q contains %q", a, token)
					}
				}
			}
			args := upstreamArgs(t, c)
			for name := range args {
				switch {
				case !list.flags[name]:
					t.Errorf("--%s is not an etcd 3.6.5 flag", name)
				case list.deprecated[name] || strings.HasPrefix(name, "experimental-"):
					t.Errorf("--%s is deprecated in etcd 3.6", name)
				}
			}
			for _, g := range strings.Split(args["feature-gates"], ",") {
				if name, _, _ := strings.Cut(g, "="); !list.gates[name] {
					t.Errorf("feature gate %s is not one of etcd 3.6.5", name)
				}
			}

			// Files: every file flag names a file of the render; the data directory is a DirectoryOrCreate hostPath.
			pathRE := regexp.MustCompile(`(?:^|[=,])(/(?:etc|var|usr|opt|run)/[^,:]*)`)
			get := func(p string) []byte {
				t.Helper()
				hp, _, err := rendertest.MountedPath(pod, c, p)
				if err != nil {
					t.Fatal(err)
				}
				return r.file(t, strings.TrimPrefix(hp, "/"))
			}
			for name, value := range args {
				if !etcdFileFlags[name] {
					if name != "data-dir" && pathRE.MatchString(value) {
						t.Errorf("--%s=%s names a path but is not a known file flag", name, value)
					}
					continue
				}
				hp, _, err := rendertest.MountedPath(pod, c, value)
				if err != nil {
					t.Errorf("--%s: %v", name, err)
				} else if f, ok := r.files[strings.TrimPrefix(hp, "/")]; !ok || len(f.Contents) == 0 {
					t.Errorf("--%s=%s: the render lays down no %s", name, value, hp)
				}
			}
			if hp, v, err := rendertest.MountedPath(pod, c, args["data-dir"]); err != nil {
				t.Errorf("--data-dir: %v", err)
			} else if hp != "/var/lib/etcd" || v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate {
				t.Errorf("--data-dir=%s is %s in %+v, want /var/lib/etcd, DirectoryOrCreate", args["data-dir"], hp, v.HostPath)
			}

			// Certificates: key pairs; the serving certificate serves every client URL, the peer certificate every
			// peer URL, both as clients too (peer authentication).
			trusted, _ := pool(t, get(args["trusted-ca-file"]))
			if args["peer-trusted-ca-file"] != args["trusted-ca-file"] {
				t.Errorf("--peer-trusted-ca-file=%s, want the server CA bundle %s", args["peer-trusted-ca-file"], args["trusted-ca-file"])
			}
			for _, p := range [][2]string{{"cert-file", "key-file"}, {"peer-cert-file", "peer-key-file"}} {
				if _, err := tls.X509KeyPair(get(args[p[0]]), get(args[p[1]])); err != nil {
					t.Errorf("--%s and --%s are not a key pair: %v", p[0], p[1], err)
				}
			}
			if !strings.HasSuffix(args["cert-file"], "/etcd-serving-"+node+".crt") || !strings.HasSuffix(args["peer-cert-file"], "/etcd-peer-"+node+".crt") {
				t.Errorf("--cert-file=%s --peer-cert-file=%s: not this node's serving and peer certificates", args["cert-file"], args["peer-cert-file"])
			}
			verify := func(what, certFlag, urls string) {
				t.Helper()
				crt := leaf(t, get(args[certFlag]))
				for _, u := range strings.Split(urls, ",") {
					pu, err := url.Parse(u)
					if err != nil || pu.Scheme != "https" {
						t.Errorf("%s URL %q is not https (%v)", what, u, err)
						continue
					}
					for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
						if _, err := crt.Verify(x509.VerifyOptions{Roots: trusted, DNSName: pu.Hostname(), KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
							t.Errorf("--%s does not verify for %s URL %s (usage %v): %v", certFlag, what, u, usage, err)
						}
					}
				}
			}
			verify("client", "cert-file", args["listen-client-urls"]+","+args["advertise-client-urls"]+",https://localhost:2379")
			verify("peer", "peer-cert-file", args["listen-peer-urls"]+","+args["initial-advertise-peer-urls"])
			// kube-apiserver's etcd client certificate is accepted (client-cert-auth) and its CA bundle trusts etcd.
			client := r.secret(t, "openshift-config", "etcd-client")
			if _, err := leaf(t, client.Data["tls.crt"]).Verify(x509.VerifyOptions{Roots: trusted, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("openshift-config/etcd-client is not accepted by --trusted-ca-file: %v", err)
			}
			apiTrust, _ := pool(t, []byte(r.configMap(t, "openshift-config", "etcd-serving-ca").Data["ca-bundle.crt"]))
			if _, err := leaf(t, get(args["cert-file"])).Verify(x509.VerifyOptions{Roots: apiTrust, DNSName: "localhost"}); err != nil {
				t.Errorf("openshift-config/etcd-serving-ca does not verify --cert-file: %v", err)
			}

			// One new member of this node, on the primary IP; clients on every node IP and the loopback.
			ips := r.nodeIPs()
			primary := ips[0].String()
			if ips[0].Is6() {
				primary = "[" + primary + "]"
			}
			lo := "127.0.0.1"
			if ips[0].Is6() {
				lo = "::1"
			}
			clientURLs := []string{"https://" + net.JoinHostPort(lo, "2379")}
			for _, ip := range ips {
				clientURLs = append(clientURLs, "https://"+net.JoinHostPort(ip.String(), "2379"))
			}
			want := map[string]string{
				"name":                           node,
				"data-dir":                       "/var/lib/etcd",
				"initial-cluster-state":          "new",
				"initial-cluster":                node + "=https://" + primary + ":2380",
				"initial-advertise-peer-urls":    "https://" + primary + ":2380",
				"listen-peer-urls":               "https://" + primary + ":2380",
				"advertise-client-urls":          "https://" + primary + ":2379",
				"listen-client-urls":             strings.Join(clientURLs, ","),
				"listen-metrics-urls":            "http://" + net.JoinHostPort(lo, "2381"),
				"client-cert-auth":               "true",
				"peer-client-cert-auth":          "true",
				"quota-backend-bytes":            "8589934592",
				"tls-min-version":                "TLS1.2",
				"watch-progress-notify-interval": "5s",
			}
			for name, w := range want {
				if args[name] != w {
					t.Errorf("--%s=%s, want %s", name, args[name], w)
				}
			}
			if env, _ := envOfOpenShift(t, nc).Get("ETCD_CIPHER_SUITES"); args["cipher-suites"] != env || env == "" {
				t.Errorf("--cipher-suites=%s, want the operator's ETCD_CIPHER_SUITES %s", args["cipher-suites"], env)
			}
			// kube-apiserver's etcd-servers (https://<primary IP>:2379, https://localhost:2379) are listened on.
			for _, s := range []string{"https://" + primary + ":2379", "https://" + net.JoinHostPort(lo, "2379")} {
				if !slices.Contains(strings.Split(args["listen-client-urls"], ","), s) {
					t.Errorf("--listen-client-urls=%s lacks %s", args["listen-client-urls"], s)
				}
			}

			// Probes: kubeadm's, over HTTP on the loopback metrics listener.
			upstreamtest.CheckHTTPProbes(t, c, upstreamtest.Probes{Scheme: corev1.URISchemeHTTP, Host: lo, Port: 2381,
				Startup: "/readyz", Liveness: "/livez", Readiness: "/readyz"})
			if !pod.Spec.HostNetwork {
				t.Errorf("not on the host network")
			}
		})
	}
}

// envOfOpenShift is the etcd environment the env-var loop computed for the OpenShift flavor's pod of the case.
func envOfOpenShift(t *testing.T, nc netCase) etcd.EnvVars {
	t.Helper()
	env := etcd.EnvVars{}
	for k, v := range envOf(container(t, render(t, nc).pod(t), "etcd")) {
		env = append(env, etcd.EnvVar{Name: k, Value: v})
	}
	return env
}

// TestUpstreamLayoutIsTheOpenShiftFlavors: the upstream flavor lays down the same files with the same modes as the
// OpenShift flavor (certificates, bundles, scripts, restore pods, revision); only the pod differs.
func TestUpstreamLayoutIsTheOpenShiftFlavors(t *testing.T) {
	up, openshift := renderUpstream(t, ipv4), render(t, ipv4)
	var a, b []string
	for p, f := range up.files {
		a = append(a, fmt.Sprintf("%s %o", p, f.Mode))
	}
	for p, f := range openshift.files {
		b = append(b, fmt.Sprintf("%s %o", p, f.Mode))
	}
	sort.Strings(a)
	sort.Strings(b)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("files differ:\n upstream %v\nopenshift %v", a, b)
	}
	for _, p := range []string{certDir + "configmaps/etcd-scripts/etcd.env", certDir + "configmaps/restore-etcd-pod/pod.yaml"} {
		if string(up.file(t, p)) != string(openshift.file(t, p)) {
			t.Errorf("%s differs between the flavors", p)
		}
	}
	if string(up.file(t, "etc/kubernetes/manifests/etcd-pod.yaml")) == string(openshift.file(t, "etc/kubernetes/manifests/etcd-pod.yaml")) {
		t.Errorf("the flavors have the same pod")
	}
}

// TestUpstreamFlagsParseWithTheBinary: when the e2e harness has built etcd 3.6.5, its own flag set parses every
// case's arguments (with --help last, it exits 0 after parsing; an unknown flag, a malformed value or an unknown
// feature gate fails), and the committed flag list is the binary's --help. Skipped without the binary.
func TestUpstreamFlagsParseWithTheBinary(t *testing.T) {
	bin := upstreamtest.RequireBinary(t, "etcd", upstreamEtcdVersion, *upstreamtest.Update)
	help, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help: %v", bin, err)
	}
	got := etcdFlagList(string(help))
	upstreamtest.CheckFlagList(t, upstreamFlagList, bin, got, *upstreamtest.Update, "go test ./pkg/etcd -run TestUpstreamFlagsParseWithTheBinary -update-upstream-flags")
	for _, nc := range upstreamCases {
		t.Run(nc.name, func(t *testing.T) {
			c := renderUpstream(t, nc).pod(t).Spec.Containers[0]
			if err := upstreamtest.ParsesFlags(bin, c.Args); err != nil {
				t.Error(err)
			}
		})
	}
	for _, bad := range [][]string{{"--no-such-flag=1"}, {"--quota-backend-bytes=lots"}, {"--feature-gates=NoSuchGate=true"}} {
		if err := upstreamtest.ParsesFlags(bin, bad); err == nil {
			t.Errorf("etcd accepted %v", bad)
		}
	}
}

// etcdFlagList turns etcd's --help into the committed list: every flag (deprecated when its help says so) and the
// feature gates.
func etcdFlagList(help string) string {
	flagRE := regexp.MustCompile(`^  --([a-z0-9-]+)(?:\s.*)?$`)
	gateRE := regexp.MustCompile(`^\s+([A-Za-z0-9]+)=true\|false \(`)
	seen, deprecated := map[string]bool{}, map[string]bool{}
	var names, gates []string
	cur := ""
	for _, line := range strings.Split(help, "\n") {
		if m := flagRE.FindStringSubmatch(line); m != nil {
			cur = m[1]
			if !seen[cur] {
				seen[cur] = true
				names = append(names, cur)
			}
			continue
		}
		if !strings.HasPrefix(line, "    ") {
			cur = ""
			continue
		}
		if cur == "" {
			continue
		}
		if strings.Contains(line, "Deprecated") || strings.Contains(line, "deprecated") {
			deprecated[cur] = true
		}
		if m := gateRE.FindStringSubmatch(line); m != nil && cur == "feature-gates" {
			gates = append(gates, m[1])
		}
	}
	sort.Strings(names)
	sort.Strings(gates)
	var b strings.Builder
	b.WriteString("# etcd 3.6.5, from the --help of the binary test/e2e builds (go.etcd.io/etcd/server/v3 v3.6.5):\n" +
		"# flag NAME [deprecated], feature-gate NAME. Regenerate with\n" +
		"#   go test ./pkg/etcd -run TestUpstreamFlagsParseWithTheBinary -update-upstream-flags\n")
	for _, n := range names {
		fmt.Fprintf(&b, "flag %s", n)
		if deprecated[n] {
			b.WriteString(" deprecated")
		}
		b.WriteString("\n")
	}
	for _, g := range gates {
		fmt.Fprintf(&b, "feature-gate %s\n", g)
	}
	return b.String()
}

// TestUpstreamArgsFail: without the operator's environment (or a node IP) there are no arguments.
func TestUpstreamArgsFail(t *testing.T) {
	r := renderUpstream(t, ipv4)
	env := envOfOpenShift(t, ipv4)
	if _, err := etcd.UpstreamArgs(env, r.nodeIPs()); err != nil {
		t.Fatalf("the operator's environment: %v", err)
	}
	if _, err := etcd.UpstreamArgs(env, nil); err == nil {
		t.Errorf("no error without a node IP")
	}
	for _, drop := range []string{"ETCD_DATA_DIR", "ETCD_QUOTA_BACKEND_BYTES", "ETCD_TLS_MIN_VERSION"} {
		var less etcd.EnvVars
		for _, v := range env {
			if v.Name != drop {
				less = append(less, v)
			}
		}
		if _, err := etcd.UpstreamArgs(less, r.nodeIPs()); err == nil || !strings.Contains(err.Error(), drop) {
			t.Errorf("without %s: error %v", drop, err)
		}
	}
}
