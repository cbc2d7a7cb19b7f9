package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpdaterInstalled: aio.ign installs aio-update (0755, the embedded script) and its settings (0644), which a
// shell reads back as the node's name, the localhost kubeconfig, the installer's directories and the bounds; a
// value a shell could not read back as it is is refused.
func TestUpdaterInstalled(t *testing.T) {
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	f.converge(t)
	tr := f.tree(t)
	script := fileOf(t, tr, AIOUpdateScript)
	embedded, err := readScript("aio-update.sh")
	if err != nil {
		t.Fatal(err)
	}
	if script.Mode != 0o755 || string(script.Contents) != string(embedded) {
		t.Errorf("%s: mode %o, or not aio-update.sh as readScript gives it", AIOUpdateScript, script.Mode)
	}
	cfg := fileOf(t, tr, AIOUpdateConfig)
	if cfg.Mode != 0o644 {
		t.Errorf("%s: mode %o", AIOUpdateConfig, cfg.Mode)
	}
	p := filepath.Join(t.TempDir(), "aio-update.env")
	if err := os.WriteFile(p, cfg.Contents, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", `set -eu; . "$1"; echo "$AIO_UPDATE_NODE_NAME|$AIO_UPDATE_KUBECONFIG|$AIO_UPDATE_STATIC_POD_RESOURCES|$AIO_UPDATE_POD_MANIFESTS|$AIO_UPDATE_POD_WAIT_SECONDS"`, "-", p).CombinedOutput()
	if err != nil {
		t.Fatalf("sourcing %s: %v: %s", AIOUpdateConfig, err, out)
	}
	want := "sno-0|" + LocalhostKubeconfig + "|/etc/kubernetes/static-pod-resources|/etc/kubernetes/manifests|900"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("settings read back as %q, want %q", got, want)
	}
	if _, err := shellAssignments(map[string]string{"AIO_UPDATE_CLIENT_IMAGE": "it's"}); err == nil {
		t.Errorf("a value with a quote was accepted")
	}
}
