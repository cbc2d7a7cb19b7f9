package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The power-off end to end (issue 29): the IPv4 install-config rendered with leaves of powerOffLeaf boots and
// finishes its first-boot apply; a ConfigMap and a Secret are written; the whole node is stopped (by PID, as
// between any two boots); the test waits, in real time, until every leaf certificate on the node has expired; the
// node starts again and is shown broken (every leaf expired, /readyz never answers: its serving certificate has
// expired); `render-static renew` runs on the render's directory, its update is copied into the node and ONE
// command, `aio-update recover`, brings it back. Then: /readyz through the node's localhost kubeconfig, every API
// address serving a certificate of the update, the ConfigMap and the Secret read back (the Secret through
// kube-apiserver's encryption), the leases of kube-controller-manager, kube-scheduler and the node renewed, the
// kubelet on a client certificate it renewed through a CSR the rendered approver approved (nothing else approves
// CSRs here), and no leaf the node uses expired.
//
// The CSR approver does not run before the power-off: the kubelet then holds no certificate that
// kube-controller-manager signed for 30 days (cluster-signing-duration), only the render's; on a real node off
// past --cert-validity those 30-day certificates have expired too, which this test cannot wait for.

// powerOffLeaf is the leaf lifetime of the render: certs.MinLeafValidity and a minute. Nothing here waits for a
// component to reload a certificate while it runs (recover restarts them all), so the floor's other reasons do
// not apply; the renewed leaves live as long from the renew, and the recovery and the checks must end before.
const powerOffLeaf = 6 * time.Minute

func init() { upstreamRenderArgs["poweroff"] = []string{"--cert-validity", powerOffLeaf.String()} }

// powerOffState is what the boot before the power-off leaves for the one after it.
type powerOffState struct {
	ConfigMap string    `json:"configMap"` // data of configmap default/e2e-poweroff
	Secret    string    `json:"secret"`    // data of secret default/e2e-poweroff
	Expired   time.Time `json:"expired"`   // when the last leaf on the node expires
	Leaves    int       `json:"leaves"`
}

func powerOffStatePath(spec *innerSpec) string { return filepath.Join(spec.Work, "poweroff.json") }

func TestUpstreamE2EPowerOff(t *testing.T) {
	spec := prepareIPv4Case(t, "poweroff")
	tm := newTimings("upstream/poweroff (outer)")
	spec.Phase = "poweroff"
	tm.step("first-boot", func() { runInner(t, spec, 15*time.Minute) })
	var st powerOffState
	if err := readYAML(powerOffStatePath(spec), &st); err != nil {
		t.Fatalf("the first boot left no state: %v", err)
	}
	wait := time.Until(st.Expired) + 10*time.Second
	if wait > powerOffLeaf+time.Minute {
		t.Fatalf("the last leaf expires in %s, later than powerOffLeaf (%s) allows", wait, powerOffLeaf)
	}
	t.Logf("the node is off; waiting %s, until 10s past the expiry of the last of its %d leaf certificates (%s)", wait.Round(time.Second), st.Leaves, st.Expired.UTC().Format(time.RFC3339))
	off := time.Now()
	tm.step("off", func() { time.Sleep(max(wait, 0)) })
	t.Logf("FIGURE poweroff: the node was off for %s, every leaf expired; the recover boot follows", time.Since(off).Round(time.Second))
	spec.Phase = "recover"
	tm.step("recover", func() { runInner(t, spec, 20*time.Minute) })
	t.Log(tm.String())
}

// nodeLeaves are the leaf certificates on the node: /etc/kubernetes and the kubelet's (kubeconfig, pki).
func nodeLeaves(t *testing.T) []FoundCert {
	t.Helper()
	var all []FoundCert
	for _, p := range []string{"/etc/kubernetes", "/var/lib/kubelet/kubeconfig", "/var/lib/kubelet/pki"} {
		cs, err := CertificatesIn(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatalf("%s: %v", p, err)
		}
		all = append(all, cs...)
	}
	return Leaves(all)
}

