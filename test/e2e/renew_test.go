package e2e

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/render-static/render-static/pkg/certs"
)

// The renewal end to end (issue 12), through a re-render (issue 39): the IPv4 install-config rendered with leaves
// of renewLeaf; the original aio.ign boots on the real node; once it is up, a re-render with a changed input
// (--cert-validity rerenderLeaf, which issues every leaf again with that lifetime) writes the update for the running
// node, which is copied into the node and applied there by the command aio.ign installed, as a renewal's; then
// `render-static renew --force` makes the next update, chained from the re-render's, applied the same way; then,
// past the expiry of every original leaf, the node must still work: every
// API address served with a renewed certificate, the same containers running across the expiry,
// kube-controller-manager and kube-scheduler renewing their leases (they read their renewed client certificates
// from their cert directories while running), the kubelet on a client certificate it renewed itself through a CSR
// the rendered approver approved, and no leaf the running static pods use expired.

// renewLeaf is the leaf lifetime of the render. What bounds it from below: a component whose revision the update
// does not change (kube-controller-manager, kube-scheduler) reads its renewed client certificate from its cert
// directory when client-go reloads such files, every 5 minutes from its start (transport/cert_rotation.go,
// CertCallbackRefreshDuration). The apply is done ~5 minutes after the kubelet starts (boot, first-boot apply,
// renew, the update's restarts of etcd and kube-apiserver), right around their first reload; the second comes ~10
// minutes after their start, ~10.5 after the render: the original leaves must outlive it. (Measured: both lost
// their 15 s leases while kube-apiserver restarted in the apply, exited once and started on the renewed
// certificates; on a faster machine they keep running and need the reload, hence 12.) It also sets how long the
// case waits (the case took 12.6 minutes).
const renewLeaf = 12 * time.Minute

// rerenderLeaf is the leaf lifetime the re-render gives: the leaves it issues, and those renew issues after it
// (renew keeps the saved validity), outlive the original ones and the checks after their expiry (up to 2 minutes)
// by far. The two applies (2-3 minutes each) start once the node is up (~1.5 minutes after the render) and are done
// ~7-8 minutes after the render, before kube-controller-manager's and kube-scheduler's second reload of their
// client certificates (~10.5 minutes), which must find renewed ones.
const rerenderLeaf = 30 * time.Minute

// rerenderArgs: the re-render's changed input; renewArgs: what renew is asked to do after it (every leaf due: the
// re-render's leaves are not, by any --within shorter than their lifetime).
var (
	rerenderArgs = []string{"--cert-validity", rerenderLeaf.String()}
	renewArgs    = []string{"renew", "--force"}
)

// upstreamRenderArgs are more flags for the upstream render of a case, by its name.
var upstreamRenderArgs = map[string][]string{"renew": {"--cert-validity", renewLeaf.String()}}

// UpdateCommand is the command aio.ign installs to apply an update on the node (`apply DIR`, `rollback`).
const UpdateCommand = "/usr/local/bin/aio-update"

// updateDir is where the update is copied on the node (as an admin would copy it there).
const updateDir = "/root/aio-update"

func TestUpstreamE2ERenew(t *testing.T) {
	spec := prepareIPv4Case(t, "renew")
	spec.Phase = "renew"
	tm := newTimings("upstream/renew (outer)")
	tm.step("node", func() { runInner(t, spec, renewLeaf+15*time.Minute) })
	t.Log(tm.String())
}

// prepareIPv4Case is the IPv4 install-config prepared as case name (its render flags: upstreamRenderArgs), for a
// test that runs render-static on the node (spec.CLI); skipped unless RENDER_STATIC_E2E_CASES names it (or is
// empty).
func prepareIPv4Case(t *testing.T, name string) *innerSpec {
	t.Helper()
	preconditions(t)
	if only := os.Getenv("RENDER_STATIC_E2E_CASES"); only != "" && !strings.Contains(","+only+",", ","+name+",") {
		t.Skipf("not in RENDER_STATIC_E2E_CASES=%s", only)
	}
	cli := renderStaticCLI(t)
	c := upstreamCases[0]
	c.name, c.worker = name, "" // the control-plane node alone (the worker case renews with its worker: worker_test.go)
	spec := prepareUpstreamCase(t, cli, binaries(t), c)
	spec.CLI = cli
	return spec
}

