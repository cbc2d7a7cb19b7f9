package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/pkg/inventory"
)

// TestRenewCLI: renew exits 1 with a message naming the field on bad input (no state in --dir, a negative
// --within, --force with --within, an argument) and leaves the directory untouched; on a render it exits 0 and
// reports what it renewed, the revisions, the new earliest expiry and where the update for the node is.
func TestRenewCLI(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"renew", "--dir", empty}, "--dir: " + empty + " holds no render state"},
		{[]string{"renew", "--dir", empty, "--within", "-1h"}, "--within: -1h0m0s is negative"},
		{[]string{"renew", "--dir", empty, "--within", "1h", "--force"}, "give one of --force and --within"},
		{[]string{"renew", "--dir", empty, "extra"}, "unknown command \"extra\""},
		{[]string{"renew", "--within", "soon"}, "invalid argument \"soon\""},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("a failed renew wrote into %s", empty)
	}

	dir := filepath.Join(t.TempDir(), "aio")
	renderExample(t, dir)
	before := certsJSON(t, "--dir", dir)
	code, stdout, stderr := runCLI("renew", "--dir", dir, "--force")
	if code != 0 {
		t.Fatalf("renew --force: exit %d: %s", code, stderr)
	}
	checkRenewNamesAsCerts(t, stdout, before, certsJSON(t, "--dir", dir))
	for _, want := range []string{"certificates renewed", "leaf", "-> 2", "earliest expiry:", "update for the node: " + dir + "/update", "aio-update apply"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("renew --force output lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "update", "update.json")); err != nil {
		t.Errorf("no update.json: %v", err)
	}
}

var renewalLine = regexp.MustCompile(`^  (leaf|signer) +(.+?) +(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) -> `)

// checkRenewNamesAsCerts: renew names and counts what it renewed as certs does: one line per certificate, named as
// certs names it, and those are exactly the certificates in use after renew that were not there before (by
// fingerprint); the count in the first line is the number of lines; the not-after columns are aligned however long
// the names.
func checkRenewNamesAsCerts(t *testing.T, out string, before, after *inventory.Inventory) {
	t.Helper()
	old := map[string]bool{}
	for _, c := range slices.Concat(before.Certificates, before.Unused) {
		old[c.Fingerprint] = true
	}
	var want []string
	for _, c := range after.Certificates {
		if !old[c.Fingerprint] {
			want = append(want, c.Name)
		}
	}
	var got []string
	col := -1
	for _, l := range strings.Split(out, "\n") {
		m := renewalLine.FindStringSubmatchIndex(l)
		if m == nil {
			continue
		}
		got = append(got, l[m[4]:m[5]])
		if col == -1 {
			col = m[6]
		} else if m[6] != col {
			t.Errorf("renew's columns are not aligned: not-after at column %d, %d before:\n%s", m[6], col, out)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("renew lists\n  %s\nwant the certificates in use that are new, as certs names them\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if !strings.Contains(out, fmt.Sprintf(": %d certificates renewed\n", len(want))) {
		t.Errorf("renew's count is not %d distinct certificates:\n%s", len(want), out)
	}
}
