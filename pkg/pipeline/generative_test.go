package pipeline_test

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
)

// TestGenerative renders seeded random install-configs (IPv4, IPv6, dual stack in both orders; CIDRs of random
// sizes at random positions; random cluster names, base domains and node names; with and without a proxy and
// mirrors) and checks invariants on each: the serving certificates cover what their clients dial, every URL and
// host:port in the static pods and config files parses (IPv6 bracketed), every file a pod flag names is on the
// node, aio.ign passes ignition-validate, and no two renders share key material.
//
// RENDER_STATIC_GENERATIVE_SEED replays a run (the seed is printed on failure); RENDER_STATIC_GENERATIVE_N sets
// the number of renders (default 4, one per family; 2 with -short: key generation makes each render take
// seconds).
func TestGenerative(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RENDER_STATIC_GENERATIVE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RENDER_STATIC_GENERATIVE_SEED: %v", err)
		}
		seed = v
	}
	n := 4
	if testing.Short() {
		n = 2
	}
	if s := os.Getenv("RENDER_STATIC_GENERATIVE_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 200 {
			t.Fatalf("RENDER_STATIC_GENERATIVE_N: want 1..200, got %q", s)
		}
		n = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay: RENDER_STATIC_GENERATIVE_SEED=%d RENDER_STATIC_GENERATIVE_N=%d go test -run TestGenerative ./pkg/pipeline/", seed, n)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	keys := map[[32]byte]string{} // key material → the case that holds it
	for i := 0; i < n; i++ {
		g := generate(rng, i)
		name := fmt.Sprintf("%02d-%s", i, g.family)
		t.Run(name, func(t *testing.T) {
			t.Logf("seed %d, case %d: %s\n%s", seed, i, g.describe(), g.yaml)
			dir := t.TempDir()
			cfg := filepath.Join(dir, "install-config.yaml")
			if err := os.WriteFile(cfg, []byte(g.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			_, _, o, err := rendertest.Pipeline(pipeline.Options{InstallConfig: cfg, NodeIP: g.nodeIPs, NodeName: g.nodeName,
				Dir: out, CertValidity: certs.DefaultLeafValidity, InfraID: g.infraID})
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if err := o.Write(out); err != nil {
				t.Fatal(err)
			}
			files := rendertest.FilesOf(o.Tree)
			c := &genCheck{t: t, g: g, files: files}
			c.servingNames()
			c.urls()
			c.flagFiles()
			c.ignitionValidate(filepath.Join(out, "aio.ign"))
			for k := range c.keyMaterial() {
				if other, ok := keys[k]; ok && other != name {
					t.Errorf("key material shared with case %s", other)
				}
				keys[k] = name
			}
		})
	}
}

// genConfig is one generated install-config.
type genConfig struct {
	family                   string // ipv4, ipv6, dual-v4first, dual-v6first: case i is family i%4
	yaml                     string
	nodeIPs, nodeName        string
	infraID, name, domain    string
	ips                      []netip.Addr
	service, cluster, machin []netip.Prefix
	proxy, mirrors           bool
}

func (g *genConfig) describe() string {
	return fmt.Sprintf("node %s %s, service %v, cluster %v, machine %v, proxy %v, mirrors %v", g.nodeName, g.nodeIPs,
		g.service, g.cluster, g.machin, g.proxy, g.mirrors)
}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

// label is a random DNS label of 1..max characters: lowercase letters and digits, '-' inside.
func label(rng *rand.Rand, max int) string {
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	n := 1 + rng.IntN(max)
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[rng.IntN(len(alnum))]
		if i > 0 && i < n-1 && rng.IntN(6) == 0 {
			b[i] = '-'
		}
	}
	b[0] = "abcdefghijklmnopqrstuvwxyz"[rng.IntN(26)]
	return string(b)
}

