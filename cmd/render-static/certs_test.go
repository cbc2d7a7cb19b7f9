package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/renew"
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

	fromDir := certsJSON(t, "--dir", dir)
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
	if got, want := names(certsJSON(t, "--ignition", filepath.Join(dir, "aio.ign"))), names(fromDir); got != want {
		t.Errorf("certs --ignition differs from --dir:\n%s\nwant\n%s", got, want)
	}
	if got, want := names(certsJSON(t, "--root", filepath.Join(dir, "rootfs"))), names(fromDir); got != want {
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

// certsJSON is `certs -o json` of a source.
func certsJSON(t *testing.T, src ...string) *inventory.Inventory {
	t.Helper()
	code, out, stderr := runCLI(append([]string{"certs", "-o", "json"}, src...)...)
	if code != 0 {
		t.Fatalf("certs %v: exit %d: %s", src, code, stderr)
	}
	var inv inventory.Inventory
	if err := json.Unmarshal([]byte(out), &inv); err != nil {
		t.Fatalf("certs %v: %v", src, err)
	}
	return &inv
}

func findCert(inv *inventory.Inventory, name string) *inventory.Certificate {
	for _, c := range inv.Certificates {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// TestCertsSetsRetiredCopiesApart: after `renew --force` of a render with 10-minute leaves, the revision-1 copies
// of the renewed certificates (etcd-all-certs-1, etcd-client-1, ...; on the node also the -pod-1 directories it
// keeps for a rollback) belong to no running static pod. The render directory and aio.ign no longer carry them
// (export.PruneRevisions: only the state keeps them); a node root updated in place does, and certs lists them
// apart there, never in use. From all three, --expiring-within counts only certificates in use; renew's earliest
// expiry names one in use. What moved comes from the update's components (update.json), a retired copy
// is an object <name>-<from> in a moved component's namespace or a file of its <pod>-<from> directory.
func TestCertsSetsRetiredCopiesApart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "aio")
	renderExample(t, dir, "--cert-validity", "10m")
	nodeRoot := filepath.Join(t.TempDir(), "node")
	if err := renew.CopyTree(filepath.Join(dir, "rootfs"), nodeRoot); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the renewed leaves expire whole seconds after the originals
	code, renewOut, stderr := runCLI("renew", "--dir", dir, "--force")
	if code != 0 {
		t.Fatalf("renew: exit %d: %s", code, stderr)
	}
	// The node after the update: the new files over the old ones, the old revision directories kept.
	if err := renew.CopyTree(filepath.Join(dir, "rootfs"), nodeRoot); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, renew.UpdateDir, "update.json"))
	if err != nil {
		t.Fatal(err)
	}
	var upd renew.Update
	if err := json.Unmarshal(raw, &upd); err != nil {
		t.Fatal(err)
	}
	retired := func(l inventory.Location) bool {
		for _, c := range upd.Components {
			if c.To == c.From {
				continue
			}
			if l.Kind == "file" && strings.HasPrefix(l.Path, fmt.Sprintf("%s/%s-%d/", export.ResourceDir, strings.TrimSuffix(c.Manifest, ".yaml"), c.From)) {
				return true
			}
			if l.Kind != "file" && l.Namespace == c.Namespace && strings.HasSuffix(l.Name, fmt.Sprintf("-%d", c.From)) {
				return true
			}
		}
		return false
	}
	earliest := regexp.MustCompile(`earliest expiry:\s+\S+ \((.*)\)\n`).FindStringSubmatch(renewOut)
	if earliest == nil {
		t.Fatalf("renew prints no earliest expiry:\n%s", renewOut)
	}
	// The node root first: its retired copies' expiry bounds the window for the render's sources too.
	var lastRetired time.Time
	for _, src := range [][]string{{"--root", nodeRoot}, {"--dir", dir}, {"--ignition", filepath.Join(dir, "aio.ign")}} {
		inv := certsJSON(t, src...)
		if src[0] != "--root" && len(inv.Unused) > 0 {
			t.Errorf("certs %v lists %d certificates apart; the render carries only the revisions its static pods run", src, len(inv.Unused))
		}
		if src[0] == "--root" && len(inv.Unused) < 5 {
			t.Errorf("certs %v lists %d certificates apart; want the revision-1 copies of etcd's three node certificates, etcd-client and localhost-recovery-serving-certkey", src, len(inv.Unused))
		}
		for _, c := range inv.Unused {
			for _, l := range c.Locations {
				if !retired(l) {
					t.Errorf("certs %v: %s is listed as not in use, but lives in %s", src, c.Name, l)
				}
			}
			if c.NotAfter.After(lastRetired) {
				lastRetired = c.NotAfter
			}
		}
		renewedSoonest := time.Time{}
		for _, c := range inv.Certificates {
			if !slices.ContainsFunc(c.Locations, func(l inventory.Location) bool { return !retired(l) }) {
				t.Errorf("certs %v: %s is listed in use, but lives only in retired copies %v", src, c.Name, c.Locations)
			}
			if !c.IsCA && c.NotBefore.After(lastRetired.Add(-10*time.Minute)) && (renewedSoonest.IsZero() || c.NotAfter.Before(renewedSoonest)) {
				renewedSoonest = c.NotAfter
			}
			if c.Name == earliest[1] && src[0] == "--dir" && c != inv.Certificates[0] {
				t.Errorf("renew's earliest expiry %s is not the first certificate in use (%s)", c.Name, inv.Certificates[0].Name)
			}
		}
		if !slices.ContainsFunc(inv.Certificates, func(c *inventory.Certificate) bool { return c.Name == earliest[1] }) {
			t.Errorf("renew's earliest expiry names %q, not a certificate in use", earliest[1])
		}
		// A window past every retired copy but before the renewed leaves: only what is in use and expires in it
		// is counted.
		if !renewedSoonest.After(lastRetired) {
			t.Fatalf("the renewed leaves (from %s) do not outlive the retired copies (until %s)", renewedSoonest, lastRetired)
		}
		end := lastRetired.Add(renewedSoonest.Sub(lastRetired) / 2)
		want := 0
		for _, c := range inv.Certificates {
			if c.NotAfter.Before(end) {
				want++
			}
		}
		code, _, stderr = runCLI(append([]string{"certs", "--expiring-within", time.Until(end).Round(time.Millisecond).String()}, src...)...)
		got := 0
		if m := regexp.MustCompile(`error: (\d+) certificate`).FindStringSubmatch(stderr); m != nil {
			got, _ = strconv.Atoi(m[1])
		}
		if (code == 1) != (want > 0) || got != want {
			t.Errorf("certs %v --expiring-within (until %s): exit %d, %q; want %d certificates in use", src, end.Format(time.RFC3339), code, stderr, want)
		}
	}
}

// TestCertsWithoutRender: certs where there is no render says so, and what to do, not a system call's error.
func TestCertsWithoutRender(t *testing.T) {
	t.Chdir(t.TempDir())
	code, _, stderr := runCLI("certs")
	for _, want := range []string{"no render in aio", "render-static --install-config", "--dir", "--ignition", "--root"} {
		if code != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, "stat ") {
			t.Errorf("certs with no aio: exit %d, stderr %q; want 1 and %q", code, stderr, want)
		}
	}
	for _, flag := range []string{"--dir", "--ignition", "--root"} {
		code, _, stderr := runCLI("certs", flag, "nosuch")
		if code != 1 || !strings.Contains(stderr, flag+" nosuch: no such file or directory") || strings.Contains(stderr, "stat ") {
			t.Errorf("certs %s nosuch: exit %d, stderr %q", flag, code, stderr)
		}
	}
}
