package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/node"
)

// expiredCAOn is when the trust bundle's expired CA (userCAs) expired, as a distribution bundle's CAs did.
var expiredCAOn = time.Date(2023, 3, 3, 12, 0, 0, 0, time.UTC)

// userCAs are a trust bundle of n self-signed CAs made with crypto/x509 (one key, each its own serial and
// signature): the first expired at expiredCAOn, the others live twenty years. Its subjects, in order.
func userCAs(t *testing.T, n int) (bundle string, subjects []string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		notAfter := time.Now().Add(20 * 365 * 24 * time.Hour).UTC().Truncate(time.Second)
		cn := "Test Root CA " + string(rune('A'+i%26)) + big.NewInt(int64(i)).String()
		if i == 0 {
			notAfter, cn = expiredCAOn, "Expired Test Root CA"
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(1000 + i)), Subject: pkix.Name{CommonName: cn, Organization: []string{"Example Trust"}},
			NotBefore: notAfter.Add(-10 * 365 * 24 * time.Hour), NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, c.Subject.String())
		b.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	}
	return b.String(), subjects
}

// withTrustBundle writes the bundled example's install-config with bundle as its additionalTrustBundle (policy
// Always: the proxy trusts it too) into dir, and returns its path.
func withTrustBundle(t *testing.T, dir, bundle string) string {
	t.Helper()
	raw, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Write(raw)
	b.WriteString("additionalTrustBundlePolicy: Always\nadditionalTrustBundle: |\n")
	for _, l := range strings.Split(strings.TrimRight(bundle, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	p := filepath.Join(dir, "install-config.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUserCAsAndAdminKubeconfigApart renders the example with a trust bundle holding a CA that expired in 2023
// and one that lives on, with 10-minute leaves, then renews every leaf. Neither what renew cannot renew drives an
// expiry alarm: the user CAs are listed apart (certs' userCAs, never counted by --expiring-within, never the
// summary's earliest expiry or "off at most until"), the expired CA gets a warning naming its subject, and the
// admin kubeconfig's client certificate (never renewed) has a line of its own, in the summary and in renew's
// report, saying what to use after it; after the renew it is the certificate that expires first, and
// --expiring-within past it, but before every renewed leaf, still exits 0 and says it cannot be renewed.
func TestUserCAsAndAdminKubeconfigApart(t *testing.T) {
	work := t.TempDir()
	bundle, subjects := userCAs(t, 2)
	ic := withTrustBundle(t, work, bundle)
	dir := filepath.Join(work, "aio")
	code, stdout, stderr := runCLI("--install-config", ic, "--node-ip", "192.168.126.10", "--dir", dir, "--cert-validity", "10m")
	if code != 0 {
		t.Fatalf("render: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "warning: ") || !strings.Contains(stderr, subjects[0]) || !strings.Contains(stderr, expiredCAOn.Format(time.RFC3339)) {
		t.Errorf("no warning naming the expired CA %s (expired %s):\n%s", subjects[0], expiredCAOn.Format(time.RFC3339), stderr)
	}
	if strings.Contains(stderr, subjects[1]) {
		t.Errorf("a warning names the CA that has not expired, %s:\n%s", subjects[1], stderr)
	}

	inv := certsJSON(t, "--dir", dir)
	if len(inv.UserCAs) != 2 {
		t.Fatalf("certs lists %d user CAs, want the bundle's 2: %+v", len(inv.UserCAs), inv.UserCAs)
	}
	for i, c := range inv.UserCAs {
		if c.Subject != subjects[i] && c.Subject != subjects[1-i] {
			t.Errorf("user CA %s is not one of the bundle's", c.Subject)
		}
	}
	for _, c := range inv.Certificates {
		if strings.Contains(c.Name, "user-ca-bundle") || c.Subject == subjects[0] || c.Subject == subjects[1] {
			t.Errorf("the user CA %s (%s) is counted among the certificates in use", c.Name, c.Subject)
		}
	}
	admin := inv.AdminKubeconfig
	if admin == nil || !strings.Contains(admin.Subject, "system:admin") {
		t.Fatalf("certs lists no admin kubeconfig client certificate: %+v", admin)
	}
	for _, c := range inv.Certificates {
		if c.Fingerprint == admin.Fingerprint {
			t.Errorf("the admin kubeconfig's certificate is counted among those renew renews: %s", c.Name)
		}
	}

	// The summary: the earliest expiry and "off at most until" are the cluster's, the user CAs and the admin
	// kubeconfig each their own line.
	first := inv.Certificates[0]
	for _, re := range []string{`earliest expiry:\s+(\S+) \((.*)\)\n`, `off at most until (\S+) \((.*)\):`} {
		m := regexp.MustCompile(re).FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("summary lacks %s:\n%s", re, stdout)
		}
		if strings.HasPrefix(m[1], "2023") || strings.Contains(m[2], "user-ca-bundle") || strings.Contains(m[2], "auth/kubeconfig") {
			t.Errorf("summary %q names %s at %s: a certificate render-static does not renew", re, m[2], m[1])
		}
	}
	if m := regexp.MustCompile(`earliest expiry:\s+(\S+) \((.*)\)\n`).FindStringSubmatch(stdout); m[2] != first.Name {
		t.Errorf("summary's earliest expiry %s, certs' first %s", m[2], first.Name)
	}
	adminLine := regexp.MustCompile(`(?m)^  admin kubeconfig:\s+(\S+) .*$`).FindStringSubmatch(stdout)
	if adminLine == nil || adminLine[1] != admin.NotAfter.Format(time.RFC3339) || !strings.Contains(adminLine[0], node.LocalhostKubeconfig) ||
		!strings.Contains(adminLine[0], "not renew") {
		t.Errorf("summary lacks the admin kubeconfig's line (%s, not renewed, then %s):\n%s", admin.NotAfter.Format(time.RFC3339), node.LocalhostKubeconfig, stdout)
	}
	if !regexp.MustCompile(`(?m)^  user CAs:\s+2 .*additionalTrustBundle.*$`).MatchString(stdout) {
		t.Errorf("summary lacks the user CAs' line:\n%s", stdout)
	}
	code, table, stderr := runCLI("certs", "--dir", dir)
	if code != 0 || !strings.Contains(table, inventory.UserCAsHeading) || !strings.Contains(table, inventory.AdminHeading) {
		t.Errorf("certs: exit %d; want the headings %q and %q:\n%s%s", code, inventory.UserCAsHeading, inventory.AdminHeading, table, stderr)
	}
	if code, _, stderr := runCLI("certs", "--dir", dir, "--expiring-within", "5m"); code != 0 {
		t.Errorf("--expiring-within 5m with a user CA expired in 2023 and leaves of 10 minutes: exit %d: %s", code, stderr)
	}

	// After renewing every leaf the admin kubeconfig is the first to expire; renew says it cannot renew it.
	time.Sleep(2 * time.Second)
	code, renewOut, stderr := runCLI("renew", "--dir", dir, "--force")
	if code != 0 {
		t.Fatalf("renew: exit %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`earliest expiry:\s+\S+ \((.*)\)\n`).FindStringSubmatch(renewOut)
	if m == nil || strings.Contains(m[1], "auth/kubeconfig") || strings.Contains(m[1], "user-ca-bundle") {
		t.Errorf("renew's earliest expiry names what it does not renew:\n%s", renewOut)
	}
	if !regexp.MustCompile(`(?m)^  admin kubeconfig:\s+` + regexp.QuoteMeta(admin.NotAfter.Format(time.RFC3339)) + ` .*not renew.*` + regexp.QuoteMeta(node.LocalhostKubeconfig)).MatchString(renewOut) {
		t.Errorf("renew's report lacks the admin kubeconfig's line:\n%s", renewOut)
	}
	inv = certsJSON(t, "--dir", dir)
	if inv.AdminKubeconfig == nil || inv.AdminKubeconfig.Fingerprint != admin.Fingerprint {
		t.Fatalf("after renew the admin kubeconfig is %+v, want the one rendered", inv.AdminKubeconfig)
	}
	if !inv.Certificates[0].NotAfter.After(admin.NotAfter) {
		t.Fatalf("after renew --force %s (%s) expires before the admin kubeconfig (%s)", inv.Certificates[0].Name, inv.Certificates[0].NotAfter, admin.NotAfter)
	}
	end := admin.NotAfter.Add(inv.Certificates[0].NotAfter.Sub(admin.NotAfter) / 2)
	code, _, stderr = runCLI("certs", "--dir", dir, "--expiring-within", time.Until(end).Round(time.Millisecond).String())
	if code != 0 || !strings.Contains(stderr, "admin kubeconfig") || !strings.Contains(stderr, node.LocalhostKubeconfig) {
		t.Errorf("--expiring-within past the admin kubeconfig only: exit %d, want 0 and a note that renew cannot renew it: %q", code, stderr)
	}
}