// subnet is a random aligned /bits block inside region.
func subnet(rng *rand.Rand, region netip.Prefix, bits int) netip.Prefix {
	a := region.Addr().As16()
	start := 0
	if region.Addr().Is4() {
		start = 96
	}
	// Randomize the bits between the region's prefix and the block's.
	for b := region.Bits(); b < bits; b++ {
		if rng.IntN(2) == 1 {
			i := (start + b) / 8
			a[i] |= 0x80 >> ((start + b) % 8)
		}
	}
	addr := netip.AddrFrom16(a)
	if region.Addr().Is4() {
		addr = addr.Unmap()
	}
	return netip.PrefixFrom(addr, bits).Masked()
}

// host is a random address of p that is neither its first nor its last.
func host(rng *rand.Rand, p netip.Prefix) netip.Addr {
	a := p.Addr().As16()
	start := 0
	if p.Addr().Is4() {
		start = 96
	}
	for {
		b := a
		for i := start + p.Bits(); i < 128; i++ {
			if rng.IntN(2) == 1 {
				b[i/8] |= 0x80 >> (i % 8)
			}
		}
		ip := netip.AddrFrom16(b)
		if p.Addr().Is4() {
			ip = ip.Unmap()
		}
		if ip != p.Addr() && ip.Next().IsValid() && p.Contains(ip.Next()) {
			return ip
		}
	}
}

// genNets are one family's networks: machine, cluster (with host prefix), service, and a node address.
type genNets struct {
	machine, cluster, service netip.Prefix
	hostPrefix                int
	node                      netip.Addr
}

func genFamily(rng *rand.Rand, v6 bool) genNets {
	var g genNets
	if !v6 {
		// Three disjoint private regions, shuffled between the machine, cluster and service networks.
		regions := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"),
			netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.168.0.0/16")}
		rng.Shuffle(len(regions), func(i, j int) { regions[i], regions[j] = regions[j], regions[i] })
		g.machine = clearOfOVN(rng, regions[0], max(regions[0].Bits(), 16+rng.IntN(13)))                            // /16../28
		cbits := max(regions[1].Bits(), 12+rng.IntN(10))                                                            // /12../21
		g.cluster = clearOfOVN(rng, regions[1], cbits)                                                              //
		g.hostPrefix = cbits + 1 + rng.IntN(28-cbits)                                                               // up to /28
		g.service = clearOfOVN(rng, regions[2], max(regions[2].Bits(), 12)+rng.IntN(29-max(regions[2].Bits(), 12))) // ../28
	} else {
		// Distinct random /40s of fd00::/8 (or of global unicast 2000::/3 for the machine network; never the
		// documentation range 2001:db8::/32, which validation refuses for node IPs).
		base := func() netip.Prefix {
			return subnet(rng, netip.MustParsePrefix("fd00::/8"), 40)
		}
		mregion := base()
		if rng.IntN(3) == 0 {
			mregion = subnet(rng, netip.MustParsePrefix("2000::/3"), 40)
			for mregion.Overlaps(netip.MustParsePrefix("2001:db8::/32")) {
				mregion = subnet(rng, netip.MustParsePrefix("2000::/3"), 40)
			}
		}
		cregion, sregion := base(), base()
		for cregion.Overlaps(mregion) || sregion.Overlaps(mregion) || sregion.Overlaps(cregion) || overlapsOVN(mregion) ||
			overlapsOVN(cregion) || overlapsOVN(sregion) {
			cregion, sregion = base(), base()
			if overlapsOVN(mregion) {
				mregion = base()
			}
		}
		g.machine = subnet(rng, mregion, 48+rng.IntN(73)) // /48../120
		g.cluster = subnet(rng, cregion, 40+rng.IntN(24)) // /40../63 (OVN gives each node a /64)
		g.hostPrefix = 64
		g.service = subnet(rng, sregion, 108+rng.IntN(17)) // /108../124
	}
	g.node = host(rng, g.machine)
	return g
}

