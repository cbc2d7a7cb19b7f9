package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/pkg/state"
)

// TestDurationsTakeDays: every duration flag (the render's and the fleet's --cert-validity, renew --within, certs
// --expiring-within) takes days as a person writes them (30d), and a bad one says what to write.
func TestDurationsTakeDays(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"renew", "--dir", empty, "--within", "30d"}, "--dir: " + empty + " holds no render state"},
		{[]string{"renew", "--dir", empty, "--within", "1d12h"}, "--dir: " + empty + " holds no render state"},
		{[]string{"renew", "--dir", empty, "--within", "-1d"}, "--within: -24h0m0s is negative"},
		{[]string{"renew", "--dir", empty, "--within", "30days"}, "use 720h or 30d"},
		{[]string{"certs", "--dir", empty, "--expiring-within", "30d"}, "neither a render directory"},
		{[]string{"certs", "--dir", empty, "--expiring-within", "soon"}, "use 720h or 30d"},
		{[]string{"--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", "192.168.126.10", "--dir", filepath.Join(empty, "o"),
			"--cert-validity", "30x"}, "use 720h or 30d"},
		{[]string{"fleet", "--sites", empty, "--cert-validity", "1y"}, "use 720h or 30d"},
		{[]string{"fleet", "--sites", filepath.Join(empty, "none"), "--cert-validity", "3d"}, "--sites: "},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "unknown unit") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
	for in, want := range map[string]time.Duration{"30d": 720 * time.Hour, "1.5d": 36 * time.Hour, "1d12h30m": 36*time.Hour + 30*time.Minute,
		"-2d": -48 * time.Hour, "90m": 90 * time.Minute, "0": 0} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"d", "1d-2h", "1e3d", "nand", "1d1d", "106752d", ""} {
		if got, err := parseDuration(in); err == nil {
			t.Errorf("%q: %v, want an error", in, got)
		}
	}
	dir := filepath.Join(t.TempDir(), "aio")
	renderExample(t, dir, "--cert-validity", "30d")
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if _, err := st.Inputs.Get("certValidity", &v); err != nil || v != "720h0m0s" {
		t.Errorf("--cert-validity 30d saved as %q (%v), want 720h0m0s", v, err)
	}
}