// renewBefore is what the node runs on before the update.
type renewBefore struct {
	earliest, latest *FoundCert            // the original leaves on the node that expire first and last
	served           map[string]*FoundCert // API address → what it serves
	kubelet          *FoundCert            // the kubelet's render-time client certificate
}

// innerRenew: the node boots the original render and finishes its first-boot apply; the update renew made is
// copied into the node and applied; then, past the expiry of every original leaf, the checks.
func innerRenew(t *testing.T, spec *innerSpec) {
	tm := newTimings("upstream/renew (node)")
	n := bootNode(t, spec, tm)
	cs, _ := clients(t, spec.Kubeconfig)
	tm.add("kubelet->readyz", waitAPI(t, n, cs, 4*time.Minute))
	startCSRApprover(t, n)
	tm.step("aiokube", func() {
		if log, err := runAiokube(t, n); err != nil {
			t.Fatalf("aiokube: %v\n%s", err, log)
		}
	})
	tm.add("kubelet->mirror-pods-ready", waitMirrorPods(t, n, cs, 4*time.Minute))
	checkServingCSR(t, cs, n)

	b := observeBeforeUpdate(t, spec)
	t.Logf("FIGURE renew: the original leaves on the node expire from %s (%s) to %s (%s); %.0fs left to the first",
		b.earliest.Cert.NotAfter.UTC().Format(time.RFC3339), b.earliest.Path, b.latest.Cert.NotAfter.UTC().Format(time.RFC3339),
		b.latest.Path, time.Until(b.earliest.Cert.NotAfter).Seconds())

	// The re-render and renew on the render directory (they run offline: here only because the node is up). The
	// re-render's update carries every leaf issued again with rerenderLeaf; renew's follows it (its update.json
	// names the re-render's as the previous one), and the node applies both in order with its own aio-update.
	rerendered := renewAndCopy(t, spec, n, tm, rerenderArgs...)
	if len(Leaves(rerendered)) == 0 {
		t.Fatalf("the re-render with %v carries no leaf", rerenderArgs)
	}
	applyUpdate(t, n, tm, "rerender-", updateDir)
	renewed := renewAndCopy(t, spec, n, tm, renewArgs...)
	applyUpdate(t, n, tm, "", updateDir)
	checkChained(t, spec)
	if left := time.Until(b.earliest.Cert.NotAfter); left <= 0 {
		t.Fatalf("the apply finished %s after the first original leaf expired: raise renewLeaf (%s)", (-left).Round(time.Second), renewLeaf)
	} else {
		t.Logf("FIGURE renew: applied %.0fs after the kubelet started, %.0fs before the first original leaf expires", time.Since(n.KubeletStart).Seconds(), left.Seconds())
	}
	// The admin kubeconfig of the render is not renewed (docs/renew.md): from here on the node's own localhost
	// kubeconfig, the one aio-update uses, renewed by the update.
	local := updateKubeconfig(t)
	cs, _ = clients(t, local)
	tm.add("apply->readyz", waitReadyz(t, n, cs, 4*time.Minute))

	// Across the expiry: what runs 15 s before the first original leaf expires (the apply, which restarts the pods
	// it gives a new revision, is over) must still run, the same containers and lease holders, 20 s past the
	// expiry of the last one. Whatever was not renewed has stopped working by then.
	since := b.latest.Cert.NotAfter
	var containers, holders map[string]string
	tm.step("wait-expiry", func() {
		if wait := time.Until(since) + 20*time.Second; wait > renewLeaf+time.Minute {
			t.Fatalf("the last original leaf expires in %s, later than renewLeaf (%s) allows", wait, renewLeaf)
		}
		sleepWatching(t, n, time.Until(b.earliest.Cert.NotAfter)-15*time.Second)
		containers = runningContainers(t, n)
		holders = leaseHolders(t, cs, "kube-system", "kube-controller-manager", "kube-scheduler")
		t.Logf("before the first original leaf expires (%s): running %v; leases held by %v", b.earliest.Cert.NotAfter.UTC().Format(time.RFC3339), sortedKeys(containers), holders)
		t.Logf("waiting until 20s past the expiry of the last original leaf (%s)", since.UTC().Format(time.RFC3339))
		sleepWatching(t, n, time.Until(since)+20*time.Second)
	})
	tm.step("checks", func() {
		checkHealth(t, cs)
		checkServedRenewed(t, b, renewed)
		after := runningContainers(t, n)
		for _, k := range sortedKeys(containers) {
			if after[k] != containers[k] {
				t.Errorf("container %s (%.12s before the expiry) was replaced (now %q) across the original leaves' expiry: it did not run on renewed certificates", k, containers[k], after[k])
			}
		}
		if len(containers) < 4 {
			t.Errorf("only %d containers ran before the expiry: %v", len(containers), sortedKeys(containers))
		}
		checkLeasesAdvance(t, cs, since, "kube-system", "kube-controller-manager", "kube-scheduler")
		for name, holder := range leaseHolders(t, cs, "kube-system", "kube-controller-manager", "kube-scheduler") {
			if holder != holders[name] {
				t.Errorf("lease kube-system/%s: held by %s before the expiry, by %s after it", name, holders[name], holder)
			}
		}
		checkLeasesAdvance(t, cs, since, "kube-node-lease", n.NodeName)
		checkKubeletClientRenewed(t, cs, n, b)
		checkNothingExpired(t, n)
		logFailedContainers(t, n)
	})
	t.Log(tm.String())
}

