package renew

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/operator/certrotation"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/render-static/render-static/internal/testkit/treetest"
	"github.com/render-static/render-static/internal/testkit/updatetest"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/state"
)

func repo(p string) string { return filepath.Join("..", "..", p) }

// managedTargets are the secrets library-go's cert rotation manages as targets whose certificate is a leaf, as
// the state holds them ("secret ns/name").
func managedTargets(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, o := range st.Objects {
		s, ok := o.(*corev1.Secret)
		if !ok || s.Labels[certrotation.ManagedCertificateTypeLabelName] != string(certrotation.CertificateTypeTarget) || IsRevisionCopy(s.ObjectMeta) {
			continue
		}
		c, err := firstCert(s.Data[corev1.TLSCertKey])
		if err != nil {
			t.Fatalf("secret %s/%s: %v", s.Namespace, s.Name, err)
		}
		if !c.IsCA {
			out["secret "+s.Namespace+"/"+s.Name] = c.NotAfter
		}
	}
	return out
}

// nodeCSRs are the node's render-time credentials (pkg/node's emulated CSR approval) as the state holds them: by
// "certificatesigningrequest <name>", their not-after and fingerprint.
func nodeCSRs(t *testing.T, dir string) (map[string]time.Time, map[string]bool) {
	t.Helper()
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, fps := map[string]time.Time{}, map[string]bool{}
	for _, o := range st.Objects {
		csr, ok := o.(*certificatesv1.CertificateSigningRequest)
		if !ok || len(csr.Status.Certificate) == 0 {
			continue
		}
		c, err := firstCert(csr.Status.Certificate)
		if err != nil {
			t.Fatalf("csr %s: %v", csr.Name, err)
		}
		out["certificatesigningrequest "+csr.Name] = c.NotAfter
		h := sha256.Sum256(c.Raw)
		fps[hex.EncodeToString(h[:])] = true
	}
	return out, fps
}

func signerSecrets(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, o := range st.Objects {
		if s, ok := o.(*corev1.Secret); ok && s.Labels[certrotation.ManagedCertificateTypeLabelName] == string(certrotation.CertificateTypeSigner) {
			out[s.Namespace+"/"+s.Name] = s.Data[corev1.TLSCertKey]
		}
	}
	return out
}

