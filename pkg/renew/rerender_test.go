package renew

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/operator/certrotation"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/treetest"
	"github.com/render-static/render-static/internal/testkit/updatetest"
	"github.com/render-static/render-static/pkg/codec"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/state"
)

// leafLifetimes are the lifetimes (not-after minus not-before) of the leaves the state holds: library-go's targets
// and the node's render-time credentials, by "secret ns/name" and "certificatesigningrequest name".
func leafLifetimes(t *testing.T, dir string) map[string]time.Duration {
	t.Helper()
	st, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Duration{}
	for _, o := range st.Objects {
		var name string
		var crt []byte
		switch v := o.(type) {
		case *corev1.Secret:
			if v.Labels[certrotation.ManagedCertificateTypeLabelName] != string(certrotation.CertificateTypeTarget) || IsRevisionCopy(v.ObjectMeta) {
				continue
			}
			name, crt = "secret "+v.Namespace+"/"+v.Name, v.Data[corev1.TLSCertKey]
		case *certificatesv1.CertificateSigningRequest:
			if len(v.Status.Certificate) == 0 {
				continue
			}
			name, crt = "certificatesigningrequest "+v.Name, v.Status.Certificate
		default:
			continue
		}
		c, err := firstCert(crt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !c.IsCA {
			out[name] = c.NotAfter.Sub(c.NotBefore)
		}
	}
	return out
}

// applied applies the update in dir/update with aio-update on the node root (stub client and kubelet), and checks
// that every file it lists is on the node as the render has it.
func applied(t *testing.T, e *updatetest.Env, dir string) *Update {
	t.Helper()
	u, err := readUpdate(filepath.Join(dir, UpdateDir))
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Run(t, nil, "apply", filepath.Join(dir, UpdateDir))
	if err != nil {
		t.Fatalf("aio-update apply %s: %v\n%s", u.ID, err, out)
	}
	for _, f := range u.Files {
		if f.Path == "" {
			continue
		}
		want, err := os.ReadFile(filepath.Join(dir, "rootfs", f.Path))
		if err != nil {
			t.Fatalf("update %s: %s is not in the render: %v", u.ID, f.Path, err)
		}
		if got, _ := os.ReadFile(filepath.Join(e.Root, f.Path)); !bytes.Equal(got, want) {
			t.Errorf("update %s: %s on the node is not the render's", u.ID, f.Path)
		}
	}
	return u
}

// TestRerenderUpdate: the life of an installed node through re-renders (issue 39, items 1 and 5):
//   - a re-render with a new --cert-validity issues every leaf again with the new lifetime (marked due as renew
//     marks them, the reason saying so) and writes the update for the running node, which aio-update applies on a
//     node laid down from the first render; the summary names it;
//   - a re-render that changes nothing on the node (the saved inputs, a new install device) writes no update
//     (update/ byte for byte as it was);
//   - renew then makes the next update, chained from the re-render's (kept in updates/), and it applies too;
//   - a re-render with a new node IP changes the kubelet's unit, which no update applies: refused, naming it and
//     InReinstall, the directory untouched; with Reinstall it renders, and writes no update.
func TestRerenderUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("renders several times")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "aio")
	render(t, dir, "192.168.126.10")
	root := filepath.Join(t.TempDir(), "node")
	if err := copyIfExists(filepath.Join(dir, "rootfs"), root); err != nil {
		t.Fatal(err)
	}
	e := updatetest.New(t, root)

	// A new certificate validity.
	o := pipeline.Options{Dir: dir, CertValidity: 2 * time.Hour}
	s, err := Render(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	lives := leafLifetimes(t, dir)
	if len(lives) < 10 {
		t.Fatalf("only %d leaves in the state", len(lives))
	}
	for n, l := range lives {
		if l < 2*time.Hour || l > 2*time.Hour+csrBackdate+time.Second {
			t.Errorf("%s lives %s after --cert-validity 2h", n, l)
		}
	}
	if time.Until(s.EarliestExpiry) > 2*time.Hour {
		t.Errorf("earliest expiry %s, more than 2h away", s.EarliestExpiry)
	}
	first := applied(t, e, dir)
	if first.Previous != "" {
		t.Errorf("the first update follows %q", first.Previous)
	}
	renewed := map[string]bool{}
	for _, r := range first.Renewed {
		if r.Kind == "leaf" && !strings.HasPrefix(r.Reason, "cert validity 8760h0m0s -> 2h0m0s") {
			t.Errorf("%s: reason %q", r.Name, r.Reason)
		}
		for _, obj := range r.Objects {
			renewed[obj] = true
		}
	}
	for n := range lives {
		if !renewed[n] {
			t.Errorf("%s got the new lifetime but the update does not carry it", n)
		}
	}
	if want := "update " + first.ID + " (the directory's first) for the running node: " + filepath.Join(dir, UpdateDir); !strings.HasPrefix(s.NodeUpdate, want) {
		t.Errorf("the summary's node update %q, want it to start %q", s.NodeUpdate, want)
	}

	// Nothing changes on the node (the saved inputs; a new install device, which only live.ign uses): no update.
	before := treetest.Contents(t, filepath.Join(dir, UpdateDir))
	for _, o := range []pipeline.Options{{Dir: dir}, {Dir: dir, InstallDevice: "/dev/sdb"}} {
		s, err = Render(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if s.NodeUpdate != "" || (o.InstallDevice == "" && len(s.Changed) > 0) {
			t.Errorf("a re-render changing nothing on the node (%+v): changed %v, node update %q", o, s.Changed, s.NodeUpdate)
		}
		after := treetest.Contents(t, filepath.Join(dir, UpdateDir))
		if len(after) != len(before) {
			t.Errorf("a re-render changing nothing on the node (%+v) changed update/: %d files, was %d", o, len(after), len(before))
		}
		for p, b := range before {
			if !bytes.Equal(after[p], b) {
				t.Errorf("a re-render changing nothing on the node (%+v) changed update/%s", o, p)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, UpdatesDir)); err == nil {
		t.Errorf("a re-render with the saved inputs kept an update in updates/")
	}

	// renew follows the re-render's update.
	rep, err := Run(ctx, Options{Dir: dir, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Update == nil || rep.Update.Previous != first.ID {
		t.Fatalf("renew's update does not follow the re-render's %s: %+v", first.ID, rep.Update)
	}
	if _, err := os.Stat(filepath.Join(dir, UpdatesDir, first.ID, "update.json")); err != nil {
		t.Errorf("the re-render's update is not kept: %v", err)
	}
	applied(t, e, dir)

	// A new node IP: only a reinstall applies it.
	before = treetest.Contents(t, dir)
	_, err = Render(ctx, pipeline.Options{Dir: dir, NodeIP: "192.168.126.11"})
	var list installconfig.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Field != pipeline.InReinstall || !strings.Contains(list[0].Detail, "unit kubelet.service") {
		t.Fatalf("a new node IP: %v, want one problem of %s naming the kubelet's unit", err, pipeline.InReinstall)
	}
	after := treetest.Contents(t, dir)
	for p, b := range before {
		if p != "trace.txt" && !bytes.Equal(after[p], b) {
			t.Fatalf("the refused re-render changed %s", p)
		}
	}
	s, err = Render(ctx, pipeline.Options{Dir: dir, NodeIP: "192.168.126.11", Reinstall: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.NodeUpdate, "none written ({reinstall}): install the node again from "+filepath.Join(dir, "aio.ign")) {
		t.Errorf("the summary's node update with Reinstall: %q", s.NodeUpdate)
	}
	if u, err := readUpdate(filepath.Join(dir, UpdateDir)); err != nil || u.ID != rep.Update.ID {
		t.Errorf("with Reinstall, update/ is no longer renew's %s: %v %v", rep.Update.ID, u, err)
	}
}

// TestRerenderOverOlderCRDs: an aio.ign an earlier render-static made holds the same CRDs in an older node form,
// YAML (the CRDs' node copies are compact JSON without their schemas' descriptions now: export.Manifest.NodeBytes)
// or compact JSON with the descriptions: a re-render of it makes no node update.
func TestRerenderOverOlderCRDs(t *testing.T) {
	if testing.Short() {
		t.Skip("renders twice per form")
	}
	forms := map[string]func(y []byte) ([]byte, error){
		"YAML": func(y []byte) ([]byte, error) { return y, nil },
		"JSON with descriptions": func(y []byte) ([]byte, error) {
			var obj map[string]interface{}
			if err := yaml.Unmarshal(y, &obj); err != nil {
				return nil, err
			}
			return codec.MarshalObjectJSON(obj)
		},
	}
	for name, form := range forms {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "aio")
			render(t, dir, "192.168.126.10")
			ignPath := filepath.Join(dir, "aio.ign")
			raw, err := os.ReadFile(ignPath)
			if err != nil {
				t.Fatal(err)
			}
			var ign map[string]any
			if err := json.Unmarshal(raw, &ign); err != nil {
				t.Fatal(err)
			}
			files := ign["storage"].(map[string]any)["files"].([]any)
			older := 0
			for _, f := range files {
				fm := f.(map[string]any)
				p := fm["path"].(string)
				if !strings.HasPrefix(p, "/opt/openshift/manifests/") || !strings.Contains(p, "_customresourcedefinition.") {
					continue
				}
				y, err := os.ReadFile(filepath.Join(dir, "manifests", filepath.Base(p)))
				if err != nil {
					t.Fatal(err)
				}
				b, err := form(y)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(b, []byte("description")) {
					t.Fatalf("%s: the older form has no descriptions", p)
				}
				fm["contents"] = map[string]any{"source": "data:;base64," + base64.StdEncoding.EncodeToString(b)}
				older++
			}
			if older == 0 {
				t.Fatal("aio.ign has no CRD under /opt/openshift/manifests")
			}
			old, err := json.Marshal(ign)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(ignPath, old, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Render(context.Background(), pipeline.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if s.NodeUpdate != "" {
				t.Errorf("a re-render over an aio.ign with %d CRDs as %s made a node update: %s", older, name, s.NodeUpdate)
			}
			if _, err := os.Stat(filepath.Join(dir, UpdateDir)); err == nil {
				t.Errorf("a re-render over an aio.ign with CRDs as %s wrote %s", name, UpdateDir)
			}
		})
	}
}
