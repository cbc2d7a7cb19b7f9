// Package updatetest runs a render's aio-update on a node root laid down from a render directory, against the stub
// client of testdata/renew/bin, and compares node roots: what the tests of renew and of the worker command share.
package updatetest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/internal/testkit/treetest"
	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/node"
)

// Env runs the aio-update a render installed on a node root, with the stub client (testdata/renew/bin/oc:
// kube-apiserver and the kubelet's mirror pods, from the root's static pod manifests), short bounds, and extra
// environment.
type Env struct {
	Root, Config, API, Log, Bin string
}

// repo is a path of the repository.
func repo(p string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", p)
}

// New is the Env of the node root root.
func New(t *testing.T, root string) *Env {
	t.Helper()
	testtools.Tool(t, "sha256sum")
	testtools.Tool(t, "flock")
	bin, err := filepath.Abs(repo("testdata/renew/bin"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := &Env{Root: root, Config: filepath.Join(dir, "aio-update.env"), API: filepath.Join(dir, "api"), Log: filepath.Join(dir, "calls.log"), Bin: bin}
	cfg, err := os.ReadFile(filepath.Join(root, node.AIOUpdateConfig))
	if err != nil {
		t.Fatalf("aio.ign did not install aio-update's settings: %v", err)
	}
	cfg = append(cfg, []byte("AIO_UPDATE_POD_WAIT_SECONDS=2\nAIO_UPDATE_RETRY_SECONDS=0.2\nAIO_UPDATE_ATTEMPTS=2\n")...)
	if err := os.WriteFile(e.Config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// Run runs aio-update with args and the extra environment; it returns the output and the exit error.
func (e *Env) Run(t *testing.T, extra []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(e.Root, node.AIOUpdateScript)}, args...)...)
	cmd.Env = append([]string{"PATH=" + e.Bin + ":" + os.Getenv("PATH"), "AIO_UPDATE_ROOT=" + e.Root, "AIO_UPDATE_CONFIG=" + e.Config,
		"STUB_LOG=" + e.Log, "STUB_API=" + e.API, "STUB_ROOT=" + e.Root, "STUB_NODE=master-0"}, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// NodeFiles is the node root's files, without aio-update's own state.
func NodeFiles(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for p, b := range treetest.Contents(t, root) {
		if !strings.HasPrefix("/"+p, node.AIOUpdateStateDir+"/") {
			out["/"+p] = b
		}
	}
	return out
}

// DiffFiles names the paths whose contents differ between a and b, gone or new.
func DiffFiles(a, b map[string][]byte) []string {
	var out []string
	for p, x := range a {
		if y, ok := b[p]; !ok {
			out = append(out, p+" (gone)")
		} else if !bytes.Equal(x, y) {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p+" (new)")
		}
	}
	return out
}

// Cert is a certificate of a render directory: its fingerprint, not-after and whether it is a CA.
type Cert struct {
	FP       string
	NotAfter time.Time
	CA       bool
}

// CertsByName are the certificates of a render directory by inventory name (secret ns/name or file path).
func CertsByName(t *testing.T, dir string) map[string]Cert {
	t.Helper()
	inv, err := inventory.Read(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Cert{}
	inUse := inv.Certificates
	if inv.AdminKubeconfig != nil {
		inUse = append(inUse, inv.AdminKubeconfig) // in use, though renew never renews it
	}
	for _, c := range inUse {
		out[c.Name] = Cert{FP: c.Fingerprint, NotAfter: c.NotAfter, CA: c.IsCA}
	}
	return out
}