// overlapsOVN: p overlaps one of OVN-Kubernetes' default internal subnets, which validation keeps every network
// clear of.
func overlapsOVN(p netip.Prefix) bool {
	for _, o := range installconfig.OVNInternalSubnets() {
		if p.Overlaps(o) {
			return true
		}
	}
	return false
}

// clearOfOVN is a random /bits (at least /12) of region that overlaps no OVN internal subnet (100.64.0.0/10 holds
// two).
func clearOfOVN(rng *rand.Rand, region netip.Prefix, bits int) netip.Prefix {
	for range 1000 {
		if p := subnet(rng, region, bits); !overlapsOVN(p) {
			return p
		}
	}
	panic(fmt.Sprintf("no /%d of %s clear of OVN's internal subnets", bits, region))
}

func generate(rng *rand.Rand, i int) *genConfig {
	g := &genConfig{family: []string{"ipv4", "ipv6", "dual-v4first", "dual-v6first"}[i%4]}
	var fams []genNets
	switch g.family {
	case "ipv4":
		fams = []genNets{genFamily(rng, false)}
	case "ipv6":
		fams = []genNets{genFamily(rng, true)}
	case "dual-v4first":
		fams = []genNets{genFamily(rng, false), genFamily(rng, true)}
	default:
		fams = []genNets{genFamily(rng, true), genFamily(rng, false)}
	}
	g.name = label(rng, 20)
	var labels []string
	for j := 0; j < 1+rng.IntN(3); j++ {
		labels = append(labels, label(rng, 12))
	}
	g.domain = strings.Join(labels, ".") + "." + pick(rng, "com", "org", "net", "lab", "example")
	g.nodeName = pick(rng, "sno-0", "master-0", label(rng, 10)+"-"+strconv.Itoa(rng.IntN(100)), "edge."+g.domain)
	g.infraID = label(rng, 15) + "-" + label(rng, 5)
	var ips []string
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nbaseDomain: %s\nmetadata:\n  name: %s\n", g.domain, g.name)
	b.WriteString("compute:\n- name: worker\n  replicas: 0\ncontrolPlane:\n  name: master\n  replicas: 1\n")
	b.WriteString("networking:\n  networkType: OVNKubernetes\n  clusterNetwork:\n")
	for _, f := range fams {
		fmt.Fprintf(&b, "  - cidr: %s\n    hostPrefix: %d\n", f.cluster, f.hostPrefix)
		g.cluster = append(g.cluster, f.cluster)
	}
	b.WriteString("  serviceNetwork:\n")
	for _, f := range fams {
		fmt.Fprintf(&b, "  - %s\n", f.service)
		g.service = append(g.service, f.service)
	}
	b.WriteString("  machineNetwork:\n")
	for _, f := range fams {
		fmt.Fprintf(&b, "  - cidr: %s\n", f.machine)
		g.machin = append(g.machin, f.machine)
		g.ips = append(g.ips, f.node)
		ips = append(ips, f.node.String())
	}
	g.nodeIPs = strings.Join(ips, ",")
	b.WriteString("platform:\n  none: {}\n")
	b.WriteString(`pullSecret: '{"auths":{"registry.example.com:5000":{"auth":"Zm9vOmJhcg=="}}}'` + "\n")
	b.WriteString("sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHJFOcCtCt226zz6sjsn6+zA1fs+LRtYzQ7fQsAbGuae test@render-static\n")
	if g.proxy = rng.IntN(2) == 0; g.proxy {
		proxyHost := "proxy." + g.domain
		if rng.IntN(2) == 0 {
			proxyHost = urlHost(host(rng, fams[0].machine))
		}
		b.WriteString("proxy:\n")
		fmt.Fprintf(&b, "  httpProxy: http://%s:%d\n", proxyHost, 3128+rng.IntN(10))
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, "  httpsProxy: https://%s:%d\n", proxyHost, 3129+rng.IntN(10))
		}
		fmt.Fprintf(&b, "  noProxy: .%s,%s\n", g.domain, fams[0].machine)
	}
	if g.mirrors = rng.IntN(2) == 0; g.mirrors {
		mirror := "registry." + g.domain + ":" + strconv.Itoa(5000+rng.IntN(1000))
		b.WriteString("imageDigestSources:\n")
		for _, src := range []string{"quay.io/openshift-release-dev/ocp-release", "quay.io/openshift-release-dev/ocp-v4.0-art-dev"} {
			fmt.Fprintf(&b, "- source: %s\n  mirrors:\n  - %s/ocp/release\n", src, mirror)
		}
	}
	g.yaml = b.String()
	return g
}

