package inventory

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/crypto"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/export"
)

func newCA(t *testing.T, name string, d time.Duration) *crypto.CA {
	t.Helper()
	cfg, err := crypto.MakeSelfSignedCAConfigForDuration(name, d)
	if err != nil {
		t.Fatal(err)
	}
	return &crypto.CA{Config: cfg, SerialGenerator: &crypto.RandomSerialGenerator{}}
}

func pemOf(t *testing.T, cfg *crypto.TLSCertificateConfig) (crt, key []byte) {
	t.Helper()
	crt, key, err := cfg.GetPEMBytes()
	if err != nil {
		t.Fatal(err)
	}
	return crt, key
}

func secretYAML(ns, name string, data map[string][]byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata:\n  namespace: %s\n  name: %s\ntype: kubernetes.io/tls\ndata:\n", ns, name)
	for _, k := range slices.Sorted(maps.Keys(data)) {
		fmt.Fprintf(&b, "  %s: %s\n", k, base64.StdEncoding.EncodeToString(data[k]))
	}
	return b.Bytes()
}

func configMapYAML(ns, name, key string, v []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: %s\n  name: %s\ndata:\n  %s: |\n", ns, name, key)
	for _, l := range strings.Split(strings.TrimRight(string(v), "\n"), "\n") {
		fmt.Fprintf(&b, "    %s\n", l)
	}
	return b.Bytes()
}

