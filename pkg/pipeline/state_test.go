package pipeline

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/state"
)

// readTree reads every regular file under dir, by relative path, with its mode.
func readTree(t *testing.T, dir string) (map[string][]byte, map[string]fs.FileMode) {
	t.Helper()
	files, modes := map[string][]byte{}, map[string]fs.FileMode{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		modes[rel] = info.Mode()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files[rel] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, modes
}

// certsOf is the inventory name of every certificate of a render directory, in use or not, by fingerprint.
func certsOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	inv, err := inventory.Read(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range inv.All() {
		out[c.Fingerprint] = c.Name
	}
	return out
}

// TestStateContinues: a render keeps its state (0600 files, 0700 directories); rendering again into the same
// directory with the same inputs makes no new key and writes a byte-identical aio.ign and state (the random
// infrastructure name included); a changed node IP reissues exactly the certificates that carry it (etcd's
// peer, serving and metrics serving certificates) and rolls the revisions that use them; bad input leaves the
// directory untouched; --fresh starts a new cluster.
func TestStateContinues(t *testing.T) {
	testtools.Long(t, "renders four times")
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "aio")
	o := Options{InstallConfig: repo("examples/sno/install-config.yaml"), NodeIP: "192.168.126.10", NodeName: DefaultNodeName,
		Dir: dir, CertValidity: certs.DefaultLeafValidity}
	if _, err := Render(ctx, o); err != nil {
		t.Fatal(err)
	}
	first, modes := readTree(t, dir)
	for p, m := range modes {
		if !strings.HasPrefix(p, state.Dir) {
			continue
		}
		if want := fs.FileMode(0o600); m.IsDir() {
			if m.Perm() != 0o700 {
				t.Errorf("%s: mode %o, want 0700", p, m.Perm())
			}
		} else if m.Perm() != want {
			t.Errorf("%s: mode %o, want 0600", p, m.Perm())
		}
	}
	if !bytes.Contains(first["state/README"], []byte("SECRET")) {
		t.Errorf("state/README does not say it is secret")
	}
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.InfraID == "" || len(st.Objects) < 100 || len(st.Operators) != 4 || len(st.NodeKeys) != 2 {
		t.Fatalf("state: infraID %q, %d objects, %d operators, %d node keys", st.InfraID, len(st.Objects), len(st.Operators), len(st.NodeKeys))
	}

	// Same inputs: byte-identical.
	if _, err := Render(ctx, o); err != nil {
		t.Fatal(err)
	}
	second, _ := readTree(t, dir)
	var differ []string
	for p, b := range first {
		if p == "trace.txt" {
			continue // the second run's trace shows it wrote (almost) nothing
		}
		if !bytes.Equal(second[p], b) {
			differ = append(differ, p)
		}
	}
	for p := range second {
		if _, ok := first[p]; !ok {
			differ = append(differ, p+" (new)")
		}
	}
	sort.Strings(differ)
	if len(differ) > 0 {
		t.Fatalf("re-render from state changed %d files: %v", len(differ), differ[:min(len(differ), 20)])
	}
	// Nothing to converge: the first pass writes nothing (the saved status of the installer's objects is kept,
	// state.Seeds), so it is the fixpoint.
	if !regexp.MustCompile(`(?m)^# converge pass 1: 0 writes, 0 loop errors, .*\(fixpoint\)$`).Match(second["trace.txt"]) {
		t.Errorf("re-render with the same inputs did not settle in its first pass:\n%s", second["trace.txt"])
	}

	// Bad input leaves the directory (and its state) untouched.
	bad := o
	bad.NodeIP = "10.0.0.1"
	if _, err := Render(ctx, bad); err == nil {
		t.Fatal("render with a node IP outside the machine network succeeded")
	}
	if after, _ := readTree(t, dir); !bytes.Equal(after["aio.ign"], second["aio.ign"]) || !bytes.Equal(after["state/render.json"], second["state/render.json"]) {
		t.Fatal("a failed render changed the directory")
	}

	// A new node IP reissues what carries it, nothing else.
	before := certsOf(t, dir)
	moved := o
	moved.NodeIP = "192.168.126.11"
	summary, err := Render(ctx, moved)
	if err != nil {
		t.Fatal(err)
	}
	after := certsOf(t, dir)
	// Compared by name: a certificate that is no longer what its name holds was reissued (the old one stays in
	// the previous revision's copies, named after them).
	byName := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for fp, n := range m {
			out[n] = fp
		}
		return out
	}
	b, a := byName(before), byName(after)
	var reissued []string
	for n, fp := range b {
		if a[n] != fp {
			reissued = append(reissued, n)
		}
	}
	sort.Strings(reissued)
	want := []string{"secret openshift-etcd/etcd-peer-master-0", "secret openshift-etcd/etcd-serving-master-0", "secret openshift-etcd/etcd-serving-metrics-master-0"}
	if strings.Join(reissued, ",") != strings.Join(want, ",") {
		t.Errorf("new node IP reissued %v; want exactly %v", reissued, want)
	}
	// The previous ones stay in revision 1's copies, which no static pod runs any more: in the state only, not
	// in aio.ign (export.PruneRevisions), and not what the summary's earliest expiry names.
	inv, err := inventory.Read(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range want {
		if c := inv.ByFingerprint(b[n]); c != nil {
			t.Errorf("the previous %s is still on the node as %s; only the state keeps revision 1's copy", n, c.Name)
		}
	}
	afterFiles, _ := readTree(t, dir)
	if _, ok := afterFiles["state/objects/core_secret_openshift-etcd_etcd-all-certs-1.yaml"]; !ok {
		t.Errorf("the state lost revision 1's copy of etcd-all-certs")
	}
	if e := inv.Earliest(); e == nil || summary.EarliestExpirySubject != e.Name || slices.ContainsFunc(inv.Unused, func(c *inventory.Certificate) bool { return c.Name == summary.EarliestExpirySubject }) {
		t.Errorf("the summary's earliest expiry names %q; want the first certificate in use, %+v", summary.EarliestExpirySubject, e)
	}
	third, _ := readTree(t, dir)
	if _, ok := third["rootfs/etc/kubernetes/static-pod-resources/etcd-pod-2/secrets/etcd-all-certs/etcd-peer-master-0.crt"]; !ok {
		t.Errorf("etcd has no revision 2 after its certificates changed")
	}
	if _, ok := third["rootfs/etc/kubernetes/static-pod-resources/kube-scheduler-pod-1/configmaps/config/config.yaml"]; !ok {
		t.Errorf("kube-scheduler left revision 1 though nothing of it changed")
	}
	if !bytes.Equal(third["state/objects/core_secret_openshift-kube-apiserver-operator_localhost-serving-signer.yaml"],
		first["state/objects/core_secret_openshift-kube-apiserver-operator_localhost-serving-signer.yaml"]) {
		t.Errorf("a signer changed with the node IP")
	}

	// --fresh: a new cluster, new signers.
	fresh := o
	fresh.Fresh, fresh.ReplaceCluster = true, true
	if _, err := Render(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	fourth, _ := readTree(t, dir)
	if bytes.Equal(fourth["state/objects/core_secret_openshift-kube-apiserver-operator_localhost-serving-signer.yaml"],
		first["state/objects/core_secret_openshift-kube-apiserver-operator_localhost-serving-signer.yaml"]) {
		t.Errorf("--fresh kept the old signer")
	}
}
