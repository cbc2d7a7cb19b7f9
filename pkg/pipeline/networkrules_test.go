package pipeline_test

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/pkg/certs"
)

// The rules of docs/network-rules.md, each checked on every network shape: IPv4, IPv6, dual stack with IPv4 first
// and with IPv6 first, and an IPv4 cluster behind a cluster-wide proxy. Every expectation is computed from the
// install-config by the rule as the operators' sources state it (the table names the file), never read from the
// render it checks.

type netCase struct{ name, config, nodeIPs string }

var netCases = []netCase{
	{"ipv4", "../../examples/sno/install-config.yaml", "192.168.126.10"},
	{"ipv6", "../../testdata/installconfig/good/ipv6.yaml", ""},
	{"dualstack-v4first", "../../testdata/installconfig/good/dualstack.yaml", ""},
	{"dualstack-v6first", "testdata/dualstack-v6first.yaml", ""},
	{"proxy", "../../testdata/installconfig/good/proxy.yaml", ""},
}

const (
	etcdCertDir = "/etc/kubernetes/static-pod-resources/etcd-certs/"
	kasRevDir   = "/etc/kubernetes/static-pod-resources/kube-apiserver-pod-1/"
	kasCertDir  = "/etc/kubernetes/static-pod-resources/kube-apiserver-certs/"
	kcmRevDir   = "/etc/kubernetes/static-pod-resources/kube-controller-manager-pod-1/"
)

// netEnv is one rendered case and what the rules are computed from.
type netEnv struct {
	r                *rendertest.Render
	service, cluster []netip.Prefix
	nodeIPs          []netip.Addr
	preferred        netip.Addr // the node's first IP of the first service network's family
	proxy            configv1.ProxyStatus
	proxied          bool
	domain           string
	machine          []netip.Prefix
	userNoProxy      string
	apiInt           string
}

func netRender(t *testing.T, c netCase) *netEnv {
	t.Helper()
	ips := c.nodeIPs
	if ips == "" {
		var err error
		if ips, err = rendertest.NodeIPs(c.config); err != nil {
			t.Fatal(err)
		}
	}
	r, err := rendertest.Get(c.config, ips)
	if err != nil {
		t.Fatalf("render %s: %v", c.config, err)
	}
	ic := r.Inputs.InstallConfig
	e := &netEnv{r: r, service: ic.ServiceCIDRs(), cluster: ic.ClusterCIDRs(), machine: ic.MachineCIDRs(),
		nodeIPs: r.Inputs.NodeIPs, domain: ic.ClusterDomain(), apiInt: "api-int." + ic.ClusterDomain()}
	for _, ip := range e.nodeIPs {
		if ip.Is6() == e.service[0].Addr().Is6() {
			e.preferred = ip
			break
		}
	}
	if !e.preferred.IsValid() {
		t.Fatalf("no node IP of the first service network's family")
	}
	p, err := r.Cluster.ConfigInformers.Config().V1().Proxies().Lister().Get("cluster")
	if err != nil {
		t.Fatal(err)
	}
	e.proxy = p.Status
	e.proxied = p.Spec.HTTPProxy != "" || p.Spec.HTTPSProxy != ""
	if ic.Proxy != nil {
		e.userNoProxy = ic.Proxy.NoProxy
	}
	return e
}

func (e *netEnv) file(t *testing.T, p string) []byte {
	t.Helper()
	f, ok := e.r.File(p)
	if !ok {
		t.Fatalf("the render has no %s", p)
	}
	return f.Contents
}

func (e *netEnv) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := e.r.Pod(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *netEnv) yamlFile(t *testing.T, p string) map[string]interface{} {
	t.Helper()
	out := map[string]interface{}{}
	if err := yaml.Unmarshal(e.file(t, p), &out); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return out
}

// urlHost is an IP as the host part of a URL: IPv6 in brackets.
func urlHost(ip netip.Addr) string {
	if ip.Is6() {
		return "[" + ip.String() + "]"
	}
	return ip.String()
}

func join(ps []netip.Prefix) string {
	ss := make([]string, len(ps))
	for i, p := range ps {
		ss[i] = p.String()
	}
	return strings.Join(ss, ",")
}

// expand replaces $(VAR) and ${VAR} with the container's environment values (what kubelet and the shell do).
func expand(s string, c *corev1.Container) string {
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.Trim(m, "$(){}")
		if v, ok := env[name]; ok {
			return v
		}
		return m
	})
}

