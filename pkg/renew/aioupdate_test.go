package renew

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/updatetest"
)

// testAIOUpdate: aio-update on a node laid down from the render before the update refuses a damaged update and an
// update that does not start from the node's revisions (changing nothing), fails with a clear message when a new
// pod does not become Ready in time and rolls back to exactly the previous files, fails when the API refuses an
// object and finishes when run again, and so applies the update: new
// revision directories (the previous ones untouched, the live legacy tokens carried over), cert files, pod
// manifests and API objects as the new render has them; applying again does nothing.
func testAIOUpdate(t *testing.T, dir, root string, neu map[string][]byte, u *Update) {
	e := updatetest.New(t, root)
	update := filepath.Join(dir, UpdateDir)

	// A live legacy token in the previous revision, as aiokube leaves it.
	var liveTokens []string
	for _, c := range u.Components {
		if c.To == c.From {
			continue
		}
		prevDir := filepath.Join(root, "etc/kubernetes/static-pod-resources", strings.TrimSuffix(c.Manifest, ".yaml")+"-"+strconv.Itoa(c.From))
		toks, _ := filepath.Glob(filepath.Join(prevDir, "secrets", "*", "token"))
		for _, tok := range toks {
			if _, err := os.Stat(filepath.Join(filepath.Dir(tok), "namespace")); err == nil {
				if err := os.WriteFile(tok, []byte("live-token"), 0o600); err != nil {
					t.Fatal(err)
				}
				rel, _ := filepath.Rel(prevDir, tok)
				liveTokens = append(liveTokens, filepath.Join(strings.TrimSuffix(c.Manifest, ".yaml")+"-"+strconv.Itoa(c.To), rel))
			}
		}
	}
	before := updatetest.NodeFiles(t, root)

	// A damaged update.
	damaged := filepath.Join(t.TempDir(), "update")
	if err := copyIfExists(update, damaged); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(damaged, u.Files[0].Source)
	b, _ := os.ReadFile(victim)
	if err := os.WriteFile(victim, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := e.Run(t, nil, "apply", damaged)
	if err == nil || !strings.Contains(out, "sha256") || !strings.Contains(out, "damaged") {
		t.Errorf("a damaged update: err %v, output:\n%s", err, out)
	}
	if d := updatetest.DiffFiles(before, updatetest.NodeFiles(t, root)); len(d) > 0 {
		t.Fatalf("a refused update changed the node: %v", d)
	}

	// A pod that does not become Ready: a clear failure, then a rollback to exactly the previous files.
	var first Component
	for _, c := range u.Components {
		if c.To > c.From {
			first = c
			break
		}
	}
	out, err = e.Run(t, []string{"STUB_NOT_READY=" + first.MirrorPod}, "apply", update)
	if err == nil || !strings.Contains(out, first.MirrorPod+" did not run revision "+strconv.Itoa(first.To)) || !strings.Contains(out, "aio-update rollback") {
		t.Errorf("a pod that never gets Ready: err %v, output:\n%s", err, out)
	}
	out, err = e.Run(t, nil, "rollback")
	if err != nil {
		t.Fatalf("rollback: %v\n%s", err, out)
	}
	newRevDirs := map[string]bool{}
	for _, c := range u.Components {
		if c.To > c.From {
			newRevDirs[strings.TrimSuffix(c.Manifest, ".yaml")+"-"+strconv.Itoa(c.To)] = true
		}
	}
	var changed []string
	for _, p := range updatetest.DiffFiles(before, updatetest.NodeFiles(t, root)) {
		rel := strings.TrimPrefix(p, "/etc/kubernetes/static-pod-resources/")
		if !newRevDirs[strings.SplitN(rel, "/", 2)[0]] || !strings.HasSuffix(p, "(new)") {
			changed = append(changed, p)
		}
	}
	if len(changed) > 0 {
		t.Errorf("after the rollback the node differs from before the update (besides the new revision directories): %v", changed)
	}
	if !strings.Contains(out, "rolled back") {
		t.Errorf("rollback output:\n%s", out)
	}

	// The update: an API object the server refuses fails the apply after the pods rolled; applying again
	// finishes it.
	var object string
	for _, f := range u.Files {
		if f.Kind == KindObject {
			object = filepath.Base(f.Source)
			break
		}
	}
	out, err = e.Run(t, []string{"STUB_FAIL_FILES=" + object}, "apply", update)
	if err == nil || !strings.Contains(out, "API objects not applied after 2 attempts") {
		t.Errorf("an API object refused: err %v, output:\n%s", err, out)
	}
	_ = os.Remove(e.Log)
	out, err = e.Run(t, nil, "apply", update)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	t.Logf("aio-update apply:\n%s", out)
	after := updatetest.NodeFiles(t, root)
	tokens := map[string]bool{}
	for _, tok := range liveTokens {
		tokens["/etc/kubernetes/static-pod-resources/"+tok] = true
		if got := string(after["/etc/kubernetes/static-pod-resources/"+tok]); got != "live-token" {
			t.Errorf("%s: %q, want the previous revision's live token", tok, got)
		}
	}
	for _, f := range u.Files {
		switch f.Kind {
		case KindObject:
			if got, err := os.ReadFile(filepath.Join(e.API, filepath.Base(f.Source))); err != nil || !bytes.Equal(got, neu["update/"+f.Source]) {
				t.Errorf("%s was not applied", f.Object)
			}
		case KindStatus:
		default:
			if !tokens[f.Path] && !bytes.Equal(after[f.Path], neu["rootfs"+f.Path]) {
				t.Errorf("%s (%s) on the node is not the new render's", f.Path, f.Kind)
			}
		}
	}
	for p, b := range before {
		if strings.HasPrefix(p, "/etc/kubernetes/static-pod-resources/") && !strings.Contains(p, "-certs/") && !bytes.Equal(after[p], b) {
			t.Errorf("%s of a previous revision changed", p)
		}
	}
	for _, c := range u.Components {
		if c.To > c.From && !strings.Contains(out, c.Name+": revision "+strconv.Itoa(c.From)+" -> "+strconv.Itoa(c.To)) {
			t.Errorf("the report does not say %s moved to revision %d:\n%s", c.Name, c.To, out)
		}
	}
	out, err = e.Run(t, nil, "apply", update)
	if err != nil || !strings.Contains(out, "applied before") {
		t.Errorf("applying again: err %v, output:\n%s", err, out)
	}

	// The previous update does not start from what the node runs now.
	if u.Previous != "" {
		prev, err := readUpdate(filepath.Join(dir, UpdatesDir, u.Previous))
		if err != nil {
			t.Fatal(err)
		}
		movedPrev := false
		for _, c := range prev.Components {
			movedPrev = movedPrev || c.To > c.From
		}
		if movedPrev {
			out, err = e.Run(t, nil, "apply", filepath.Join(dir, UpdatesDir, u.Previous))
			if err == nil || !strings.Contains(out, "this node runs revision") {
				t.Errorf("an update from older revisions: err %v, output:\n%s", err, out)
			}
		}
	}
}

// testAIOUpdateRecover: `aio-update recover` on a node whose API does not answer: the files of the update in place,
// the kubelet stopped, the new static pod manifests in place, every component's sandbox removed through the CRI,
// the kubelet started, and only then the waits (a mirror pod counts only with containers started since) and the
// API objects. A kubelet that does not come back fails it, bounded; run again, it finishes.
func testAIOUpdateRecover(t *testing.T, dir, root string, neu map[string][]byte, u *Update) {
	e := updatetest.New(t, root)
	update := filepath.Join(dir, UpdateDir)
	out, err := e.Run(t, []string{"STUB_KUBELET_NO_START=1"}, "recover", update)
	if err == nil || !strings.Contains(out, "did not run revision") {
		t.Errorf("recover with a kubelet that does not come back: err %v, output:\n%s", err, out)
	}
	_ = os.Remove(e.Log)
	out, err = e.Run(t, nil, "recover", update)
	if err != nil || !strings.Contains(out, "the node is back") {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	t.Logf("aio-update recover:\n%s", out)
	b, _ := os.ReadFile(e.Log)
	calls := strings.Split(strings.TrimSpace(string(b)), "\n")
	at := func(pred func(string) bool) int {
		for i, c := range calls {
			if pred(c) {
				return i
			}
		}
		return -1
	}
	stop := at(func(c string) bool { return c == "systemctl stop kubelet.service" })
	start := at(func(c string) bool { return c == "systemctl start kubelet.service" })
	firstGet := at(func(c string) bool { return strings.Contains(c, "get pod") })
	firstApply := at(func(c string) bool { return strings.HasPrefix(c, "apply ") || strings.Contains(c, " apply ") })
	if stop < 0 || !(stop < start && start < firstGet && firstGet < firstApply) {
		t.Errorf("order of the calls (stop %d, start %d, first wait %d, first object %d):\n%s", stop, start, firstGet, firstApply, b)
	}
	for _, c := range u.Components {
		rm := at(func(x string) bool { return x == "crictl rmp --force sandbox-"+c.Namespace })
		if rm < stop || rm > start {
			t.Errorf("%s: its sandbox was not removed while the kubelet was stopped (at %d):\n%s", c.Name, rm, b)
		}
	}
	after := updatetest.NodeFiles(t, root)
	for _, f := range u.Files {
		switch f.Kind {
		case KindObject, KindStatus:
		default:
			if !strings.HasSuffix(f.Path, "/token") && !bytes.Equal(after[f.Path], neu["rootfs"+f.Path]) {
				t.Errorf("%s (%s) on the node is not the new render's", f.Path, f.Kind)
			}
		}
	}
	out, err = e.Run(t, nil, "recover", update)
	if err != nil || !strings.Contains(out, "applied before") {
		t.Errorf("recovering again: err %v, output:\n%s", err, out)
	}
}
