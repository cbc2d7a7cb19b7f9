package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/pkg/inventory"
)

// TestCertsAgreesWithSummary renders the example, then lists its certificates from the render directory, from
// aio.ign and from rootfs/ as a node root: all three list the same certificates, the first to expire is the
// one the render summary names (by what it is, not by CN), and --expiring-within exits 1 exactly when a
// certificate expires within the window.
func TestCertsAgreesWithSummary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "aio")
	stdout := renderExample(t, dir)
	m := regexp.MustCompile(`earliest expiry:\s+(\S+) \((.*)\)\n`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("summary has no earliest expiry:\n%s", stdout)
	}
	summaryAt, summaryName := m[1], m[2]

	list := func(args ...string) *inventory.Inventory {
		t.Helper()
		code, out, stderr := runCLI(append([]string{"certs", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("certs %v: exit %d: %s", args, code, stderr)
		}
		var inv inventory.Inventory
		if err := json.Unmarshal([]byte(out), &inv); err != nil {
			t.Fatalf("certs %v: %v", args, err)
		}
		return &inv
	}
	fromDir := list("--dir", dir)
	first := fromDir.Certificates[0]
	if first.Name != summaryName || first.NotAfter.Format(time.RFC3339) != summaryAt {
		t.Errorf("summary names %s at %s; certs lists first %s at %s", summaryName, summaryAt, first.Name, first.NotAfter.Format(time.RFC3339))
	}
	if strings.HasPrefix(summaryName, "CN=") || !regexp.MustCompile(`^(secret|configmap|file|CA in) `).MatchString(summaryName) {
		t.Errorf("summary names the earliest expiry %q, not by where it lives", summaryName)
	}
	names := func(inv *inventory.Inventory) string {
		var n []string
		for _, c := range inv.Certificates {
			n = append(n, c.Name+" "+c.Fingerprint)
		}
		return strings.Join(n, "\n")
	}
	if got, want := names(list("--ignition", filepath.Join(dir, "aio.ign"))), names(fromDir); got != want {
		t.Errorf("certs --ignition differs from --dir:\n%s\nwant\n%s", got, want)
	}
	if got, want := names(list("--root", filepath.Join(dir, "rootfs"))), names(fromDir); got != want {
		t.Errorf("certs --root differs from --dir:\n%s\nwant\n%s", got, want)
	}

	// Every serving certificate of kube-apiserver is there, named by its secret, with its SANs and signer.
	lb := findCert(fromDir, "secret openshift-kube-apiserver/localhost-serving-cert-certkey")
	if lb == nil || lb.Signer != "secret openshift-kube-apiserver-operator/localhost-serving-signer" || len(lb.SANs) == 0 || lb.KeyType != "RSA 2048" {
		t.Errorf("localhost-serving-cert-certkey: %+v", lb)
	}
	if lb != nil && len(lb.Locations) < 2 {
		t.Errorf("localhost-serving-cert-certkey: only in %v; want its secret and its file on the node", lb.Locations)
	}

	left := time.Until(first.NotAfter)
	if code, _, _ := runCLI("certs", "--dir", dir, "--expiring-within", (left - time.Hour).String()); code != 0 {
		t.Errorf("--expiring-within %s (before the first expiry): exit %d, want 0", left-time.Hour, code)
	}
	code, _, stderr := runCLI("certs", "--dir", dir, "--expiring-within", (left + time.Hour).String())
	if code != 1 || !strings.Contains(stderr, first.Name) {
		t.Errorf("--expiring-within %s (past the first expiry): exit %d, stderr %q; want 1 naming %s", left+time.Hour, code, stderr, first.Name)
	}
	if code, _, stderr := runCLI("certs", "--dir", dir, "--root", "/"); code != 1 || !strings.Contains(stderr, "only one") {
		t.Errorf("two sources: exit %d %q", code, stderr)
	}
}

func findCert(inv *inventory.Inventory, name string) *inventory.Certificate {
	for _, c := range inv.Certificates {
		if c.Name == name {
			return c
		}
	}
	return nil
}