var envRef = regexp.MustCompile(`\$\([A-Za-z_][A-Za-z0-9_]*\)|\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

func script(c *corev1.Container) string {
	return strings.Join(append(append([]string(nil), c.Command...), c.Args...), " ")
}

func certAt(t *testing.T, e *netEnv, p string) *x509.Certificate {
	t.Helper()
	cs, err := certs.ParseCertificates(e.file(t, p))
	if err != nil || len(cs) == 0 {
		t.Fatalf("%s: no certificate (%v)", p, err)
	}
	return cs[0]
}

func wantContains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

// netRules are the rules of docs/network-rules.md by id.
var netRules = []struct {
	id    string
	check func(t *testing.T, e *netEnv)
}{
	{"etcd-node-ip-env", func(t *testing.T, e *netEnv) {
		// NODE_<node>_IP and NODE_<node>_ETCD_URL_HOST: the node's first InternalIP of the family of the first
		// service network, bracketed for IPv6.
		env := string(e.file(t, etcdCertDir+"configmaps/etcd-scripts/etcd.env"))
		for _, name := range []string{"NODE_sno_0_IP", "NODE_sno_0_ETCD_URL_HOST"} {
			wantContains(t, "etcd.env", env, fmt.Sprintf("export %s=%q\n", name, urlHost(e.preferred)))
		}
		for _, c := range e.pod(t, "etcd-pod.yaml").Spec.Containers {
			for _, v := range c.Env {
				if v.Name == "NODE_sno_0_IP" && v.Value != urlHost(e.preferred) {
					t.Errorf("%s: %s=%s, want %s", c.Name, v.Name, v.Value, urlHost(e.preferred))
				}
			}
		}
	}},
	{"etcd-endpoints-env", func(t *testing.T, e *netEnv) {
		want := "https://" + net.JoinHostPort(e.preferred.String(), "2379")
		env := string(e.file(t, etcdCertDir+"configmaps/etcd-scripts/etcd.env"))
		wantContains(t, "etcd.env", env, fmt.Sprintf("export ALL_ETCD_ENDPOINTS=%q\n", want), fmt.Sprintf("export ETCDCTL_ENDPOINTS=%q\n", want))
	}},
	{"etcd-listen", func(t *testing.T, e *netEnv) {
		// 0.0.0.0 on every family (etcd listens on both families on the wildcard).
		wants := []string{"--listen-client-urls=https://0.0.0.0:2379", "--listen-peer-urls=https://0.0.0.0:2380",
			"--listen-metrics-urls=https://0.0.0.0:9978"}
		etcd := rendertest.Container(e.pod(t, "etcd-pod.yaml"), "etcd")
		wantContains(t, "etcd container", script(etcd), append(wants, "--listen-client-http-urls=https://0.0.0.0:2381")...)
		for _, key := range []string{"pod.yaml", "quorum-restore-pod.yaml"} {
			wantContains(t, "restore-etcd-pod/"+key, string(e.file(t, etcdCertDir+"configmaps/restore-etcd-pod/"+key)), wants...)
		}
		wantContains(t, "etcd container", expand(script(etcd), etcd),
			"--advertise-client-urls=https://"+urlHost(e.preferred)+":2379",
			"--initial-advertise-peer-urls=https://"+urlHost(e.preferred)+":2380")
	}},
	{"etcd-grpc-proxy", func(t *testing.T, e *netEnv) {
		m := rendertest.Container(e.pod(t, "etcd-pod.yaml"), "etcd-metrics")
		wantContains(t, "etcd-metrics", expand(script(m), m), "--endpoints https://"+urlHost(e.preferred)+":9978",
			"--metrics-addr https://0.0.0.0:9979", "--listen-addr 127.0.0.1:9977")
	}},
	{"etcd-cert-sans", func(t *testing.T, e *netEnv) {
		for _, kind := range []string{"etcd-serving-", "etcd-peer-", "etcd-serving-metrics-"} {
			c := certAt(t, e, etcdCertDir+"secrets/etcd-all-certs/"+kind+"sno-0.crt")
			names := []string{"localhost", "127.0.0.1", "::1", "etcd.openshift-etcd.svc"}
			for _, ip := range e.nodeIPs {
				names = append(names, ip.String())
			}
			for _, n := range names {
				if err := c.VerifyHostname(n); err != nil {
					t.Errorf("%s: %v", kind, err)
				}
			}
		}
	}},
	{"kas-etcd-servers", func(t *testing.T, e *netEnv) {
		cfg := e.yamlFile(t, kasRevDir+"configmaps/config/config.yaml")
		want := []string{"https://" + net.JoinHostPort(e.preferred.String(), "2379"), "https://localhost:2379"}
		if got := fmt.Sprint(rendertest.Dig(cfg, "apiServerArguments", "etcd-servers")); got != fmt.Sprint(want) {
			t.Errorf("etcd-servers %s, want %v", got, want)
		}
	}},
	{"kas-bind", func(t *testing.T, e *netEnv) {
		addr, network := "0.0.0.0:6443", "tcp4"
		switch {
		case len(e.service) > 1:
			addr, network = "[::]:6443", "tcp"
		case e.service[0].Addr().Is6():
			addr, network = "[::]:6443", "tcp6"
		}
		cfg := e.yamlFile(t, kasRevDir+"configmaps/config/config.yaml")
		if got := fmt.Sprint(rendertest.Dig(cfg, "servingInfo", "bindAddress"), " ", rendertest.Dig(cfg, "servingInfo", "bindNetwork")); got != addr+" "+network {
			t.Errorf("servingInfo bindAddress bindNetwork = %s, want %s %s", got, addr, network)
		}
	}},
	{"kas-service-networks", func(t *testing.T, e *netEnv) {
		cfg := e.yamlFile(t, kasRevDir+"configmaps/config/config.yaml")
		if got := fmt.Sprint(rendertest.Dig(cfg, "servicesSubnet")); got != join(e.service) {
			t.Errorf("servicesSubnet %s, want %s", got, join(e.service))
		}
		restricted := strings.Split(join(e.cluster)+","+join(e.service), ",")
		got := rendertest.Dig(cfg, "admission", "pluginConfig", "network.openshift.io/RestrictedEndpointsAdmission", "configuration", "restrictedCIDRs")
		if fmt.Sprint(got) != fmt.Sprint(restricted) {
			t.Errorf("restrictedCIDRs %v, want %v", got, restricted)
		}
	}},
	{"kas-check-endpoints-listen", func(t *testing.T, e *netEnv) {
		want := "0.0.0.0:17697"
		if len(e.service) == 1 && e.service[0].Addr().Is6() {
			want = "[::]:17697"
		}
		c := rendertest.Container(e.pod(t, "kube-apiserver-pod.yaml"), "kube-apiserver-check-endpoints")
		if c == nil {
			t.Fatal("no check-endpoints container")
		}
		if got := strings.Join(c.Args, " "); !strings.Contains(got, "--listen "+want) {
			t.Errorf("check-endpoints args %q, want --listen %s", got, want)
		}
	}},
	{"kas-serving-cert-sans", func(t *testing.T, e *netEnv) {
		sans := map[string][]string{
			"localhost-serving-cert-certkey":        {"localhost", "127.0.0.1"},
			"external-loadbalancer-serving-certkey": {"api." + e.domain},
			"internal-loadbalancer-serving-certkey": {e.apiInt},
			"service-network-serving-certkey":       {"kubernetes.default.svc", "openshift.default.svc.cluster.local"},
		}
		for _, p := range e.service {
			sans["service-network-serving-certkey"] = append(sans["service-network-serving-certkey"], p.Masked().Addr().Next().String())
		}
		for secret, names := range sans {
			c := certAt(t, e, kasCertDir+"secrets/"+secret+"/tls.crt")
			for _, n := range names {
				if err := c.VerifyHostname(n); err != nil {
					t.Errorf("%s: %v", secret, err)
				}
			}
		}
	}},
	{"kas-proxy-env", func(t *testing.T, e *netEnv) {
		checkProxyEnv(t, e, e.pod(t, "kube-apiserver-pod.yaml"), true)
	}},
	{"kcm-cidr-args", func(t *testing.T, e *netEnv) {
		cfg := e.yamlFile(t, kcmRevDir+"configmaps/config/config.yaml")
		for arg, want := range map[string]string{"cluster-cidr": join(e.cluster), "service-cluster-ip-range": join(e.service)} {
			if got := fmt.Sprint(rendertest.Dig(cfg, "extendedArguments", arg)); got != fmt.Sprint([]string{want}) {
				t.Errorf("extendedArguments.%s = %s, want [%s] (one comma-joined value)", arg, got, want)
			}
			// The pod's command line carries the flag once, with both families.
			main := rendertest.Container(e.pod(t, "kube-controller-manager-pod.yaml"), "kube-controller-manager")
			if n := strings.Count(script(main), "--"+arg+"="); n != 1 || !strings.Contains(script(main), "--"+arg+"="+want+" ") {
				t.Errorf("kube-controller-manager has %d --%s flags, want one --%s=%s", n, arg, arg, want)
			}
		}
	}},
	{"kcm-proxy-env", func(t *testing.T, e *netEnv) {
		checkProxyEnv(t, e, e.pod(t, "kube-controller-manager-pod.yaml"), true)
	}},
	{"no-proxy-env-elsewhere", func(t *testing.T, e *netEnv) {
		checkProxyEnv(t, e, e.pod(t, "kube-scheduler-pod.yaml"), false)
		checkProxyEnv(t, e, e.pod(t, "etcd-pod.yaml"), false)
	}},
	{"proxy-status-noproxy", func(t *testing.T, e *netEnv) {
		if !e.proxied {
			if e.proxy.NoProxy != "" {
				t.Errorf("noProxy %q without a proxy", e.proxy.NoProxy)
			}
			return
		}
		// Every service network (both families on dual stack) and no etcd host.
		set := map[string]bool{"127.0.0.1": true, "localhost": true, ".svc": true, ".cluster.local": true, e.apiInt: true}
		for _, c := range append(append(append([]netip.Prefix(nil), e.cluster...), e.machine...), e.service...) {
			set[c.String()] = true
		}
		for _, u := range strings.Split(e.userNoProxy, ",") {
			if u = strings.TrimSpace(u); u != "" {
				set[u] = true
			}
		}
		var want []string
		for k := range set {
			want = append(want, k)
		}
		sort.Strings(want)
		if e.proxy.NoProxy != strings.Join(want, ",") {
			t.Errorf("Proxy status noProxy %q, want %q", e.proxy.NoProxy, strings.Join(want, ","))
		}
	}},
	{"kubelet-node-ip", func(t *testing.T, e *netEnv) {
		ips := make([]string, len(e.nodeIPs))
		for i, ip := range e.nodeIPs {
			ips[i] = ip.String()
		}
		// etcd's ensure-env init container compares NODE_<node>_IP with the pod IP, which for a host-network pod
		// is the kubelet's first --node-ip: it must be the preferred node IP.
		if e.nodeIPs[0] != e.preferred {
			t.Errorf("first --node-ip %s is not the preferred node IP %s", e.nodeIPs[0], e.preferred)
		}
		unit := unitText(t, e, "kubelet.service")
		wantContains(t, "kubelet.service", unit, "--node-ip="+strings.Join(ips, ","))
		hosts := string(e.file(t, "/etc/hosts"))
		wantContains(t, "/etc/hosts", hosts, e.nodeIPs[0].String()+" api."+e.domain+" "+e.apiInt+"\n")
	}},
}

func unitText(t *testing.T, e *netEnv, name string) string {
	t.Helper()
	for _, u := range e.r.Tree.Units() {
		if u.Name == name {
			return u.Contents
		}
	}
	t.Fatalf("no unit %s", name)
	return ""
}

// checkProxyEnv: with a proxy, every container (never an init container) of pod carries exactly the observed
// proxy (Proxy status) as HTTP_PROXY/HTTPS_PROXY/NO_PROXY; without one, or when want is false, none does.
func checkProxyEnv(t *testing.T, e *netEnv, pod *corev1.Pod, want bool) {
	t.Helper()
	expected := map[string]string{}
	if want {
		for k, v := range map[string]string{"HTTP_PROXY": e.proxy.HTTPProxy, "HTTPS_PROXY": e.proxy.HTTPSProxy, "NO_PROXY": e.proxy.NoProxy} {
			if v != "" {
				expected[k] = v
			}
		}
	}
	check := func(c corev1.Container, init bool) {
		got := map[string]string{}
		for _, v := range c.Env {
			if strings.HasSuffix(v.Name, "_PROXY") {
				got[v.Name] = v.Value
			}
		}
		w := expected
		if init {
			w = map[string]string{}
		}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s container %s: proxy env %v, want %v", pod.Name, c.Name, got, w)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		check(c, true)
	}
	for _, c := range pod.Spec.Containers {
		check(c, false)
	}
}

// TestNetworkRules checks every rule of docs/network-rules.md on every network shape.
func TestNetworkRules(t *testing.T) {
	envs := map[string]*netEnv{}
	for _, c := range netCases {
		envs[c.name] = netRender(t, c)
	}
	for _, rule := range netRules {
		t.Run(rule.id, func(t *testing.T) {
			for _, c := range netCases {
				t.Run(c.name, func(t *testing.T) { rule.check(t, envs[c.name]) })
			}
		})
	}
}

// TestNetworkRulesTable: docs/network-rules.md has a row for every rule this file checks, and names no rule it
// does not.
func TestNetworkRulesTable(t *testing.T) {
	raw, err := os.ReadFile("../../docs/network-rules.md")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile("TestNetworkRules/([a-z0-9-]+)").FindAllStringSubmatch(string(raw), -1) {
		ids[m[1]] = true
	}
	for _, r := range netRules {
		if !ids[r.id] {
			t.Errorf("docs/network-rules.md has no row for rule %s", r.id)
		}
		delete(ids, r.id)
	}
	for id := range ids {
		t.Errorf("docs/network-rules.md names TestNetworkRules/%s, which does not exist", id)
	}
}