// genCheck checks one generated render.
type genCheck struct {
	t     *testing.T
	g     *genConfig
	files rendertest.Files
}

func (c *genCheck) cert(p string) *x509.Certificate {
	c.t.Helper()
	cert, err := rendertest.Certificate(c.files.File, p)
	if err != nil {
		c.t.Fatal(err)
	}
	return cert
}

// kasServing are the certificates kube-apiserver serves (its default and SNI certificates), as node paths.
func (c *genCheck) kasServing() []*x509.Certificate {
	var out []*x509.Certificate
	for _, secret := range []string{"localhost-serving-cert-certkey", "service-network-serving-certkey",
		"external-loadbalancer-serving-certkey", "internal-loadbalancer-serving-certkey"} {
		out = append(out, c.cert(kasCertDir+"secrets/"+secret+"/tls.crt"))
	}
	return append(out, c.cert(kasRevDir+"secrets/localhost-recovery-serving-certkey/tls.crt"))
}

func covered(cs []*x509.Certificate, name string) bool {
	for _, c := range cs {
		if c.VerifyHostname(name) == nil {
			return true
		}
	}
	return false
}

// servingNames: what clients dial is covered by the serving certificate that answers. kube-apiserver: api,
// api-int, localhost, the first IP of every service network and the kubernetes service names, and the host of every
// kubeconfig's server on the node; etcd: every node IP, localhost and both loopback addresses, and every etcd URL
// kube-apiserver and the etcd environment name; the kubeconfigs' CAs verify kube-apiserver for their server name.
func (c *genCheck) servingNames() {
	t, g := c.t, c.g
	kas := c.kasServing()
	cluster := g.name + "." + g.domain
	names := []string{"api." + cluster, "api-int." + cluster, "localhost", "127.0.0.1", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local", "openshift.default.svc"}
	for _, s := range g.service {
		names = append(names, s.Masked().Addr().Next().String())
	}
	for _, n := range names {
		if !covered(kas, n) {
			t.Errorf("no kube-apiserver serving certificate covers %s", n)
		}
	}
	// Every kubeconfig on the node: its server's host is covered, and its CA (when inline or a node file)
	// verifies the certificate that covers it.
	for p, f := range c.files {
		if !strings.Contains(p, "kubeconfig") || strings.HasSuffix(p, ".crt") || strings.HasSuffix(p, ".key") {
			continue
		}
		cfg, err := clientcmd.Load(f.Contents)
		if err != nil || len(cfg.Clusters) == 0 {
			continue
		}
		for _, cl := range cfg.Clusters {
			u, err := url.Parse(cl.Server)
			if err != nil {
				t.Errorf("%s: server %q: %v", p, cl.Server, err)
				continue
			}
			if u.Port() != "6443" {
				t.Errorf("%s: server %s is not kube-apiserver's port", p, cl.Server)
				continue
			}
			var match *x509.Certificate
			for _, s := range kas {
				if s.VerifyHostname(u.Hostname()) == nil {
					match = s
					break
				}
			}
			if match == nil {
				t.Errorf("%s: no kube-apiserver serving certificate covers %s", p, u.Hostname())
				continue
			}
			ca := cl.CertificateAuthorityData
			if len(ca) == 0 {
				if ff, ok := c.files.File(cl.CertificateAuthority); ok {
					ca = ff.Contents
				}
			}
			if len(ca) > 0 {
				roots := x509.NewCertPool()
				roots.AppendCertsFromPEM(ca)
				if _, err := match.Verify(x509.VerifyOptions{Roots: roots, DNSName: u.Hostname()}); err != nil {
					t.Errorf("%s: its CA does not verify kube-apiserver for %s: %v", p, u.Hostname(), err)
				}
			}
		}
	}
	// etcd.
	etcdNames := []string{"localhost", "127.0.0.1", "::1"}
	for _, ip := range g.ips {
		etcdNames = append(etcdNames, ip.String())
	}
	var cfg struct {
		APIServerArguments map[string][]string `json:"apiServerArguments"`
	}
	f, ok := c.files.File(kasRevDir + "configmaps/config/config.yaml")
	if !ok {
		t.Fatal("no kube-apiserver config.yaml")
	}
	if err := yaml.Unmarshal(f.Contents, &cfg); err != nil {
		t.Fatal(err)
	}
	etcdURLs := cfg.APIServerArguments["etcd-servers"]
	env, _ := c.files.File(etcdCertDir + "configmaps/etcd-scripts/etcd.env")
	for _, m := range regexp.MustCompile(`export (?:ALL_ETCD_ENDPOINTS|ETCDCTL_ENDPOINTS)="([^"]*)"`).FindAllStringSubmatch(string(env.Contents), -1) {
		etcdURLs = append(etcdURLs, strings.Split(m[1], ",")...)
	}
	if len(etcdURLs) < 3 {
		t.Errorf("only %d etcd URLs found (etcd-servers, ALL_ETCD_ENDPOINTS, ETCDCTL_ENDPOINTS)", len(etcdURLs))
	}
	for _, s := range etcdURLs {
		u, err := url.Parse(s)
		if err != nil {
			t.Errorf("etcd URL %q: %v", s, err)
			continue
		}
		etcdNames = append(etcdNames, u.Hostname())
	}
	etcdCA := x509.NewCertPool()
	ca, _ := c.files.File(etcdCertDir + "configmaps/etcd-all-bundles/server-ca-bundle.crt")
	etcdCA.AppendCertsFromPEM(ca.Contents)
	for _, kind := range []string{"etcd-serving-", "etcd-peer-", "etcd-serving-metrics-"} {
		cert := c.cert(etcdCertDir + "secrets/etcd-all-certs/" + kind + g.nodeName + ".crt")
		for _, n := range etcdNames {
			if err := cert.VerifyHostname(n); err != nil {
				t.Errorf("%s%s: %v", kind, g.nodeName, err)
			}
		}
		if kind != "etcd-serving-metrics-" {
			if _, err := cert.Verify(x509.VerifyOptions{Roots: etcdCA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("%s%s does not verify against etcd's server CA bundle: %v", kind, g.nodeName, err)
			}
		}
	}
}

// configFile says whether a node file is a configuration whose URLs and addresses are checked.
func configFile(p string) bool {
	switch {
	case strings.HasSuffix(p, ".crt"), strings.HasSuffix(p, ".key"), strings.HasSuffix(p, ".pem"), strings.Contains(p, "/secrets/"):
		return false
	case strings.HasPrefix(p, "/opt/openshift/manifests/") && strings.Contains(p, "customresourcedefinition"):
		return false
	}
	return strings.HasPrefix(p, "/etc/kubernetes/") || strings.HasPrefix(p, "/opt/openshift/") ||
		strings.HasPrefix(p, "/etc/systemd/") || strings.HasPrefix(p, "/etc/containers/") || p == "/etc/hosts"
}

var (
	urlPattern  = regexp.MustCompile(`\b(?:https?|unix|tcp)://[^\s"'\\,;)<>}]+`)
	addrPattern = regexp.MustCompile(`(?:--[a-z-]*(?:addr|address|listen|endpoints?|advertise[a-z-]*|url|urls|server|servers)[= ]+|(?:bindAddress|healthzBindAddress|metricsBindAddress|address|server): ['"]?)([^\s"',]+)`)
)

// urls: every URL and every address-like flag or key in the static pods (environment expanded per container)
// and the configuration files parses; an IPv6 literal is bracketed where a port or path follows.
func (c *genCheck) urls() {
	t := c.t
	checkText := func(where, text string) int {
		n := 0
		for _, u := range urlPattern.FindAllString(text, -1) {
			n++
			if strings.Contains(u, "$") {
				continue // a variable only the shell or the installer resolves
			}
			if p := urlProblem(u); p != "" {
				t.Errorf("%s: %s", where, p)
			}
		}
		for _, m := range addrPattern.FindAllStringSubmatch(text, -1) {
			v := strings.TrimRight(m[1], "\\")
			if strings.Contains(v, "://") || strings.Contains(v, "$") || strings.HasPrefix(v, "/") || v == "" || v == `""` {
				continue
			}
			n++
			if p := addrProblem(m[0], v); p != "" {
				t.Errorf("%s: %s", where, p)
			}
		}
		return n
	}
	total := 0
	for p, f := range c.files {
		if configFile(p) {
			total += checkText(p, string(f.Contents))
		}
	}
	eachContainer(t, c.files, func(p string, _ *corev1.Pod, ct *corev1.Container) {
		total += checkText(p+" container "+ct.Name, expand(script(ct), ct))
		for _, e := range ct.Env {
			total += checkText(p+" container "+ct.Name+" env "+e.Name, e.Value)
		}
	})
	t.Logf("%d URLs and addresses checked", total)
	if total < 50 {
		t.Errorf("only %d URLs and addresses found: the patterns miss the render", total)
	}
}

// urlProblem says what is wrong with a URL ("" when nothing): it must parse and have a host, an IPv6 literal in
// brackets.
func urlProblem(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Sprintf("%q does not parse: %v", s, err)
	}
	if u.Scheme == "unix" {
		return ""
	}
	if u.Host == "" {
		return fmt.Sprintf("%q has no host", s)
	}
	return hostProblem(s, u.Host)
}

// hostProblem: h is host or host:port, with an IPv6 literal in brackets.
func hostProblem(whole, h string) string {
	hostPart := h
	colons := strings.Count(h, ":")
	switch {
	case strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]"):
		if ip, err := netip.ParseAddr(h[1 : len(h)-1]); err != nil || !ip.Is6() {
			return fmt.Sprintf("%q: %s in brackets is not an IPv6 address", whole, h)
		}
		return ""
	case colons > 1 && !strings.HasPrefix(h, "["):
		return fmt.Sprintf("%q: IPv6 address %s not in brackets", whole, h)
	case colons > 0:
		hh, port, err := net.SplitHostPort(h)
		if err != nil {
			return fmt.Sprintf("%q: %v", whole, err)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Sprintf("%q: port %q", whole, port)
		}
		hostPart = hh
		if strings.HasPrefix(h, "[") {
			if ip, err := netip.ParseAddr(hh); err != nil || !ip.Is6() {
				return fmt.Sprintf("%q: %s in brackets is not an IPv6 address", whole, hh)
			}
		}
	case strings.ContainsAny(h, "[]"):
		return fmt.Sprintf("%q: stray bracket", whole)
	}
	if strings.ContainsAny(hostPart, "[]") {
		return fmt.Sprintf("%q: stray bracket", whole)
	}
	return ""
}