// TestInventory: one serving certificate held by a Secret, its revisioned copy, its file on the node and a
// kubeconfig's CA; a signer held by a Secret and by two bundles; a client certificate only in a kubeconfig; a
// second CA only in a bundle. Each is one entry named by what it is, with every location, its signer and
// bundle membership; expiry ordering and --expiring-within follow not-after.
func TestInventory(t *testing.T) {
	signer := newCA(t, "localhost-serving-signer@1", 10*365*24*time.Hour)
	other := newCA(t, "admin-kubeconfig-signer@1", 10*365*24*time.Hour)
	serving, err := signer.MakeServerCertForDuration(sets.New("localhost", "127.0.0.1"), 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	crt, key := pemOf(t, serving)
	caPEM, caKey := pemOf(t, signer.Config)
	otherPEM, _ := pemOf(t, other.Config)
	client, err := other.MakeClientCertificateForDuration(userInfo("system:admin"), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clientCrt, clientKey := pemOf(t, client)
	kc, err := certs.Kubeconfig("c", "https://localhost:6443", caPEM, clientCrt, clientKey, "admin")
	if err != nil {
		t.Fatal(err)
	}
	union := append(append([]byte{}, caPEM...), otherPEM...)
	files := map[string][]byte{
		ManifestsDir + "/05_ns_secret_serving.yaml":     secretYAML("ns", "serving", map[string][]byte{"tls.crt": crt, "tls.key": key}),
		ManifestsDir + "/05_ns_secret_serving-1.yaml":   secretYAML("ns", "serving-1", map[string][]byte{"tls.crt": crt, "tls.key": key}),
		ManifestsDir + "/05_op_secret_signer.yaml":      secretYAML("op", "signer", map[string][]byte{"tls.crt": caPEM, "tls.key": caKey}),
		ManifestsDir + "/05_op_configmap_ca.yaml":       configMapYAML("op", "serving-ca", "ca-bundle.crt", caPEM),
		ManifestsDir + "/05_op_configmap_union.yaml":    configMapYAML("op", "client-ca", "ca-bundle.crt", union),
		"/etc/kubernetes/pod-1/secrets/serving/tls.crt": crt,
		"/etc/kubernetes/pod-1/secrets/serving/tls.key": key,
		"/etc/kubernetes/ca.crt":                        caPEM,
		"/etc/kubernetes/admin.kubeconfig":              kc,
		"/etc/kubernetes/README":                        []byte("no certificates here"),
	}
	now := time.Now()
	inv, err := FromFiles(files, now)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range inv.Certificates {
		names = append(names, c.Name)
	}
	want := []string{
		"file /etc/kubernetes/admin.kubeconfig (user admin client)", // 1 day
		"secret ns/serving", // 30 days
		"CA in configmap op/client-ca",
		"secret op/signer",
	}
	// The two CAs live equally long (ten years from now, made a moment apart): compare the leaves' order and
	// the set.
	if strings.Join(names[:2], "|") != strings.Join(want[:2], "|") || !sets.New(names...).Equal(sets.New(want...)) {
		t.Fatalf("certificates %q, want %q", names, want)
	}
	s := inv.Lookup("secret ns/serving")
	wantLocs := []string{
		"secret ns/serving[tls.crt]", "secret ns/serving-1[tls.crt]", "file /etc/kubernetes/pod-1/secrets/serving/tls.crt",
	}
	var locs []string
	for _, l := range s.Locations {
		locs = append(locs, l.String())
	}
	if strings.Join(locs, "|") != strings.Join(wantLocs, "|") {
		t.Errorf("serving locations %q, want %q", locs, wantLocs)
	}
	if s.Signer != "secret op/signer" || s.Subject != "CN=127.0.0.1" || s.KeyType != "RSA 2048" || s.IsCA ||
		!sets.New(s.SANs...).Equal(sets.New("localhost", "127.0.0.1")) {
		t.Errorf("serving: %+v", s)
	}
	if c := inv.Lookup("file /etc/kubernetes/admin.kubeconfig (user admin client)"); c == nil || c.Signer != "CA in configmap op/client-ca" {
		t.Errorf("admin client: %+v", c)
	}
	if c := inv.Lookup("secret op/signer"); c == nil || !c.SelfSigned || !c.IsCA || len(c.Locations) != 8 { // its secret, two bundles, a kubeconfig, a file, and the serving chain (3)
		t.Errorf("signer: %+v", c)
	}
	var bundles []string
	for _, b := range inv.Bundles {
		bundles = append(bundles, fmt.Sprintf("%s=%s", b.Name, strings.Join(b.Certificates, ",")))
	}
	wantBundles := []string{
		"configmap op/client-ca[ca-bundle.crt]=secret op/signer,CA in configmap op/client-ca",
		"configmap op/serving-ca[ca-bundle.crt]=secret op/signer",
	}
	if strings.Join(bundles, "|") != strings.Join(wantBundles, "|") {
		t.Errorf("bundles %q, want %q", bundles, wantBundles)
	}
	if sc := inv.Bundles[1]; len(sc.Locations) != 3 {
		t.Errorf("serving-ca bundle lives in %v; want the configmap, /etc/kubernetes/ca.crt and the kubeconfig", sc.Locations)
	}
	if due := inv.ExpiringWithin(48 * time.Hour); len(due) != 1 || due[0].Name != want[0] {
		t.Errorf("expiring within 48h: %v", due)
	}
	if due := inv.ExpiringWithin(31 * 24 * time.Hour); len(due) != 2 {
		t.Errorf("expiring within 31d: %d", len(due))
	}
	var tree bytes.Buffer
	inv.WriteTree(&tree)
	if !strings.Contains(tree.String(), "secret op/signer [root CA, ") || !strings.Contains(tree.String(), "\n  secret ns/serving [leaf, 29d23h left]") {
		t.Errorf("signer tree:\n%s", tree.String())
	}

	// The same files packed into an Ignition config give the same inventory.
	et := export.NewTree()
	for p, data := range files {
		mode := 0o644
		if export.IsSecretPath(p) || strings.Contains(string(data), "PRIVATE KEY") || strings.HasSuffix(p, "kubeconfig") {
			mode = 0o600
		}
		if err := et.AddFile(p, modeOf(mode), data); err != nil {
			t.Fatal(err)
		}
	}
	ign, err := export.Ignition(et, export.IgnitionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fromIgn, err := FromIgnition(ign)
	if err != nil {
		t.Fatal(err)
	}
	inv2, err := FromFiles(fromIgn, now)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	_ = inv.WriteJSON(&a)
	_ = inv2.WriteJSON(&b)
	if a.String() != b.String() {
		t.Errorf("inventory from Ignition differs:\n%s\nwant\n%s", b.String(), a.String())
	}
}

func userInfo(name string) *user.DefaultInfo { return &user.DefaultInfo{Name: name} }

func modeOf(m int) fs.FileMode { return fs.FileMode(m) }