func render(t *testing.T, dir, nodeIP string) {
	t.Helper()
	o := pipeline.Options{InstallConfig: repo("examples/sno/install-config.yaml"), NodeIP: nodeIP, NodeName: pipeline.DefaultNodeName,
		Dir: dir, CertValidity: certs.DefaultLeafValidity}
	if _, err := pipeline.Render(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

// TestRenew renews one render several times:
//   - nothing due: no renewal, no new revision, no update, and every file of the directory (aio.ign and state
//     included) byte-identical;
//   - --within: exactly the leaves that expire within it are reissued (the render is moved to a new node IP first,
//     so etcd's three node certificates are younger than the rest), nothing else;
//   - --force: every leaf library-go manages is reissued, no signer is, every component whose revision inputs
//     changed is at revision N+1 and only those, and update/ is consistent with update.json and the new render;
//   - aio-update applies that update on a node root laid down from the previous render (stub client and kubelet),
//     and rolls it back.
func TestRenew(t *testing.T) {
	if testing.Short() {
		t.Skip("renders and renews several times")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "aio")
	render(t, dir, "192.168.126.10")

	// Nothing due.
	before := treetest.Contents(t, dir)
	rep, err := Run(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Renewed) > 0 || rep.Update != nil {
		t.Fatalf("nothing due, but renewed %v (update %v)", rep.Renewed, rep.Update != nil)
	}
	for _, c := range rep.Components {
		if c.From != c.To || c.From != 1 {
			t.Errorf("%s: revision %d -> %d with nothing due", c.Name, c.From, c.To)
		}
	}
	after := treetest.Contents(t, dir)
	var differ []string
	for p, b := range before {
		if p != "trace.txt" && !bytes.Equal(after[p], b) {
			differ = append(differ, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			differ = append(differ, p+" (new)")
		}
	}
	if len(differ) > 0 {
		sort.Strings(differ)
		t.Fatalf("renew with nothing due changed %d files: %v", len(differ), differ[:min(20, len(differ))])
	}

	// --within: a new node IP first reissues etcd's three node certificates, so they expire later than the rest.
	// Certificate times have second resolution and a render can take under two seconds on an idle machine: wait so
	// that the reissued ones are issued (and expire) at least three whole seconds after the others.
	time.Sleep(4 * time.Second)
	render(t, dir, "192.168.126.11")
	targets := managedTargets(t, dir)
	csrs, _ := nodeCSRs(t, dir)
	if len(csrs) != 2 {
		t.Fatalf("the state holds %d node CSRs with a certificate, want the kubelet's and the approver's", len(csrs))
	}
	for n, na := range csrs {
		targets[n] = na
	}
	etcdNode := map[string]bool{"secret openshift-etcd/etcd-peer-master-0": true, "secret openshift-etcd/etcd-serving-master-0": true,
		"secret openshift-etcd/etcd-serving-metrics-master-0": true}
	var oldest, youngest time.Time // latest not-after of the others, earliest of etcd's node certificates
	for n, na := range targets {
		if etcdNode[n] {
			if youngest.IsZero() || na.Before(youngest) {
				youngest = na
			}
		} else if na.After(oldest) {
			oldest = na
		}
	}
	if !youngest.After(oldest.Add(2 * time.Second)) {
		t.Fatalf("etcd's reissued node certificates expire at %s, the others by %s: no gap to test --within", youngest, oldest)
	}
	now := time.Now()
	within := oldest.Add(youngest.Sub(oldest) / 2).Sub(now)
	signers := signerSecrets(t, dir)
	rep, err = Run(ctx, Options{Dir: dir, Within: within, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for n := range targets {
		if !etcdNode[n] {
			want = append(want, n)
		}
	}
	sort.Strings(want)
	if got := rep.RenewedObjects("leaf"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("--within %s renewed leaves\n  %v\nwant exactly those expiring before %s:\n  %v", within, got, now.Add(within), want)
	}
	if got := rep.RenewedObjects("signer"); len(got) > 0 {
		t.Errorf("--within renewed signers %v; none is due", got)
	}
	if len(rep.Unconsumed) > 0 {
		t.Errorf("leaves marked due but not reissued: %v", rep.Unconsumed)
	}
	for k, crt := range signerSecrets(t, dir) {
		if !bytes.Equal(signers[k], crt) {
			t.Errorf("signer %s changed with --within", k)
		}
	}
	for n, na := range managedTargets(t, dir) {
		if etcdNode[n] && !na.Equal(targets[n]) {
			t.Errorf("%s expires after --within's horizon but was reissued", n)
		}
	}

	// --force. The node is laid down from the render before it, as aio.ign would have.
	nodeRoot := filepath.Join(t.TempDir(), "node")
	if err := copyIfExists(filepath.Join(dir, "rootfs"), nodeRoot); err != nil {
		t.Fatal(err)
	}
	old := treetest.Contents(t, dir)
	oldCerts := updatetest.CertsByName(t, dir)
	targets = managedTargets(t, dir)
	csrs, csrFPs := nodeCSRs(t, dir)
	for n, na := range csrs {
		targets[n] = na
	}
	signers = signerSecrets(t, dir)
	rep, err = Run(ctx, Options{Dir: dir, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rep.RenewedObjects("leaf"), slices.Sorted(maps.Keys(targets)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("--force renewed leaves\n  %v\nwant every managed leaf\n  %v", got, want)
	}
	newCerts := updatetest.CertsByName(t, dir)
	for n, c := range oldCerts {
		nc, ok := newCerts[n]
		if csrFPs[c.FP] {
			targets[n] = c.NotAfter // a node credential in a kubeconfig: signed again
		}
		switch {
		case c.CA:
			if ok && nc.FP != c.FP {
				t.Errorf("CA %s changed with --force", n)
			}
		case targets[n].IsZero():
			// Not managed (revision copies, the node's and the admin's credentials): never changed in place.
			if ok && nc.FP != c.FP {
				t.Errorf("%s is not managed by library-go's cert rotation but changed", n)
			}
		default:
			if !ok || nc.FP == c.FP {
				t.Errorf("leaf %s was not reissued by --force", n)
			}
		}
	}
	for k, crt := range signerSecrets(t, dir) {
		if !bytes.Equal(signers[k], crt) {
			t.Errorf("signer %s changed with --force", k)
		}
	}
	neu := treetest.Contents(t, dir)
	moved := 0
	for _, c := range rep.Components {
		oldDir := "rootfs/etc/kubernetes/static-pod-resources/" + strings.TrimSuffix(c.Manifest, ".yaml") + "-" + itoa(c.From) + "/"
		newDir := "rootfs/etc/kubernetes/static-pod-resources/" + strings.TrimSuffix(c.Manifest, ".yaml") + "-" + itoa(c.To) + "/"
		changed := revisionInputsChanged(old, neu, oldDir, newDir, c.From, c.To)
		switch {
		case c.To == c.From+1 && changed:
			moved++
		case c.To == c.From && !changed:
		default:
			t.Errorf("%s: revision %d -> %d, but its revisioned files changed: %v", c.Name, c.From, c.To, changed)
		}
	}
	if moved == 0 {
		t.Errorf("--force moved no component to a new revision")
	}
	if rep.Update == nil {
		t.Fatal("--force made no update")
	}
	checkUpdate(t, dir, rep.Update, neu)
	if _, ok := neu["updates/"+rep.Update.Previous+"/update.json"]; !ok || rep.Update.Previous == "" {
		t.Errorf("the --within update was not kept under updates/ (previous %q)", rep.Update.Previous)
	}

	recoverRoot := filepath.Join(t.TempDir(), "node")
	if err := copyIfExists(nodeRoot, recoverRoot); err != nil {
		t.Fatal(err)
	}
	testAIOUpdate(t, dir, nodeRoot, neu, rep.Update)
	testAIOUpdateRecover(t, dir, recoverRoot, neu, rep.Update)
}

func itoa(i int) string { return strconv.Itoa(i) }

func fmtInt(i int) string { return strconv.Itoa(i) }

// revisionInputsChanged says whether a component's revision directory holds other contents at the new revision
// than at the old one, the revision number itself aside.
func revisionInputsChanged(old, neu map[string][]byte, oldDir, newDir string, from, to int) bool {
	norm := func(b []byte, rev int) string {
		return strings.ReplaceAll(string(b), `"revision":"`+fmtInt(rev)+`"`, `"revision":"N"`)
	}
	seen := 0
	for p, b := range neu {
		if !strings.HasPrefix(p, newDir) {
			continue
		}
		seen++
		ob, ok := old[oldDir+strings.TrimPrefix(p, newDir)]
		if !ok || norm(ob, from) != norm(b, to) {
			return true
		}
	}
	for p := range old {
		if strings.HasPrefix(p, oldDir) {
			seen--
		}
	}
	return seen != 0
}

// checkUpdate: every file of update.json is in the update with its sha256, nothing else is; node files are the new
// render's (rootfs) with its mode; objects are the new render's manifests; revision files are exactly the new
// revision directories.
func checkUpdate(t *testing.T, dir string, u *Update, neu map[string][]byte) {
	t.Helper()
	var onDisk Update
	if err := json.Unmarshal(neu["update/update.json"], &onDisk); err != nil {
		t.Fatal(err)
	}
	if onDisk.ID != u.ID || len(onDisk.Files) != len(u.Files) || len(onDisk.Renewed) != len(u.Renewed) {
		t.Fatalf("update.json is not the report's update")
	}
	listed := map[string]bool{"update/README": true, "update/update.json": true, "update/files.tsv": true, "update/components.tsv": true}
	kinds := map[string]int{}
	for _, f := range onDisk.Files {
		kinds[f.Kind]++
		b, ok := neu["update/"+f.Source]
		if !ok {
			t.Errorf("%s is in update.json but not in update/", f.Source)
			continue
		}
		listed["update/"+f.Source] = true
		h := sha256.Sum256(b)
		if hex.EncodeToString(h[:]) != f.SHA256 {
			t.Errorf("%s: sha256 differs from update.json", f.Source)
		}
		switch f.Kind {
		case KindObject:
			if m, ok := neu[strings.Replace(f.Source, "manifests/", "manifests/", 1)]; !ok || !bytes.Equal(m, b) {
				t.Errorf("%s is not the new render's manifest", f.Source)
			}
		case KindStatus:
		default:
			if r, ok := neu["rootfs"+f.Path]; !ok || !bytes.Equal(r, b) {
				t.Errorf("%s (%s) is not the new render's %s", f.Source, f.Kind, f.Path)
			}
			info, err := os.Stat(filepath.Join(dir, "rootfs", f.Path))
			if err != nil || modeString(info.Mode()) != f.Mode {
				t.Errorf("%s: mode %s in update.json, the render has %v", f.Path, f.Mode, info.Mode())
			}
		}
	}
	for p := range neu {
		if strings.HasPrefix(p, "update/") && !listed[p] {
			t.Errorf("%s is in update/ but not in update.json", p)
		}
	}
	// The revision files are exactly the new revision directories.
	for _, c := range onDisk.Components {
		if c.To == c.From {
			continue
		}
		prefix := "rootfs/etc/kubernetes/static-pod-resources/" + strings.TrimSuffix(c.Manifest, ".yaml") + "-" + fmtInt(c.To) + "/"
		for p := range neu {
			if strings.HasPrefix(p, prefix) && !listed["update/files/"+strings.TrimPrefix(p, "rootfs/")] {
				t.Errorf("%s: %s is not in the update", c.Name, p)
			}
		}
		if !listed["update/files/etc/kubernetes/manifests/"+c.Manifest] {
			t.Errorf("%s: the new static pod manifest is not in the update", c.Name)
		}
	}
	if kinds[KindRevision] == 0 || kinds[KindPod] == 0 || kinds[KindObject] == 0 {
		t.Errorf("update kinds %v: want revision files, pod manifests and objects", kinds)
	}
	st, err := os.Stat(filepath.Join(dir, UpdateDir))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("update/ mode: %v", st.Mode())
	}
	for p, f := range treetest.Read(t, filepath.Join(dir, UpdateDir)) {
		if f.Mode.IsRegular() && f.Mode.Perm() != 0o600 {
			t.Errorf("%s/%s: mode %v, want 0600", UpdateDir, p, f.Mode.Perm())
		}
	}
}

// TestRenewBadInput: a directory render-static did not write, no state, a negative --within, --force with --within: errors naming the field, nothing
// written.
func TestRenewBadInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "aio.ign"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o     Options
		field string
		text  string
	}{
		// A directory render-static did not write is said as the render says it (pipeline.OpenDir); an empty one
		// holds no state.
		{Options{Dir: dir}, "dir", "without the .render-static marker, so render-static did not write it"},
		{Options{Dir: t.TempDir()}, "dir", "holds no render state"},
		{Options{Dir: ""}, "dir", "required"},
		{Options{Dir: dir, Within: -time.Hour}, "within", "negative"},
		{Options{Dir: dir, Within: time.Hour, Force: true}, "within", "one of {force} and {within}"},
	} {
		_, err := Run(context.Background(), tc.o)
		var list installconfig.ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%+v: error %v, want a field error", tc.o, err)
			continue
		}
		found := false
		for _, e := range list {
			if e.Field == tc.field && strings.Contains(e.Detail, tc.text) {
				found = true
			}
		}
		if !found {
			t.Errorf("%+v: %v; want %s: ...%s...", tc.o, err, tc.field, tc.text)
		}
	}
	if files := treetest.Contents(t, dir); len(files) != 1 {
		t.Errorf("a failed renew wrote into the directory: %v", slices.Sorted(maps.Keys(files)))
	}
}

// TestRenewDueSigner: a signer that library-go finds due (its not-after annotation says it expired, as it will
// once the wall clock gets there: the controllers read time.Now() and the annotation, no injectable clock) is
// renewed by library-go's own rule, without --force; its CA bundle then holds the old and the new signer, so every
// certificate the old one signed stays valid, and those leaves are not reissued (their issuer is still in the
// bundle). No other signer changes.
func TestRenewDueSigner(t *testing.T) {
	if testing.Short() {
		t.Skip("renders and renews")
	}
	dir := filepath.Join(t.TempDir(), "aio")
	render(t, dir, "192.168.126.10")
	const signer = "openshift-kube-apiserver-operator/localhost-serving-signer"
	const bundle = "openshift-kube-apiserver-operator/localhost-serving-ca"
	p := filepath.Join(dir, state.Dir, "objects", "core_secret_openshift-kube-apiserver-operator_localhost-serving-signer.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(auth\.openshift\.io/certificate-not-after: )"[^"]+"`)
	if !re.Match(b) {
		t.Fatalf("%s has no not-after annotation", p)
	}
	if err := os.WriteFile(p, re.ReplaceAll(b, []byte(`${1}"2020-01-01T00:00:00Z"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	reseal(t, dir) // the state refuses a file changed behind its back: this one is changed on purpose
	oldSigners := signerSecrets(t, dir)
	rep, err := Run(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.RenewedObjects("signer"); strings.Join(got, ",") != "secret "+signer {
		t.Errorf("renewed signers %v, want exactly %s", got, signer)
	}
	if got := rep.RenewedObjects("leaf"); len(got) > 0 {
		t.Errorf("leaves %v reissued, but their issuer is still in the bundle", got)
	}
	newSigners := signerSecrets(t, dir)
	for k, crt := range oldSigners {
		if k != signer && !bytes.Equal(newSigners[k], crt) {
			t.Errorf("signer %s changed", k)
		}
	}
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var caBundle string
	for _, o := range st.Objects {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Namespace+"/"+cm.Name == bundle {
			caBundle = cm.Data["ca-bundle.crt"]
		}
	}
	for _, which := range []string{"old", "new"} {
		crt := oldSigners[signer]
		if which == "new" {
			crt = newSigners[signer]
		}
		if bytes.Equal(oldSigners[signer], newSigners[signer]) || !strings.Contains(caBundle, strings.TrimSpace(string(crt))) {
			t.Errorf("%s does not hold the %s signer", bundle, which)
		}
	}
	if !slices.Contains(rep.Bundles, "configmap "+bundle) || rep.Update == nil {
		t.Errorf("the report names bundles %v (update %v); want %s and an update", rep.Bundles, rep.Update != nil, bundle)
	}
}

// reseal writes the state's SHA256SUMS anew, for a test that changed a state file on purpose (sha256sum's format).
func reseal(t *testing.T, dir string) {
	t.Helper()
	root := filepath.Join(dir, state.Dir)
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == state.SumsFile {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		lines = append(lines, hex.EncodeToString(h[:])+"  "+filepath.ToSlash(rel)+"\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, state.SumsFile), []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}