// bareIPFlag matches the flags and keys whose value is an IP without a port (any family, unbracketed): kube-proxy's
// bindAddress too (KubeProxyConfiguration v1alpha1: "the IP address for the proxy server to serve on").
var bareIPFlag = regexp.MustCompile(`bind-address|advertise-address|node-ip|^address:|^bindAddress:`)

// addrProblem: an address flag's value is host:port (IPv6 bracketed) or a list of them; for a bare-IP flag
// (bind-address, advertise-address, node-ip, address:, bindAddress:) an IP.
func addrProblem(flag, v string) string {
	for _, part := range strings.Split(v, ",") {
		if part == "" {
			continue
		}
		if _, err := netip.ParseAddr(part); err == nil && bareIPFlag.MatchString(flag) {
			continue
		}
		if !strings.Contains(part, ":") {
			continue // a name (a hostname, a file name or a word)
		}
		if p := hostProblem(flag, part); p != "" {
			return p
		}
	}
	return ""
}

// TestAddressCheckers: the generative test's URL and address checks accept what is right and refuse unbracketed
// IPv6, stray brackets and bad ports.
func TestAddressCheckers(t *testing.T) {
	for _, ok := range []string{"https://192.168.1.1:2379", "https://[fd00::1]:2379", "https://localhost:6443/readyz",
		"http://user:pass@proxy.example.com:3128", "https://[::1]", "unix:///var/run/crio/crio.sock", "https://api.a.b:6443"} {
		if p := urlProblem(ok); p != "" {
			t.Errorf("%s refused: %s", ok, p)
		}
	}
	for _, bad := range []string{"https://fd00::1:2379", "https://fd00::1", "https://[192.168.1.1]:2379", "https://a:99999",
		"https://[fd00::1:2379", "https://"} {
		if urlProblem(bad) == "" {
			t.Errorf("%s accepted", bad)
		}
	}
	for _, ok := range []string{"0.0.0.0:9979", "[::]:17697", "127.0.0.1:9977,[::1]:9977", "localhost:10257", "[fd00::1]"} {
		if p := addrProblem("--listen-addr ", ok); p != "" {
			t.Errorf("%s refused: %s", ok, p)
		}
	}
	for _, bad := range []string{"fd00::1:9977", "::", "[10.0.0.1]:1", "0.0.0.0:port"} {
		if addrProblem("--listen-addr ", bad) == "" {
			t.Errorf("%s accepted", bad)
		}
	}
	for _, ok := range []string{"::", "fd00::10", "0.0.0.0"} {
		if p := addrProblem("--bind-address=", ok); p != "" {
			t.Errorf("--bind-address=%s refused: %s", ok, p)
		}
	}
}