// innerPowerOff: the boot before the power-off (no CSR approver: see above).
func innerPowerOff(t *testing.T, spec *innerSpec) {
	tm := newTimings("upstream/poweroff (first boot)")
	n := bootNode(t, spec, tm)
	cs, _ := clients(t, spec.Kubeconfig)
	ak := startAiokube(t, n)
	tm.add("kubelet->readyz", waitAPI(t, n, cs, 4*time.Minute))
	tm.add("kubelet->mirror-pods-ready", waitMirrorPods(t, n, cs, 4*time.Minute))
	if log, err := ak.wait(t, 8*time.Minute); err != nil {
		t.Fatalf("aiokube: %v\n%s", err, log)
	}
	aiokubeFigures(t, n, tm)
	t.Logf("TIMELINE %s (seconds after the kubelet started):%s", n.phase(), n.timeline())
	st := powerOffState{ConfigMap: randomHex(), Secret: randomHex()}
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "e2e-poweroff"},
		Data: map[string]string{"v": st.ConfigMap}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "e2e-poweroff"},
		StringData: map[string]string{"v": st.Secret}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	checkSecretEncrypted(t, cs)
	leaves := nodeLeaves(t)
	for _, c := range leaves {
		if c.Cert.NotAfter.After(st.Expired) {
			st.Expired = c.Cert.NotAfter
		}
		if c.Cert.NotAfter.Sub(c.Cert.NotBefore) > powerOffLeaf+6*time.Minute {
			t.Errorf("%s lives longer than the render's leaves (%s): the power-off would not expire it", c.Path, Describe(c.Cert))
		}
	}
	st.Leaves = len(leaves)
	data, _ := json.Marshal(st)
	if err := os.WriteFile(powerOffStatePath(spec), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote configmap and secret default/e2e-poweroff; %d leaf certificates on the node, the last expires %s", len(leaves), st.Expired.UTC().Format(time.RFC3339))
}

