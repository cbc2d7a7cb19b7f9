package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	code, stdout, stderr := runCLI("renew", "--dir", dir, "--force")
	if code != 0 {
		t.Fatalf("renew --force: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"certificates renewed", "leaf", "-> 2", "earliest expiry:", "update for the node: " + dir + "/update", "aio-update apply"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("renew --force output lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "update", "update.json")); err != nil {
		t.Errorf("no update.json: %v", err)
	}
}