// flagFiles: every absolute path a static pod's flag names as a file (certificates, keys, kubeconfigs,
// configurations) is on the node, through the container's hostPath mounts.
func (c *genCheck) flagFiles() {
	t := c.t
	flagPath := regexp.MustCompile(`--[a-z0-9-]+[= ](/[^\s"',;]+)`)
	fileLike := regexp.MustCompile(`(\.crt|\.key|\.pem|\.ya?ml|\.conf|\.json|kubeconfig|\.kubeconfig|ca\.crt|token)$`)
	checked := 0
	eachContainer(t, c.files, func(p string, pod *corev1.Pod, ct *corev1.Container) {
		for _, m := range flagPath.FindAllStringSubmatch(expand(script(ct), ct), -1) {
			file := strings.TrimRight(m[1], "\\")
			if !fileLike.MatchString(file) || strings.Contains(file, "$") {
				continue
			}
			host, vol, err := rendertest.MountedPath(pod, ct, file)
			if err != nil {
				if vol != nil && vol.HostPath == nil {
					continue // an emptyDir or projected volume: filled at run time
				}
				t.Errorf("%s container %s: %s: %v", p, ct.Name, m[0], err)
				continue
			}
			checked++
			if _, ok := c.files.File(host); !ok {
				t.Errorf("%s container %s: %s: %s is not on the node", p, ct.Name, m[0], host)
			}
		}
	})
	if checked < 20 {
		t.Errorf("only %d file flags found in the static pods", checked)
	}
	// The files the components' configurations (and the kubeconfigs those name) refer to, as the main container
	// of each pod sees them.
	pathRef := regexp.MustCompile(`/etc/kubernetes/[^\s"',;]+`)
	refs := 0
	for _, cfg := range []struct{ pod, container, file string }{
		{"kube-apiserver-pod.yaml", "kube-apiserver", "/etc/kubernetes/static-pod-resources/configmaps/config/config.yaml"},
		{"kube-controller-manager-pod.yaml", "kube-controller-manager", "/etc/kubernetes/static-pod-resources/configmaps/config/config.yaml"},
		{"kube-controller-manager-pod.yaml", "cluster-policy-controller", "/etc/kubernetes/static-pod-resources/configmaps/cluster-policy-controller-config/config.yaml"},
		{"kube-scheduler-pod.yaml", "kube-scheduler", "/etc/kubernetes/static-pod-resources/configmaps/config/config.yaml"},
	} {
		pod, err := c.files.Pod(cfg.pod)
		if err != nil {
			t.Fatal(err)
		}
		ct := rendertest.Container(pod, cfg.container)
		if ct == nil {
			t.Fatalf("%s has no container %s", cfg.pod, cfg.container)
		}
		seen := map[string]bool{}
		queue := []string{cfg.file}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if seen[p] {
				continue
			}
			seen[p] = true
			host, _, err := rendertest.MountedPath(pod, ct, p)
			if err != nil {
				t.Errorf("%s container %s: %v", cfg.pod, cfg.container, err)
				continue
			}
			f, ok := c.files.File(host)
			if !ok {
				t.Errorf("%s container %s: %s (%s) is not on the node", cfg.pod, cfg.container, p, host)
				continue
			}
			refs++
			if strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, "kubeconfig") {
				for _, ref := range pathRef.FindAllString(string(f.Contents), -1) {
					if fileLike.MatchString(ref) {
						queue = append(queue, ref)
					}
				}
			}
		}
	}
	t.Logf("%d file flags of the static pods and %d files through the configurations are on the node", checked, refs)
	if refs < 15 {
		t.Errorf("only %d files found through the components' configurations", refs)
	}
}

