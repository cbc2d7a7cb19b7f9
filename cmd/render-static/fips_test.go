package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ignitionconfig "github.com/coreos/ignition/v2/config/v3_2"
	ignitiontypes "github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/render-static/render-static/internal/faultpoint"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/node"
)

// runMainEnv makes this test binary the command itself (TestMain): the FIPS tests start it as a child, which
// main may replace with itself started again in FIPS 140-3 mode, as the installed command does.
const runMainEnv = "RENDER_STATIC_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	gcCyclesAtMain = gcCycles()
	// The fault tests' hook: this test binary, run as the command, honours RENDER_STATIC_FAULT; the shipped
	// command does not (internal/faultpoint).
	faultpoint.Enable()
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// command runs this test binary as the command (runMainEnv) with args and env added to the environment without
// GODEBUG, bounded by a minute, and returns its exit code and output.
func command(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, runMainEnv+"=1"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("%v: %v", args, err)
	return 0, "", ""
}

// TestFIPSRestart: render-static, its renew and its fleet, given a fips: true install-config in a process not in
// FIPS 140-3 mode, start again in it by themselves and render: the summary names the mode, and aio.ign holds the
// MachineConfig rhcos-fips looks for, found as rhcos-fips finds it (the storage.files entry of its path) with
// .spec.fips true. With GODEBUG=fips140=off, the user's choice, the render is refused naming fips, and --dir is
// not made.
func TestFIPSRestart(t *testing.T) {
	testtools.Long(t, "renders twice")
	ic := repo("testdata/installconfig/good/fips.yaml")
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := command(t, nil, "--install-config", ic, "--node-ip", "192.168.126.10", "--dir", dir)
	if code != 0 {
		t.Fatalf("render: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "crypto:           FIPS 140-3 mode (Go Cryptographic Module ") {
		t.Errorf("the summary names no FIPS mode:\n%s", stdout)
	}
	checkEncapsulatedFIPS(t, filepath.Join(dir, "aio.ign"))
	// renew renders again from the state, which keeps the install-config: in FIPS mode too.
	if code, stdout, stderr := command(t, nil, "renew", "--dir", dir, "--force"); code != 0 {
		t.Fatalf("renew: exit %d\n%s%s", code, stdout, stderr)
	}
	checkEncapsulatedFIPS(t, filepath.Join(dir, "aio.ign"))

	sites := t.TempDir()
	list := "- name: fips-site\n  installConfig: " + filepath.Join(must(filepath.Abs(ic))) + "\n  nodeIP: 192.168.126.10\n"
	if err := os.WriteFile(filepath.Join(sites, "sites.yaml"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(sites, "out")
	if code, stdout, stderr := command(t, nil, "fleet", "--sites", filepath.Join(sites, "sites.yaml"), "--out", out, "--jobs", "1"); code != 0 {
		t.Fatalf("fleet: exit %d\n%s%s", code, stdout, stderr)
	}
	checkEncapsulatedFIPS(t, filepath.Join(out, "fips-site", "aio.ign"))

	refused := filepath.Join(t.TempDir(), "refused")
	code, _, stderr = command(t, []string{"GODEBUG=fips140=off"}, "--install-config", ic, "--node-ip", "192.168.126.10", "--dir", refused)
	if code != 1 || !strings.Contains(stderr, "error: fips: true needs the render's keys made in FIPS 140-3 mode") {
		t.Errorf("with fips140=off: exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(refused); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused render made %s: %v", refused, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// checkEncapsulatedFIPS finds in the aio.ign at path the file entry of node.EncapsulatedMachineConfigPath, as
// rhcos-fips selects it from the Ignition config, decodes its contents and checks their .spec.fips is true.
func checkEncapsulatedFIPS(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, rpt, err := ignitionconfig.Parse(raw)
	if err != nil || rpt.IsFatal() {
		t.Fatalf("%s: %v %v", path, err, rpt)
	}
	var entry *ignitiontypes.File
	for i, f := range cfg.Storage.Files {
		if f.Path == node.EncapsulatedMachineConfigPath {
			entry = &cfg.Storage.Files[i]
		}
	}
	if entry == nil || entry.Contents.Source == nil {
		t.Fatalf("%s has no %s", path, node.EncapsulatedMachineConfigPath)
	}
	if entry.Mode == nil || *entry.Mode != 0o644 {
		t.Errorf("%s: mode %v, want 0644", node.EncapsulatedMachineConfigPath, entry.Mode)
	}
	files, err := inventory.FromIgnition(raw) // the contents as Ignition decodes them (data URL, gzip)
	if err != nil {
		t.Fatal(err)
	}
	data := files[node.EncapsulatedMachineConfigPath]
	var mc struct {
		Spec struct {
			FIPS json.RawMessage `json:"fips"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &mc); err != nil || string(mc.Spec.FIPS) != "true" {
		t.Errorf("%s: .spec.fips %s (%v):\n%s", node.EncapsulatedMachineConfigPath, mc.Spec.FIPS, err, data)
	}
}
