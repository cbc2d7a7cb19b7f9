package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/pkg/node"
)

// TestFIPSFirstBoot renders a fips: true install-config with the command (which starts itself again in FIPS
// 140-3 mode) and does with its aio.ign what RHCOS's rhcos-fips does in the initramfs on the first boot: take the
// storage.files entry of /etc/ignition-machine-config-encapsulated.json (without user and group), put it alone in
// a config of aio.ign's Ignition version, let the real Ignition's files stage write it into an empty root, and
// read .spec.fips there. It must be true for rhcos-fips to add fips=1 and reboot into FIPS mode
// (coreos/rhel-coreos-config 40rhcos-fips: rhcos-fips.sh, coreos-dummy-ignition-files-run.sh; this is our own
// reading of what they do, not their code).
func TestFIPSFirstBoot(t *testing.T) {
	preconditions(t)
	cli := renderStaticCLI(t)
	work := workDir(t)
	out := filepath.Join(work, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "--install-config", filepath.Join(moduleRoot(t), "testdata/installconfig/good/fips.yaml"),
		"--node-ip", "192.168.126.10", "--dir", out)
	cmd.Env = filteredEnv("GODEBUG")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("render: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "crypto:           FIPS 140-3 mode") {
		t.Errorf("the render's summary names no FIPS mode:\n%s", stdout.String())
	}

	raw, err := os.ReadFile(filepath.Join(out, "aio.ign"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Ignition json.RawMessage `json:"ignition"`
		Storage  struct {
			Files []map[string]json.RawMessage `json:"files"`
		} `json:"storage"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	var entry map[string]json.RawMessage
	for _, f := range cfg.Storage.Files {
		var p string
		if json.Unmarshal(f["path"], &p) == nil && p == node.EncapsulatedMachineConfigPath {
			entry = f
		}
	}
	if entry == nil {
		t.Fatalf("aio.ign has no %s", node.EncapsulatedMachineConfigPath)
	}
	delete(entry, "user")
	delete(entry, "group")
	var version struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(cfg.Ignition, &version); err != nil || version.Version == "" {
		t.Fatalf("aio.ign's ignition.version: %v", err)
	}
	fragment, err := json.Marshal(map[string]any{"ignition": map[string]string{"version": version.Version},
		"storage": map[string]any{"files": []any{entry}}})
	if err != nil {
		t.Fatal(err)
	}
	fragmentPath := filepath.Join(work, "fips-fragment.ign")
	if err := os.WriteFile(fragmentPath, fragment, 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(work, "root")
	ignWork := filepath.Join(work, "ignition")
	if err := os.MkdirAll(ignWork, 0o755); err != nil {
		t.Fatal(err)
	}
	if res, err := Ignite(ctx, fragmentPath, root, ignWork); err != nil {
		if res != nil {
			t.Log(res.Log)
		}
		t.Fatal(err)
	}
	p := filepath.Join(root, node.EncapsulatedMachineConfigPath)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatalf("Ignition did not write %s: %v", node.EncapsulatedMachineConfigPath, err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("%s: mode %o, want 644", node.EncapsulatedMachineConfigPath, st.Mode().Perm())
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var mc struct {
		Spec struct {
			FIPS json.RawMessage `json:"fips"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &mc); err != nil || string(mc.Spec.FIPS) != "true" {
		t.Errorf(".spec.fips of the written MachineConfig is %s (%v), want true:\n%s", mc.Spec.FIPS, err, data)
	}
}