// renewAndCopy runs `render-static <args> --dir` on the render directory (renew, with args; a re-render when args
// are flags), and copies its update into the node at updateDir, as an admin would; it returns the update's
// certificates.
func renewAndCopy(t *testing.T, spec *innerSpec, n *Node, tm *timings, args ...string) []FoundCert {
	t.Helper()
	renderDir := filepath.Dir(filepath.Dir(spec.Kubeconfig))
	step := "renew"
	if len(args) > 0 && strings.HasPrefix(args[0], "-") {
		step = "rerender"
	}
	tm.step(step, func() {
		out, err := RunLogged(context.Background(), 10*time.Minute, filepath.Join(n.LogDir(), "renew.log"), nil,
			append(append([]string{spec.CLI}, args...), "--dir", renderDir)...)
		t.Logf("render-static %s --dir %s:\n%s", strings.Join(args, " "), renderDir, out)
		if err != nil {
			t.Fatal(err)
		}
	})
	src := filepath.Join(renderDir, "update")
	renewed, err := CertificatesIn(src)
	if err != nil {
		t.Fatalf("%s wrote no update: %v", step, err)
	}
	t.Logf("%s holds %d certificates (%d leaves)", src, len(renewed), len(Leaves(renewed)))
	copyUpdate(t, tm, "", src, updateDir)
	return renewed
}

// checkChained: the render directory's last update (renew's) names the one before it (the re-render's), kept in
// updates/, and the node's aio-update recorded both as applied.
func checkChained(t *testing.T, spec *innerSpec) {
	t.Helper()
	renderDir := filepath.Dir(filepath.Dir(spec.Kubeconfig))
	var last struct {
		ID       string `json:"id"`
		Previous string `json:"previous"`
	}
	b, err := os.ReadFile(filepath.Join(renderDir, "update", "update.json"))
	if err == nil {
		err = json.Unmarshal(b, &last)
	}
	if err != nil || last.Previous == "" {
		t.Fatalf("renew's update.json: %v, previous %q: it does not follow the re-render's", err, last.Previous)
	}
	if _, err := os.Stat(filepath.Join(renderDir, "updates", last.Previous, "update.json")); err != nil {
		t.Errorf("the re-render's update %s is not kept: %v", last.Previous, err)
	}
	out, err := exec.Command(UpdateCommand, "status").CombinedOutput()
	for _, id := range []string{last.Previous, last.ID} {
		if err != nil || !strings.Contains(string(out), id) {
			t.Errorf("aio-update status does not list update %s as applied (%v):\n%s", id, err, out)
		}
	}
}

// copyUpdate copies an update of the render directory (src) into the node at dst, as an admin would copy it there
// (step <label>copy of tm).
func copyUpdate(t *testing.T, tm *timings, label, src, dst string) {
	t.Helper()
	tm.step(label+"copy", func() {
		os.RemoveAll(dst)
		if err := CopyTree(src, dst); err != nil {
			t.Fatal(err)
		}
	})
}

