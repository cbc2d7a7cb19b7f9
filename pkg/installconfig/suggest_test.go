package installconfig

import "testing"

// TestSuggest: the one "did you mean" rule: case first, then the nearest within two edits (one for short names).
func TestSuggest(t *testing.T) {
	known := []string{"baseDomain", "node-ip", "node-name", "install-device", "worker", "dir", "certs"}
	for name, want := range map[string]string{
		"basedomain": "baseDomain", "BASEDOMAIN": "baseDomain", "baseDomian": "baseDomain", "node-ipp": "node-ip",
		"node-nam": "node-name", "install-devce": "install-device", "workers": "worker", "dri": "", "dirs": "dir",
		"cert": "certs", "zzz": "", "": "", "base": "", "node": "",
	} {
		if got := Suggest(name, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", name, got, want)
		}
	}
}
