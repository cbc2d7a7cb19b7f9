// Package testtools is the one rule for tests that need something outside Go: an external tool on PATH, an
// e2e-built binary. Where the tools are required
// (RENDER_STATIC_REQUIRE_TOOLS=1, as `make test` sets it) a missing one fails the test; otherwise (`make unit`) it
// skips it, saying what is missing and how to get it. It also holds the rule for tests that take long (Long:
// -short skips them). It is for tests only and imports nothing of the project, so any package's tests can use it.
package testtools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/procstat"
)

// Env is the variable that makes missing tools fail tests instead of skipping them.
const Env = "RENDER_STATIC_REQUIRE_TOOLS"

// Required says whether missing tools fail tests (Env is "1").
func Required() bool { return os.Getenv(Env) == "1" }

// Missing ends the test because something it needs is not there: it fails the test where the tools are required
// and skips it otherwise. The message says what is missing and how to get it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (%s=1: required)", msg, Env)
	}
	t.Skipf("%s (skipped; %s=1 makes this a failure)", msg, Env)
}

// Tool returns the path of an external tool on PATH, or ends the test (Missing).
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed: run hack/install-test-deps.sh", name)
	}
	return p
}

// Path requires a file or directory (what says what it is), or ends the test (Missing).
func Path(t testing.TB, path, what string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Missing(t, "no %s at %s: %v", what, path, err)
	}
}

// Long skips a test that takes long (a whole render or more) under -short; why says what it does ("renders the
// whole cluster").
func Long(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s", why)
	}
}

// PeakRSSMB is the process's peak resident set (VmHWM), in MB, for benchmarks to report; 0 where /proc is not
// there.
func PeakRSSMB() float64 {
	return procstat.MB("VmHWM")
}

// ResetPeakRSS starts a new peak for PeakRSSMB: it collects the garbage, returns the freed memory to the system
// and resets the kernel's peak (writing 5 to /proc/self/clear_refs, Linux 4.0 and later), so that a benchmark
// run after another reports its own peak, not the earlier one's. It returns the RSS it starts from (MB).
func ResetPeakRSS() (float64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, err
	}
	return procstat.MB("VmRSS"), nil
}

// Keyfile makes a static NetworkManager keyfile as a user would, with NetworkManager's own nmcli (`nmcli --offline
// connection add`, NetworkManager 1.42 or later): an ethernet connection on eno1 with the given addresses
// ("192.168.126.10/24", "fd00::10/64"), each family manual or disabled. It writes it into dir as name (0600),
// or ends the test without nmcli (Tool), and returns its path.
func Keyfile(t testing.TB, dir, name string, prefixes ...string) string {
	t.Helper()
	return KeyfileWith(t, dir, name, nil, prefixes...)
}

// KeyfileWith is Keyfile with more of nmcli's settings, as pairs ("ipv4.gateway", "192.168.126.1").
func KeyfileWith(t testing.TB, dir, name string, settings []string, prefixes ...string) string {
	t.Helper()
	args := []string{"--offline", "connection", "add", "type", "ethernet", "con-name", strings.TrimSuffix(name, ".nmconnection"), "ifname", "eno1"}
	v4, v6 := "disabled", "disabled"
	for _, p := range prefixes {
		if strings.Contains(p, ":") {
			args, v6 = append(args, "ipv6.addresses", p), "manual"
		} else {
			args, v4 = append(args, "ipv4.addresses", p), "manual"
		}
	}
	args = append(append(args, "ipv4.method", v4, "ipv6.method", v6), settings...)
	out, err := exec.Command(Tool(t, "nmcli"), args...).Output()
	if err != nil {
		t.Fatalf("nmcli %s: %v", strings.Join(args, " "), err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
