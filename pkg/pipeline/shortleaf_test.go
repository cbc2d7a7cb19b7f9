package pipeline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/inventory"
)

// TestRenderShortLeaves: a render with leaves of 7 minutes (tests and labs) converges; every leaf certificate it
// issues lives 7 minutes (the kubelet's and the approver's, signed like kube-controller-manager does, 7 minutes
// after the render plus 5 backdated) while signers keep ten years; the summary names the earliest expiry ~7
// minutes out and warns; rendering again from the state a moment later rotates nothing (library-go refreshes at
// 4/5 of the validity): aio.ign is byte-identical.
func TestRenderShortLeaves(t *testing.T) {
	testtools.Long(t, "renders twice")
	ctx := context.Background()
	const leaf = 7 * time.Minute
	dir := filepath.Join(t.TempDir(), "aio")
	o := Options{InstallConfig: repo("examples/sno/install-config.yaml"), NodeIP: "192.168.126.10", NodeName: DefaultNodeName,
		Dir: dir, CertValidity: leaf}
	start := time.Now()
	s, err := Render(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	if lo, hi := start.Add(leaf-2*time.Second), end.Add(leaf); s.EarliestExpiry.Before(lo) || s.EarliestExpiry.After(hi) {
		t.Errorf("earliest expiry %s (%s), want %s after the render", s.EarliestExpiry, s.EarliestExpirySubject, leaf)
	}
	var out, warn bytes.Buffer
	s.Print(&out, dir)
	s.PrintWarnings(&warn)
	if !strings.Contains(warn.String(), "warning: {certValidity} 7m0s") || strings.Contains(out.String(), "warning") {
		t.Errorf("the summary does not warn about 7-minute leaves on its own stream:\n%s\nwarnings:\n%s", out.String(), warn.String())
	}
	leaves, signers := 0, 0
	for _, c := range certsByName(t, dir) {
		life := c.NotAfter.Sub(c.NotBefore)
		switch {
		case c.IsCA:
			signers++
			if life < certs.MinSignerValidity-time.Hour {
				t.Errorf("%s: a signer of %s", c.Name, life)
			}
		case strings.Contains(c.Subject, "system:node:") || strings.Contains(c.Subject, "node-csr-approver"):
			leaves++ // signed as kube-controller-manager signs: backdated 5 minutes, ends 7 minutes after signing
			if life < leaf+5*time.Minute-2*time.Second || life > leaf+5*time.Minute+time.Second {
				t.Errorf("%s (%s) lives %s, want %s + 5m backdated", c.Name, c.Subject, life, leaf)
			}
		default:
			leaves++
			if life < leaf-2*time.Second || life > leaf+2*time.Second {
				t.Errorf("%s (%s) lives %s, want %s", c.Name, c.Subject, life, leaf)
			}
		}
	}
	if leaves < 20 || signers < 5 {
		t.Errorf("%d leaves and %d signers found", leaves, signers)
	}
	first, err := os.ReadFile(filepath.Join(dir, "aio.ign"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Render(ctx, o); err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(filepath.Join(dir, "aio.ign"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("rendering again from the state %s after the first render changed aio.ign (a leaf rotated early)", time.Since(start).Round(time.Second))
	}
}

// certsByName is every certificate of a render directory, as `render-static certs` lists them.
func certsByName(t *testing.T, dir string) []*inventory.Certificate {
	t.Helper()
	inv, err := inventory.Read(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return inv.All() // the admin kubeconfig's too: a leaf of --cert-validity
}
