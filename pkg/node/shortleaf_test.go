package node

import (
	"testing"
	"time"

	"github.com/render-static/render-static/pkg/certs"
)

// TestCSRBoundaries: the render signs the node's client certificates with kube-controller-manager's boundaries —
// backdated 5 minutes; a long-lived certificate ends its validity after that backdated start, a short-lived one
// (under 8h) its validity after signing; never after the signer.
func TestCSRBoundaries(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	far := now.Add(10 * 365 * 24 * time.Hour)
	for _, c := range []struct {
		validity          time.Duration
		signerNotAfter    time.Time
		wantStart, wantTo time.Time
	}{
		{365 * 24 * time.Hour, far, now.Add(-5 * time.Minute), now.Add(365*24*time.Hour - 5*time.Minute)},
		{8 * time.Hour, far, now.Add(-5 * time.Minute), now.Add(8*time.Hour - 5*time.Minute)},
		{8*time.Hour - time.Second, far, now.Add(-5 * time.Minute), now.Add(8*time.Hour - time.Second)},
		{7 * time.Minute, far, now.Add(-5 * time.Minute), now.Add(7 * time.Minute)},
		{365 * 24 * time.Hour, now.Add(time.Hour), now.Add(-5 * time.Minute), now.Add(time.Hour)},
	} {
		nb, na := csrBoundaries(now, c.validity, c.signerNotAfter)
		if !nb.Equal(c.wantStart) || !na.Equal(c.wantTo) {
			t.Errorf("validity %s, signer until %s: [%s, %s], want [%s, %s]", c.validity, c.signerNotAfter.Format(time.RFC3339),
				nb.Format(time.RFC3339), na.Format(time.RFC3339), c.wantStart.Format(time.RFC3339), c.wantTo.Format(time.RFC3339))
		}
	}
}

// TestNodeClientCertificateShortLeaf: with leaves of 7 minutes the kubelet's and the approver's render-time
// certificates are valid for 7 minutes from the render (not 2, as a backdated end would leave them), so the
// kubelet can still renew its own at 70-90 % of its life; and a second pass signs nothing again.
func TestNodeClientCertificateShortLeaf(t *testing.T) {
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	lt, err := certs.NewLifetimes(7 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f.in.Lifetimes = lt
	start := time.Now()
	f.converge(t)
	tr := f.tree(t)
	for _, path := range []string{KubeletKubeconfigPath, ApproverKubeconfig} {
		leaf, _, _ := kubeconfigClientCert(t, fileOf(t, tr, path).Contents)
		if min, max := start.Add(7*time.Minute-time.Second), time.Now().Add(7*time.Minute); leaf.NotAfter.Before(min) || leaf.NotAfter.After(max) {
			t.Errorf("%s: not after %s, want 7m after the render (%s..%s)", path, leaf.NotAfter, min, max)
		}
		if back := start.Sub(leaf.NotBefore); back < 5*time.Minute-time.Second || back > 5*time.Minute+time.Second {
			t.Errorf("%s: not before %s, want 5m before the render", path, leaf.NotBefore)
		}
		// The kubelet's certificate manager renews at 70-90 % of NotBefore..NotAfter: that must come after the
		// render and leave time before the end.
		life := leaf.NotAfter.Sub(leaf.NotBefore)
		if earliest := leaf.NotBefore.Add(life * 7 / 10); !earliest.After(start) {
			t.Errorf("%s: the kubelet would renew at once (%s, rendered %s)", path, earliest, start)
		}
	}
	before := len(f.c.Journal())
	f.converge(t)
	if after := len(f.c.Journal()); after != before {
		t.Errorf("a settled node side with short leaves wrote %d more times", after-before)
	}
}
