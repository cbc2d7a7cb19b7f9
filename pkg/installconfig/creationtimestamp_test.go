package installconfig

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openshift-install create install-config writes "creationTimestamp: null" under metadata: accept it.
func TestCreationTimestampNullIsTolerated(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "installconfig", "good", "ipv4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "metadata:\n", "metadata:\n  creationTimestamp: null\n", 1)
	if doc == string(raw) {
		t.Fatal("sample has no metadata block")
	}
	p := filepath.Join(t.TempDir(), "ic.yaml")
	if err := os.WriteFile(p, []byte(doc), 0644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, []netip.Addr{netip.MustParseAddr("192.168.126.10")}); err != nil {
		t.Fatalf("creationTimestamp: null rejected: %v", err)
	}
}