// applyUpdate applies the update copied into the node at dir with the aio-update aio.ign installed, inside the
// node's namespaces (step <label>apply of tm).
func applyUpdate(t *testing.T, n *Node, tm *timings, label, dir string) {
	t.Helper()
	tm.step(label+"apply", func() {
		if _, err := os.Stat(UpdateCommand); err != nil {
			t.Fatalf("aio.ign installed no %s: %v", UpdateCommand, err)
		}
		out, err := RunLogged(context.Background(), 20*time.Minute, filepath.Join(n.LogDir(), "aio-update.log"), nil, UpdateCommand, "apply", dir)
		t.Logf("%s apply %s:\n%s", UpdateCommand, dir, out)
		if err != nil {
			t.Fatal(err)
		}
	})
}

// waitReadyz waits (bounded) for /readyz ok after the apply restarted the control plane; it returns how long it
// took. Crash loops are not looked for here: while etcd and kube-apiserver restart in their new revisions,
// kube-controller-manager and kube-scheduler may lose their leases (upstream's 15 s) and exit once or twice.
func waitReadyz(t *testing.T, n *Node, cs *kubernetes.Clientset, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	err := poll(context.Background(), timeout, time.Second, func(ctx context.Context) (bool, error) {
		if err := n.KubeletRunning(); err != nil {
			t.Fatal(err)
		}
		b, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(b) == "ok", err
	})
	if err != nil {
		t.Fatalf("/readyz after the apply: %v", err)
	}
	return time.Since(start)
}

// apiAddress is the host:port and server name of a kubeconfig's server.
func apiAddress(t *testing.T, kubeconfig string) (addr, serverName string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return u.Hostname() + ":" + port, u.Hostname()
}

// apiKubeconfigs are kubeconfigs whose servers are the API's addresses: the admin's (api), the kubelet's (api-int)
// and the node's localhost one (localhost).
func apiKubeconfigs(t *testing.T, spec *innerSpec) []string {
	return []string{spec.Kubeconfig, "/var/lib/kubelet/kubeconfig", updateKubeconfig(t)}
}

// updateKubeconfig is the kubeconfig aio-update uses on the node (AIO_UPDATE_KUBECONFIG of its settings).
func updateKubeconfig(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/etc/kubernetes/aio-update.env")
	if err != nil {
		t.Fatalf("aio-update's settings: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "AIO_UPDATE_KUBECONFIG="); ok {
			return strings.Trim(v, "'\"")
		}
	}
	t.Fatal("aio-update's settings name no AIO_UPDATE_KUBECONFIG")
	return ""
}

// observeBeforeUpdate records the original leaves on the node (their first and last expiry), what each API address
// serves, and the kubelet's render-time client certificate.
func observeBeforeUpdate(t *testing.T, spec *innerSpec) *renewBefore {
	t.Helper()
	b := &renewBefore{served: map[string]*FoundCert{}}
	all, err := CertificatesIn("/etc/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	// The leaves --cert-validity governs (the render-time node credentials live 5 minutes longer, backdated).
	var leaves []FoundCert
	for _, c := range Leaves(all) {
		if c.Cert.NotAfter.Sub(c.Cert.NotBefore) <= renewLeaf+6*time.Minute {
			leaves = append(leaves, c)
		} else {
			t.Logf("not an original leaf of %s: %s (%s)", renewLeaf, c.Path, Describe(c.Cert))
		}
	}
	if b.earliest = Earliest(leaves); b.earliest == nil {
		t.Fatal("no leaf certificate under the node's /etc/kubernetes")
	}
	for i := range leaves {
		if b.latest == nil || leaves[i].Cert.NotAfter.After(b.latest.Cert.NotAfter) {
			b.latest = &leaves[i]
		}
	}
	for _, kc := range apiKubeconfigs(t, spec) {
		addr, name := apiAddress(t, kc)
		served, err := ServedCertificate(context.Background(), addr, name, nil)
		if err != nil {
			t.Fatalf("TLS to %s: %v", addr, err)
		}
		b.served[name] = &FoundCert{Path: addr, Cert: served}
		t.Logf("before the update %s (from %s) serves %s", addr, kc, Describe(served))
	}
	kc, err := CertificatesIn("/var/lib/kubelet/kubeconfig")
	if err != nil || len(kc) != 1 {
		t.Fatalf("the kubelet's render-time client certificate: %d found, %v", len(kc), err)
	}
	b.kubelet = &kc[0]
	t.Logf("the kubelet's render-time client certificate: %s", Describe(b.kubelet.Cert))
	return b
}

// checkServedRenewed: each API address now serves a certificate of the update (by fingerprint), not the one it
// served before, that outlives every original leaf.
func checkServedRenewed(t *testing.T, b *renewBefore, renewed []FoundCert) {
	t.Helper()
	byFingerprint := map[string]*FoundCert{}
	for i := range renewed {
		byFingerprint[Fingerprint(renewed[i].Cert)] = &renewed[i]
	}
	for _, name := range sortedKeys(b.served) {
		before := b.served[name]
		addr := before.Path
		served, err := ServedCertificate(context.Background(), addr, name, nil)
		if err != nil {
			t.Errorf("TLS to %s: %v", addr, err)
			continue
		}
		match := byFingerprint[Fingerprint(served)]
		switch {
		case Fingerprint(served) == Fingerprint(before.Cert):
			t.Errorf("%s (%s) still serves the certificate it served before the update: %s", addr, name, Describe(served))
		case match == nil:
			t.Errorf("%s (%s) serves %s, which is in no file of the update", addr, name, Describe(served))
		case !served.NotAfter.After(b.latest.Cert.NotAfter):
			t.Errorf("%s (%s) serves %s, which does not outlive the original leaves (%s)", addr, name, Describe(served), b.latest.Cert.NotAfter)
		default:
			t.Logf("%s (%s) serves the renewed %s (%s); before the update: %s", addr, name, Describe(served), match.Path, Describe(before.Cert))
		}
	}
}

// leaseHolders reads the holders of leases.
func leaseHolders(t *testing.T, cs *kubernetes.Clientset, namespace string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		err := poll(context.Background(), shortWait, time.Second, func(ctx context.Context) (bool, error) {
			l, err := cs.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if l.Spec.HolderIdentity != nil {
				out[name] = *l.Spec.HolderIdentity
			}
			return out[name] != "", nil
		})
		if err != nil {
			t.Errorf("lease %s/%s: %v", namespace, name, err)
		}
	}
	return out
}

