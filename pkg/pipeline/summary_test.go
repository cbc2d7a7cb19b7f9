package pipeline

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/kubeconfig"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/node"
)

// TestInventoryKnowsWhatRenewDoesNotRenew: the places the inventory sets apart (it imports neither package) are
// where the render puts the trust bundle and the admin kubeconfig, and what the node uses after it.
func TestInventoryKnowsWhatRenewDoesNotRenew(t *testing.T) {
	for _, c := range [][2]string{
		{inventory.UserCABundleName, clusterconfig.UserCABundleName},
		{inventory.UserCATrustAnchor, node.UserCATrustAnchorPath},
		{inventory.AdminKubeconfig, node.AdminKubeconfigPath},
		{inventory.LocalhostKubeconfig, node.LocalhostKubeconfig},
	} {
		if c[0] != c[1] {
			t.Errorf("inventory has %q, the render %q", c[0], c[1])
		}
	}
}

// checkInventoryFromObjects: the inventory read with the Secrets and ConfigMaps taken from their objects is the
// one parsing every manifest gives, and the summary's earliest expiry (inventory.EarliestWith, which names and
// orders the certificates without the rest of the inventory) is that inventory's.
func checkInventoryFromObjects(t *testing.T, r *rendered) {
	t.Helper()
	files := map[string][]byte{}
	for _, f := range r.out.Tree.Files() {
		files[f.Path] = f.Contents
	}
	objs := inventoryManifests(files, r.out.Manifests)
	secrets := 0
	for _, m := range r.out.Manifests {
		if m.GVK.Group == "" && (m.GVK.Kind == "Secret" || m.GVK.Kind == "ConfigMap") {
			secrets++
		}
	}
	if len(objs) == 0 || len(objs) != secrets {
		t.Errorf("%d Secret and ConfigMap manifests read from their objects, want all %d", len(objs), secrets)
	}
	// The kubeconfigs the render wrote are read back from what they were written from (internal/kubeconfig):
	// that must be what parsing them gives.
	kubeconfigs := 0
	for p, data := range files {
		if !bytes.Contains(data, []byte("certificate-authority-data")) {
			continue
		}
		if read, err := kubeconfig.Read(data); err == nil {
			kubeconfigs++
			if parsed, err := kubeconfig.Parse(data); err != nil || !reflect.DeepEqual(read, parsed) {
				t.Errorf("%s: certificates read %v, parsed %v (%v)", p, read, parsed, err)
			}
		}
	}
	if kubeconfigs == 0 {
		t.Errorf("the render has no kubeconfig")
	}
	now := time.Now()
	parsed, err := inventory.FromFiles(files, now)
	if err != nil {
		t.Fatal(err)
	}
	read, err := inventory.FromFilesWith(files, objs, now)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := parsed.WriteJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := read.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("inventory from objects differs from the parsed one:\n%s\nwant\n%s", b.String(), a.String())
	}
	if e := parsed.Earliest(); e == nil || !r.out.Summary.EarliestExpiry.Equal(e.NotAfter) || r.out.Summary.EarliestExpirySubject != e.Name {
		t.Errorf("summary's earliest expiry %s (%s), want the parsed inventory's %+v", r.out.Summary.EarliestExpiry, r.out.Summary.EarliestExpirySubject, e)
	}
	// Until when the node may be off: the first certificate to expire that the node keeps after its first boot,
	// i.e. that lives somewhere outside /opt/openshift (the admin kubeconfig and the first-boot manifests go).
	var kept *inventory.Certificate
	for _, c := range parsed.Certificates {
		for _, l := range c.Locations {
			if kept == nil && !strings.HasPrefix(l.Path, "/opt/openshift/") {
				kept = c
			}
		}
	}
	if s := r.out.Summary; kept == nil || !s.OffUntil.Equal(kept.NotAfter) || s.OffUntilSubject != kept.Name || s.OffUntil.Before(s.EarliestExpiry) {
		t.Errorf("summary's off-until %s (%s), want %+v", s.OffUntil, s.OffUntilSubject, kept)
	}
}
