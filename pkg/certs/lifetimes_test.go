package certs

import (
	"strings"
	"testing"
	"time"
)

// TestNewLifetimes: --cert-validity is refused below MinLeafValidity and above 100 years, with an error naming the
// flag and the bound; leaves under an hour render with a warning naming the lifetime; signers live at least ten
// years and at least twice as long as a leaf.
func TestNewLifetimes(t *testing.T) {
	for _, c := range []struct {
		leaf       time.Duration
		err        string // substring; "" means accepted
		warn       bool
		wantSigner time.Duration
	}{
		{time.Minute, "1m0s is too short (at least 5m0s", false, 0},
		{MinLeafValidity - time.Second, "is too short (at least 5m0s", false, 0},
		{MinLeafValidity, "", true, MinSignerValidity},
		{7 * time.Minute, "", true, MinSignerValidity},
		{ShortLeafValidity - time.Second, "", true, MinSignerValidity},
		{ShortLeafValidity, "", false, MinSignerValidity},
		{DefaultLeafValidity, "", false, MinSignerValidity},
		{20 * 365 * 24 * time.Hour, "", false, 40 * 365 * 24 * time.Hour},
		{101 * 365 * 24 * time.Hour, "884760h0m0s is too long (at most 100 years)", false, 0},
	} {
		lt, err := NewLifetimes(c.leaf)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want %q", c.leaf, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.leaf, err)
			continue
		}
		if lt.Leaf != c.leaf || lt.Signer != c.wantSigner {
			t.Errorf("%s: %+v, want leaf %s signer %s", c.leaf, lt, c.leaf, c.wantSigner)
		}
		w := lt.Warning()
		if c.warn != (w != "") {
			t.Errorf("%s: warning %q, want one: %v", c.leaf, w, c.warn)
		}
		if c.warn && (!strings.Contains(w, "{certValidity} "+c.leaf.String()) || !strings.Contains(w, "render-static renew")) {
			t.Errorf("%s: the warning %q names neither the lifetime nor what to do", c.leaf, w)
		}
		// library-go's refresh (4/5) of a leaf lies after any render's few seconds and before its end.
		if r := refresh(lt.Leaf); r < 4*time.Minute || r >= lt.Leaf {
			t.Errorf("%s: refresh at %s", c.leaf, r)
		}
	}
}
