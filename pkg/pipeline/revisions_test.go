package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/state"
)

// Corrections before install (issue 39, item 3): five --node-ip corrections into one DIR each roll etcd and
// kube-apiserver, but aio.ign carries only the revision each static pod runs (export.PruneRevisions), so live.ign
// embeds within 1% of a fresh render's and aio.ign does not grow; the state keeps every revision.
func TestCorrectionsDoNotGrowLive(t *testing.T) {
	testtools.Long(t, "renders the whole cluster six times")
	testtools.Tool(t, "xz")
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "aio")
	o := Options{InstallConfig: repo("examples/sno/install-config.yaml"), NodeIP: "192.168.126.10", NodeName: DefaultNodeName,
		Dir: dir, CertValidity: certs.DefaultLeafValidity}
	fresh, err := Render(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.LiveEmbed.Bytes == 0 {
		t.Fatalf("live.ign's embed size not measured: %+v", fresh.LiveEmbed)
	}
	freshIgn, err := os.ReadFile(filepath.Join(dir, "aio.ign"))
	if err != nil {
		t.Fatal(err)
	}
	var last *Summary
	for i := 11; i <= 15; i++ {
		o := Options{Dir: dir, NodeIP: fmt.Sprintf("192.168.126.%d", i)}
		if last, err = Render(ctx, o); err != nil {
			t.Fatal(err)
		}
		ign, err := os.ReadFile(filepath.Join(dir, "aio.ign"))
		if err != nil {
			t.Fatal(err)
		}
		// The node IP and the revision numbers are all that differ in length: a few bytes.
		if d := len(ign) - len(freshIgn); d > len(freshIgn)/1000 {
			t.Errorf("correction %d: aio.ign grew from %d to %d bytes", i-10, len(freshIgn), len(ign))
		}
		if last.Objects != fresh.Objects {
			t.Errorf("correction %d: %d manifests, a fresh render %d", i-10, last.Objects, fresh.Objects)
		}
	}
	if !strings.Contains(strings.Join(last.Revisions, "; "), "etcd 5->6") {
		t.Fatalf("the corrections did not roll etcd to revision 6: %v", last.Revisions)
	}
	diff := last.LiveEmbed.Bytes - fresh.LiveEmbed.Bytes
	if diff < 0 {
		diff = -diff
	}
	if diff*100 > fresh.LiveEmbed.Bytes {
		t.Errorf("after five corrections live.ign embeds in %d bytes, a fresh render in %d: more than 1%% apart", last.LiveEmbed.Bytes, fresh.LiveEmbed.Bytes)
	}
	t.Logf("live.ign embed: fresh %d bytes, after five corrections %d bytes", fresh.LiveEmbed.Bytes, last.LiveEmbed.Bytes)

	// Only the running revision's copies are on the node; the state keeps every revision's.
	files, _ := readTree(t, dir)
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	saved := map[string]bool{}
	for _, obj := range st.Objects {
		if m, err := meta.Accessor(obj); err == nil && m.GetNamespace() == "openshift-etcd" {
			saved[m.GetName()] = true
		}
	}
	for rev := 1; rev <= 6; rev++ {
		for _, name := range []string{"etcd-all-certs", "etcd-pod", "revision-status"} {
			n := fmt.Sprintf("%s-%d", name, rev)
			if !saved[n] {
				t.Errorf("the state lost %s", n)
			}
			kind := "configmap"
			if name == "etcd-all-certs" {
				kind = "secret"
			}
			_, onNode := files[fmt.Sprintf("rootfs/opt/openshift/manifests/05_openshift-etcd_%s_%s.yaml", kind, n)]
			if onNode != (rev == 6) {
				t.Errorf("aio.ign carries %s: %v, want %v (etcd runs revision 6)", n, onNode, rev == 6)
			}
		}
	}
}
