package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDidYouMean: a flag or a command one typo away from one of the command's gets a suggestion, as an
// install-config field does (basedomain: did you mean "baseDomain"?).
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-ipp", "192.168.126.10"}, "unknown flag: --node-ipp (did you mean --node-ip?)"},
		{[]string{"--install-devce", "/dev/sda"}, "unknown flag: --install-devce (did you mean --install-device?)"},
		{[]string{"workers", "--dir", "aio"}, `unknown command "workers" (did you mean "worker"?)`},
		{[]string{"worker", "--node-ipp", "192.168.126.10"}, "unknown flag: --node-ipp (did you mean --node-ip?)"},
		{[]string{"certs", "--expiring-withn", "1h"}, "unknown flag: --expiring-withn (did you mean --expiring-within?)"},
		{[]string{"renew", "--Force"}, "unknown flag: --Force (did you mean --force?)"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
	// Nothing near: no suggestion, the pointer to the help.
	code, _, stderr := runCLI("--zzz")
	if code != 1 || strings.Contains(stderr, "did you mean") || !strings.Contains(stderr, "--help") {
		t.Errorf("--zzz: exit %d: %s", code, stderr)
	}
	// The install-config's suggestion is the same one.
	ic := filepath.Join(t.TempDir(), "install-config.yaml")
	raw, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ic, []byte(strings.Replace(string(raw), "baseDomain:", "basedomain:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI("--install-config", ic, "--node-ip", "192.168.126.10", "--dir", filepath.Join(t.TempDir(), "o"))
	if code != 1 || !strings.Contains(stderr, `basedomain: unknown field (did you mean "baseDomain"?)`) {
		t.Errorf("basedomain: exit %d: %s", code, stderr)
	}
}