// checkLeasesAdvance: each lease is held and its renewTime moves past since and then advances again (its holder
// renews it with a credential valid now).
func checkLeasesAdvance(t *testing.T, cs *kubernetes.Clientset, since time.Time, namespace string, names ...string) {
	t.Helper()
	for _, name := range names {
		var first, last time.Time
		var holder string
		err := poll(context.Background(), longWait, time.Second, func(ctx context.Context) (bool, error) {
			l, err := cs.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil {
				return false, nil
			}
			holder, last = *l.Spec.HolderIdentity, l.Spec.RenewTime.Time
			if !last.After(since) {
				return false, nil
			}
			if first.IsZero() {
				first = last
			}
			return last.After(first), nil
		})
		if err != nil {
			t.Errorf("lease %s/%s not renewed after %s (holder %q, last renewal %s): %v", namespace, name,
				since.UTC().Format(time.RFC3339), holder, last.UTC().Format(time.RFC3339Nano), err)
			continue
		}
		t.Logf("lease %s/%s held by %s, renewed %s and again %s (after the original expiry %s)", namespace, name, holder,
			first.UTC().Format(time.RFC3339Nano), last.UTC().Format(time.RFC3339Nano), since.UTC().Format(time.RFC3339))
	}
}

// kubeletCurrentCert is where the kubelet's certificate manager keeps the client certificate it renewed.
const kubeletCurrentCert = "/var/lib/kubelet/pki/kubelet-client-current.pem"