func (c *genCheck) ignitionValidate(ign string) {
	bin, err := exec.LookPath("ignition-validate")
	if err != nil {
		if os.Getenv("RENDER_STATIC_REQUIRE_TOOLS") != "" || os.Getenv("CI") != "" {
			c.t.Fatal("ignition-validate is not installed: run hack/install-test-deps.sh")
		}
		c.t.Log("ignition-validate not installed; skipping that check")
		return
	}
	out, err := exec.Command(bin, ign).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		c.t.Errorf("ignition-validate: %v\n%s", err, out)
	}
}

// keyMaterial: a digest of every private key on the node (PEM blocks and the kubeconfigs' inline keys) and of
// every service-account signing key.
func (c *genCheck) keyMaterial() map[[32]byte]bool {
	out := map[[32]byte]bool{}
	add := func(data []byte) {
		for {
			var b *pem.Block
			b, data = pem.Decode(data)
			if b == nil {
				return
			}
			if strings.Contains(b.Type, "PRIVATE KEY") {
				out[sha256.Sum256(b.Bytes)] = true
			}
		}
	}
	for p, f := range c.files {
		add(f.Contents)
		if strings.Contains(p, "kubeconfig") {
			if cfg, err := clientcmd.Load(f.Contents); err == nil {
				for _, u := range cfg.AuthInfos {
					add(u.ClientKeyData)
				}
			}
		}
	}
	if len(out) < 10 {
		c.t.Errorf("only %d private keys on the node", len(out))
	}
	return out
}

// eachContainer calls fn with every container (init containers too) of every static pod of files.
func eachContainer(t *testing.T, files rendertest.Files, fn func(p string, pod *corev1.Pod, ct *corev1.Container)) {
	t.Helper()
	for p := range files {
		if path.Dir(p) != export.PodManifestDir {
			continue
		}
		pod, err := files.Pod(path.Base(p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for _, ct := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
			fn(p, pod, &ct)
		}
	}
}