func randomHex() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// innerRecover: the boot after the power-off, the renewal, the one command, the checks.
func innerRecover(t *testing.T, spec *innerSpec) {
	tm := newTimings("upstream/poweroff (recover)")
	var st powerOffState
	if err := readYAML(powerOffStatePath(spec), &st); err != nil {
		t.Fatal(err)
	}
	n := bootNode(t, spec, tm)
	startCSRApprover(t, n)
	local := updateKubeconfig(t)
	cs, _ := clients(t, local)

	// Broken: every leaf on the node has expired, and the API does not answer.
	leaves := nodeLeaves(t)
	if exp := Expired(leaves, time.Now()); len(exp) != len(leaves) || len(leaves) == 0 {
		t.Fatalf("only %d of the %d leaf certificates on the node have expired", len(exp), len(leaves))
	}
	t.Logf("all %d leaf certificates on the node have expired (the last at %s)", len(leaves), st.Expired.UTC().Format(time.RFC3339))
	var lastErr error
	tm.step("broken", func() {
		deadline := time.Now().Add(45 * time.Second)
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			b, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			cancel()
			if err == nil && string(b) == "ok" {
				t.Fatalf("/readyz answered ok %s after the kubelet started, with every certificate expired", time.Since(n.KubeletStart))
			}
			if err != nil {
				lastErr = err
			}
			time.Sleep(time.Second)
		}
	})
	t.Logf("broken as expected: 45 s after the kubelet started, /readyz still fails: %v", lastErr)
	kubeletBefore, err := CertificatesIn("/var/lib/kubelet/kubeconfig")
	if err != nil || len(kubeletBefore) != 1 {
		t.Fatalf("the kubelet's render-time client certificate: %d found, %v", len(kubeletBefore), err)
	}

	renewed := renewAndCopy(t, spec, n, tm, "renew")
	var recovered time.Time
	tm.step("recover", func() {
		start := time.Now()
		out, err := RunLogged(context.Background(), 15*time.Minute, filepath.Join(n.LogDir(), "aio-update.log"), nil, UpdateCommand, "recover", updateDir)
		t.Logf("%s recover %s:\n%s", UpdateCommand, updateDir, out)
		if err != nil {
			t.Fatal(err)
		}
		recovered = time.Now()
		n.event("aio-update recover done")
		t.Logf("FIGURE recover: aio-update recover took %.1fs", recovered.Sub(start).Seconds())
	})
	// The localhost kubeconfig's client certificate is the update's now: read it again.
	cs, _ = clients(t, local)
	tm.add("recover->readyz", waitReadyz(t, n, cs, 4*time.Minute))
	tm.step("checks", func() {
		checkHealth(t, cs)
		checkServedUpdate(t, spec, renewed)
		ctx := context.Background()
		cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "e2e-poweroff", metav1.GetOptions{})
		if err != nil || cm.Data["v"] != st.ConfigMap {
			t.Errorf("the configmap written before the power-off is gone or changed: %v", err)
		}
		sec, err := cs.CoreV1().Secrets("default").Get(ctx, "e2e-poweroff", metav1.GetOptions{})
		if err != nil || string(sec.Data["v"]) != st.Secret {
			t.Errorf("the secret written before the power-off does not read back (encryption): %v", err)
		} else {
			t.Log("the configmap and the secret written before the power-off read back")
		}
		checkLeasesAdvance(t, cs, recovered, "kube-system", "kube-controller-manager", "kube-scheduler")
		checkLeasesAdvance(t, cs, recovered, "kube-node-lease", n.NodeName)
		waitKubeletRotated(t)
		checkKubeletClientRenewed(t, cs, n, &renewBefore{kubelet: &kubeletBefore[0]})
		checkNothingExpired(t, n)
	})
	t.Logf("TIMELINE %s (seconds after the kubelet started):%s", n.phase(), n.timeline())
	t.Log(tm.String())
}

// checkServedUpdate: each API address serves a certificate of the update (by fingerprint), valid now.
func checkServedUpdate(t *testing.T, spec *innerSpec, renewed []FoundCert) {
	t.Helper()
	byFingerprint := map[string]*FoundCert{}
	for i := range renewed {
		byFingerprint[Fingerprint(renewed[i].Cert)] = &renewed[i]
	}
	for _, kc := range apiKubeconfigs(t, spec) {
		addr, name := apiAddress(t, kc)
		served, err := ServedCertificate(context.Background(), addr, name, nil)
		switch {
		case err != nil:
			t.Errorf("TLS to %s: %v", addr, err)
		case byFingerprint[Fingerprint(served)] == nil:
			t.Errorf("%s (%s) serves %s, which is in no file of the update", addr, name, Describe(served))
		case !time.Now().Before(served.NotAfter):
			t.Errorf("%s (%s) serves the expired %s", addr, name, Describe(served))
		default:
			t.Logf("%s (%s) serves the renewed %s (%s)", addr, name, Describe(served), byFingerprint[Fingerprint(served)].Path)
		}
	}
}

// waitKubeletRotated waits (bounded) until the kubelet's current client certificate lives longer than any the
// render made (kube-controller-manager signs for 30 days): it renewed it through a CSR.
func waitKubeletRotated(t *testing.T) {
	t.Helper()
	err := poll(context.Background(), 3*time.Minute, 2*time.Second, func(context.Context) (bool, error) {
		cur, err := CertificatesIn(kubeletCurrentCert)
		if err != nil || len(Leaves(cur)) == 0 {
			return false, err
		}
		return Leaves(cur)[0].Cert.NotAfter.After(time.Now().Add(time.Hour)), nil
	})
	if err != nil {
		t.Errorf("the kubelet did not renew its client certificate: %v", err)
	}
}