// checkKubeletClientRenewed: the kubelet renewed its client certificate itself: the one it uses now outlives the
// render-time one, is for system:node:<name>, and is the certificate of a kube-apiserver-client-kubelet CSR of the
// node that the rendered approver approved (its log says so; nothing else in this test approves CSRs).
func checkKubeletClientRenewed(t *testing.T, cs *kubernetes.Clientset, n *Node, b *renewBefore) {
	t.Helper()
	cur, err := CertificatesIn(kubeletCurrentCert)
	if err != nil || len(Leaves(cur)) == 0 {
		t.Errorf("the kubelet has no renewed client certificate at %s: %v", kubeletCurrentCert, err)
		return
	}
	c := Leaves(cur)[0].Cert
	if c.Subject.CommonName != "system:node:"+n.NodeName || !c.NotAfter.After(b.kubelet.Cert.NotAfter) || Fingerprint(c) == Fingerprint(b.kubelet.Cert) {
		t.Errorf("the kubelet's client certificate %s does not replace the render-time one %s", Describe(c), Describe(b.kubelet.Cert))
	}
	l, err := cs.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Errorf("CSRs: %v", err)
		return
	}
	var csr *certificatesv1.CertificateSigningRequest
	for i := range l.Items {
		x := &l.Items[i]
		if x.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || x.Spec.Username != "system:node:"+n.NodeName {
			continue
		}
		issued, err := certs.ParseCertificates(x.Status.Certificate)
		if err != nil {
			t.Errorf("CSR %s: %v", x.Name, err)
		}
		for _, ic := range issued {
			if Fingerprint(ic) == Fingerprint(c) {
				csr = x
			}
		}
	}
	if csr == nil {
		t.Errorf("no kube-apiserver-client-kubelet CSR of system:node:%s carries the kubelet's current client certificate %s", n.NodeName, Describe(c))
		return
	}
	approved := ""
	for _, cond := range csr.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue {
			approved = cond.Reason + ": " + cond.Message
		}
	}
	log, _ := os.ReadFile(filepath.Join(n.LogDir(), "csr-approver.log"))
	if approved == "" || !strings.Contains(string(log), "approved "+csr.Name+" ") {
		t.Errorf("CSR %s (approved: %q) was not approved by the rendered approver; its log:\n%s", csr.Name, approved, tail(filepath.Join(n.LogDir(), "csr-approver.log"), 20))
		return
	}
	t.Logf("the kubelet renewed its client certificate through CSR %s, approved by the rendered approver (%s): %s; render-time: %s",
		csr.Name, approved, Describe(c), Describe(b.kubelet.Cert))
}

// checkNothingExpired: no leaf certificate in what the running static pods mount from /etc/kubernetes (their
// revision's resources and cert directories), in the CSR approver's credential (renew reissues it: without it
// nothing approves the kubelet's next renewal) nor in the kubelet's current client certificate has expired.
func checkNothingExpired(t *testing.T, n *Node) {
	t.Helper()
	pods, err := StaticPods("/")
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{kubeletCurrentCert: true, "/etc/kubernetes/aio-csr-approver.kubeconfig": true}
	for _, p := range pods {
		for _, v := range p.Spec.Volumes {
			if v.HostPath != nil && strings.HasPrefix(v.HostPath.Path, "/etc/kubernetes/") {
				paths[v.HostPath.Path] = true
			}
		}
	}
	var all []FoundCert
	for _, p := range sortedKeys(paths) {
		cs, err := CertificatesIn(p)
		if err != nil && !os.IsNotExist(err) {
			t.Errorf("%s: %v", p, err)
		}
		all = append(all, cs...)
	}
	leaves := Leaves(all)
	if exp := Expired(leaves, time.Now()); len(exp) > 0 {
		t.Errorf("%d of %d leaf certificates the node uses have expired:\n  %s", len(exp), len(leaves), strings.Join(exp, "\n  "))
	} else if e := Earliest(leaves); e != nil {
		t.Logf("none of the %d leaf certificates in %d places the node uses has expired; the earliest now: %s (%s)", len(leaves), len(paths), e.Path, Describe(e.Cert))
	} else {
		t.Errorf("no leaf certificate found in %v", sortedKeys(paths))
	}
}

// sleepWatching waits d (nothing when d <= 0), failing at once if the kubelet exits.
func sleepWatching(t *testing.T, n *Node, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := n.KubeletRunning(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(min(5*time.Second, time.Until(deadline)+time.Millisecond))
	}
}

// runningContainers are the node's running containers: namespace/pod/container → container ID.
func runningContainers(t *testing.T, n *Node) map[string]string {
	t.Helper()
	all, err := ListContainers(context.Background(), n.CRISocket)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range all {
		if k.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			out[k.Namespace+"/"+k.Pod+"/"+k.Name] = k.ID
		}
	}
	return out
}

// logFailedContainers prints the containers that exited with an error during the whole boot (the apply's
// restarts included), with their logs' last lines.
func logFailedContainers(t *testing.T, n *Node) {
	t.Helper()
	all, err := ListContainers(context.Background(), n.CRISocket)
	if err != nil {
		t.Errorf("CRI: %v", err)
		return
	}
	failed := Failed(all)
	for _, k := range failed {
		t.Logf("exited with an error during the boot: %s; log:\n%s", k, LogTail(k, 5))
	}
	if len(failed) == 0 {
		t.Log("no container exited with an error during the boot")
	}
}
