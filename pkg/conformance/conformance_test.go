package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/treetest"
)

// expectedDir is the conformance reference of the repository (testdata/conformance/README.md).
const expectedDir = "../../testdata/conformance/sno/expected"

var testImages = map[string]string{
	"hyperkube": "registry.example/hyperkube@sha256:1", "etcd": "registry.example/etcd@sha256:2",
	"cluster-kube-apiserver-operator": "registry.example/kas-o@sha256:3", "cluster-etcd-operator": "registry.example/ceo@sha256:4",
	"cluster-kube-controller-manager-operator": "registry.example/kcm-o@sha256:5", "cluster-kube-scheduler-operator": "registry.example/ks-o@sha256:6",
	"cluster-policy-controller": "registry.example/cpc@sha256:7", "tools": "registry.example/tools@sha256:8",
}

// fakeRender builds a render output directory from the expected tree, the way a perfect render would look:
// pods as JSON manifests with real (multi-line) scripts whose exec statements are the summarised ones, images
// from testImages, every FILES.txt entry with its mode, and a different infrastructure name.
func fakeRender(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "rootfs")
	byComponent := map[string]string{}
	for comp, spec := range testImages {
		byComponent[comp] = spec
	}
	rewrite := func(s string) string {
		if m := scriptSummaryRE.FindStringSubmatch(s); m != nil {
			body := "set -euo pipefail\necho starting\n"
			if m[1] != "none" {
				for _, st := range strings.Split(m[1], " ;; ") {
					body += "  " + st + "\n"
				}
			}
			return strings.ReplaceAll(body, "sno-x7k2p", "sno-abcde")
		}
		for _, m := range expectedImageRE.FindAllStringSubmatch(s, -1) {
			s = strings.ReplaceAll(s, m[0], byComponent[m[1]])
		}
		return strings.ReplaceAll(s, "sno-x7k2p", "sno-abcde")
	}
	// FILES.txt: every file with its mode, contents from rootfs/ where given.
	f, err := os.Open(filepath.Join(expectedDir, "FILES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		mode, p, _ := strings.Cut(sc.Text(), " ")
		m, _ := strconv.ParseUint(mode, 8, 32)
		data, err := os.ReadFile(filepath.Join(expectedDir, "rootfs", p))
		if err != nil {
			data = []byte("secret material\n")
		}
		data = []byte(rewrite(string(data)))
		writeFile(t, filepath.Join(root, p), os.FileMode(m), data)
	}
	// Pods: JSON like the installer writes, into manifests/.
	entries, _ := os.ReadDir(filepath.Join(expectedDir, "pods"))
	for _, e := range entries {
		raw, _ := os.ReadFile(filepath.Join(expectedDir, "pods", e.Name()))
		var v interface{}
		if err := yaml.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		v = walk(v, rewrite)
		j, _ := json.Marshal(v)
		writeFile(t, filepath.Join(root, "etc/kubernetes/manifests", e.Name()), 0600, j)
	}
	writeFile(t, filepath.Join(dir, "manifests", "05_cluster_infrastructure.config.openshift.io_cluster.yaml"), 0644,
		[]byte("apiVersion: config.openshift.io/v1\nkind: Infrastructure\nmetadata:\n  name: cluster\nstatus:\n  infrastructureName: sno-abcde\n"))
	return dir
}

func walk(v interface{}, f func(string) string) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		for k, e := range x {
			x[k] = walk(e, f)
		}
	case []interface{}:
		for i, e := range x {
			x[i] = walk(e, f)
		}
	case string:
		return f(x)
	}
	return v
}

func writeFile(t *testing.T, p string, mode os.FileMode, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func compare(t *testing.T, dir string, comps ...string) *Report {
	t.Helper()
	r, err := Compare(Options{RenderDir: dir, ExpectedDir: expectedDir, Components: comps, Images: testImages})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPerfectRenderConforms(t *testing.T) {
	dir := fakeRender(t)
	r := compare(t, dir)
	if !r.OK() || len(r.Adapted) != 0 {
		var b strings.Builder
		r.Write(&b)
		t.Fatalf("a render identical up to normalisation is reported as different:\n%s", b.String())
	}
	if r.Compared < 100 {
		t.Errorf("only %d items compared", r.Compared)
	}
}

func TestDifferencesAreReportedWithTheirPath(t *testing.T) {
	dir := fakeRender(t)
	root := filepath.Join(dir, "rootfs")
	// A changed flag in the kube-apiserver pod.
	pod := filepath.Join(root, "etc/kubernetes/manifests/kube-apiserver-pod.yaml")
	b, _ := os.ReadFile(pod)
	if err := os.WriteFile(pod, []byte(strings.Replace(string(b), "--insecure-port=6080", "--insecure-port=6081", 1)), 0600); err != nil {
		t.Fatal(err)
	}
	// A changed exec statement in etcd's script.
	etcdPod := filepath.Join(root, "etc/kubernetes/manifests/etcd-pod.yaml")
	b, _ = os.ReadFile(etcdPod)
	if err := os.WriteFile(etcdPod, []byte(strings.Replace(string(b), "--log-level=info", "--log-level=debug", 1)), 0600); err != nil {
		t.Fatal(err)
	}
	// A mode, a missing file, an extra file.
	if err := os.Chmod(filepath.Join(root, "etc/kubernetes/static-pod-resources/kube-scheduler-pod-1/configmaps/config/config.yaml"), 0644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "etc/kubernetes/static-pod-resources/kube-controller-manager-certs/secrets/csr-signer/tls.key")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "etc/kubernetes/static-pod-resources/etcd-certs/configmaps/extra/x"), 0600, []byte("x"))
	// A config field.
	cfg := filepath.Join(root, "etc/kubernetes/static-pod-resources/kube-apiserver-pod-1/configmaps/config/config.yaml")
	b, _ = os.ReadFile(cfg)
	var v map[string]interface{}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	v["kind"] = "Other"
	b, _ = yaml.Marshal(v)
	if err := os.WriteFile(cfg, b, 0600); err != nil {
		t.Fatal(err)
	}

	r := compare(t, dir)
	want := []string{
		"pods/kube-apiserver-pod.yaml:spec.containers[kube-apiserver-insecure-readyz].args[0]",
		"pods/etcd-pod.yaml:spec.containers[etcd].command[2]",
		"files:etc/kubernetes/static-pod-resources/kube-scheduler-pod-N/configmaps/config/config.yaml",
		"files:etc/kubernetes/static-pod-resources/kube-controller-manager-certs/secrets/csr-signer/tls.key",
		"files:etc/kubernetes/static-pod-resources/etcd-certs/configmaps/extra/x",
		"rootfs/etc/kubernetes/static-pod-resources/kube-apiserver-pod-1/configmaps/config/config.yaml:kind",
	}
	// A difference may be unexplained or a documented adaptation (components document theirs), but it must
	// be reported, with its path.
	all := append(append([]Difference(nil), r.Unexplained...), r.Adapted...)
	got := map[string]bool{}
	for _, d := range all {
		got[d.Path] = true
	}
	for _, p := range want {
		if !got[p] {
			t.Errorf("difference %s not reported; got:\n%v", p, all)
		}
	}
	if len(all) != len(want) {
		t.Errorf("got %d differences, want %d: %v", len(all), len(want), all)
	}
	// Only the scheduler: the other components' differences are not its business.
	if rs := compare(t, dir, "kube-scheduler"); len(rs.Unexplained) != 1 {
		t.Errorf("kube-scheduler only: %v", rs.Unexplained)
	}
}

func TestAdaptationsAreListedApart(t *testing.T) {
	a := adaptations{{Path: "pods/etcd-pod.yaml:spec.containers[etcd].*", Reason: "fresh node"}}
	a[0].re = mustPattern(a[0].Path)
	if i, ok := a.explain(Difference{Path: "pods/etcd-pod.yaml:spec.containers[etcd].image", want: "a", got: "b"}); !ok || a[i].Reason != "fresh node" {
		t.Errorf("explain = %d %v", i, ok)
	}
	if _, ok := a.explain(Difference{Path: "pods/etcd-pod.yaml:spec.containers[etcd-metrics].image", want: "a", got: "b"}); ok {
		t.Errorf("pattern matched another container")
	}
	// Every embedded adaptation file parses and has reasons.
	if _, err := LoadAdaptations(Components); err != nil {
		t.Fatal(err)
	}
}

func narrow(path string, excuse ...string) adaptations {
	a := adaptations{{Path: path, Excuse: excuse, Reason: "why"}}
	a[0].re = mustPattern(path)
	return a
}

// TestAdaptationIsNarrow: an adaptation explains a difference only when nothing but the flags or keys it names
// differ; a change beside an excused one, in the same script, command line or list, is still reported.
func TestAdaptationIsNarrow(t *testing.T) {
	const p = "pods/etcd-pod.yaml:spec.containers[etcd].command[2]"
	script := func(stmts ...string) string { return scriptPrefix + strings.Join(stmts, " ;; ") + ">" }
	base := "exec etcd --log-level=info --listen-peer-urls=https://0.0.0.0:2380 || mv a b"
	first := "exec etcd --log-level=info --listen-peer-urls=https://0.0.0.0:2380 --initial-cluster-state=new --initial-cluster=n=https://10.0.0.1:2380 || mv a b"
	excused := narrow(p, "--initial-cluster-state", "--initial-cluster")
	for _, c := range []struct {
		name      string
		a         adaptations
		want, got interface{}
		explained bool
	}{
		{"only the excused flags, in a second exec statement", excused, script(base), script(base, first), true},
		{"the excused flags and another flag changed in the same statement", excused, script(base),
			script(base, strings.Replace(first, "--log-level=info", "--log-level=debug", 1)), false},
		{"the excused flags and another flag changed in the other statement", excused, script(base),
			script(strings.Replace(base, "0.0.0.0", "[::]", 1), first), false},
		{"an extra flag beside the excused ones", excused, script(base), script(base, first+" --quota-backend-bytes=1"), false},
		{"a flag gone beside the excused ones", excused, script(base),
			script(strings.Replace(base, " --log-level=info", "", 1), strings.Replace(first, " --log-level=info", "", 1)), false},
		{"the excused flags absent: the adaptation is not about this", excused, script(base),
			script(strings.Replace(base, "info", "debug", 1)), false},
		{"a whole-field adaptation never covers a script", narrow(p), script(base), script(base, first), false},
		{"a whole-field adaptation never covers a command line", narrow(p), "etcd --a=1", "etcd --a=2", false},
		{"a whole-field adaptation covers a single value", narrow(p), "info", "debug", true},
		{"one word, the excused flag", narrow(p, "--feature-gates"), "--feature-gates=A=true", "--feature-gates=A=false,B=true", true},
		{"one word, another flag", narrow(p, "--feature-gates"), "--feature-gates=A=true", "--v=2", false},
		{"list items by key", narrow(p, "A"), []interface{}{"A=true", "B=true"}, []interface{}{"A=false", "B=true"}, true},
		{"list items: another key changed too", narrow(p, "A"), []interface{}{"A=true", "B=true"}, []interface{}{"A=false", "B=false"}, false},
		{"list items: a key is a whole name, not a prefix", narrow(p, "A"), []interface{}{"AB=true"}, []interface{}{"AB=false"}, false},
	} {
		_, ok := c.a.explain(Difference{Path: p, want: c.want, got: c.got})
		if ok != c.explained {
			t.Errorf("%s: explained = %v, want %v", c.name, ok, c.explained)
		}
	}
}

// TestAdaptationBesideAnotherDifference: on the whole comparison, with the project's own adaptation files, a
// render whose etcd script adds only the excused first-boot flags conforms, and the same render with one more flag
// changed in that script reports the script as unexplained; likewise kube-controller-manager's exec statement
// beside its excused --feature-gates flags.
func TestAdaptationBesideAnotherDifference(t *testing.T) {
	for _, c := range []struct {
		component, pod, container, field, excused, other string
	}{
		{"etcd", "etcd-pod.yaml", "etcd", "command", " --initial-cluster-state=new --initial-cluster=sno-0=https://192.168.126.10:2380",
			"--log-level=info"},
		{"kube-controller-manager", "kube-controller-manager-pod.yaml", "kube-controller-manager", "args", " --feature-gates=NotAGate=true",
			"--openshift-config="},
	} {
		for _, alsoOther := range []bool{false, true} {
			dir := fakeRender(t)
			editScript(t, filepath.Join(dir, "rootfs/etc/kubernetes/manifests", c.pod), c.container, c.field, func(s string) string {
				// The excused flags go on the first exec statement, before "||" where there is one.
				i := strings.Index(s, "exec ")
				end := strings.Index(s[i:], "\n")
				line := s[i : i+end]
				if j := strings.Index(line, " ||"); j >= 0 {
					line = line[:j] + c.excused + line[j:]
				} else {
					line += c.excused
				}
				if alsoOther {
					line = strings.Replace(line, c.other, c.other+"x", 1)
				}
				return s[:i] + line + s[i+end:]
			})
			r := compare(t, dir, c.component)
			if alsoOther {
				if len(r.Unexplained) != 1 || !strings.Contains(r.Unexplained[0].Path, "containers["+c.container+"]."+c.field) {
					t.Errorf("%s: a flag changed beside the excused ones: unexplained %v, want the script", c.component, r.Unexplained)
				}
			} else if !r.OK() || len(r.Adapted) != 1 {
				t.Errorf("%s: only the excused flags added: unexplained %v, adapted %v", c.component, r.Unexplained, r.Adapted)
			}
		}
	}
}

// editScript rewrites, in a JSON pod manifest, the one multi-line string of a container's command or args.
func editScript(t *testing.T, file, container, field string, edit func(string) string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pod map[string]interface{}
	if err := json.Unmarshal(raw, &pod); err != nil {
		t.Fatal(err)
	}
	done := false
	for _, c := range pod["spec"].(map[string]interface{})["containers"].([]interface{}) {
		cm := c.(map[string]interface{})
		if cm["name"] != container {
			continue
		}
		for i, a := range cm[field].([]interface{}) {
			if s, ok := a.(string); ok && strings.Contains(s, "\n") {
				cm[field].([]interface{})[i] = edit(s)
				done = true
			}
		}
	}
	if !done {
		t.Fatalf("%s: no script in %s of container %s", file, field, container)
	}
	out, _ := json.Marshal(pod)
	if err := os.WriteFile(file, out, 0600); err != nil {
		t.Fatal(err)
	}
}

func TestExecStatements(t *testing.T) {
	s := "set -e\nif x; then\n  exec foo \\\n   --a=1   --b\nfi\necho exec not\n  exec bar\n"
	if got := foldStatements(execStatements(s)); got != "exec foo --a=1 --b ;; exec bar" {
		t.Errorf("got %q", got)
	}
	if got := foldStatements(execStatements("echo hi\n")); got != "none" {
		t.Errorf("got %q", got)
	}
}

func TestUnknownComponent(t *testing.T) {
	if _, err := Compare(Options{RenderDir: t.TempDir(), ExpectedDir: expectedDir, Components: []string{"kube-proxy"}}); err == nil || !strings.Contains(err.Error(), "unknown component") {
		t.Errorf("err = %v", err)
	}
}

func TestAroundShowsTheFirstDifference(t *testing.T) {
	long := strings.Repeat("--flag=value ", 60)
	e, g := around(long+"--log-level=info --tail", long+"--log-level=debug --tail")
	if !strings.Contains(e, "--log-level=info") || !strings.Contains(g, "--log-level=debug") || len(e) > 300 {
		t.Errorf("window does not show the difference: %q / %q", e, g)
	}
	if e, g := around("short", "other"); e != "short" || g != "other" {
		t.Errorf("short values changed: %q %q", e, g)
	}
}

// renumber moves a fake render's component to another revision, as renew does: its revision directory, and in its
// static pods the revision label, the hostPath of that directory and the startup monitor's --revision flag. keep
// leaves the old revision directory in place too (a node root keeps it for a rollback).
func renumber(t *testing.T, dir, comp string, from, to int, keep bool) {
	t.Helper()
	res := filepath.Join(dir, "rootfs/etc/kubernetes/static-pod-resources")
	oldDir, newDir := filepath.Join(res, fmt.Sprintf("%s-pod-%d", comp, from)), filepath.Join(res, fmt.Sprintf("%s-pod-%d", comp, to))
	for rel, f := range treetest.Read(t, oldDir) {
		writeFile(t, filepath.Join(newDir, rel), f.Mode.Perm(), f.Contents)
	}
	if !keep {
		if err := os.RemoveAll(oldDir); err != nil {
			t.Fatal(err)
		}
	}
	pods, _ := filepath.Glob(filepath.Join(dir, "rootfs/etc/kubernetes/manifests", comp+"*.yaml"))
	for _, p := range pods {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.NewReplacer(fmt.Sprintf(`"revision":"%d"`, from), fmt.Sprintf(`"revision":"%d"`, to),
			fmt.Sprintf("%s-pod-%d", comp, from), fmt.Sprintf("%s-pod-%d", comp, to),
			fmt.Sprintf("--revision=%d", from), fmt.Sprintf("--revision=%d", to)).Replace(string(b))
		if s == string(b) {
			t.Fatalf("%s: nothing to renumber", p)
		}
		writeFile(t, p, 0o600, []byte(s))
	}
}

// TestRenewedRenderConforms: a render whose etcd and kube-apiserver moved to revision 2 (renew) is compared at the
// revision its static pods run: nothing differs, as at revision 1, whether the old revision directory is gone (a
// render directory) or kept beside the new one (a node). A difference in the current revision is still found.
func TestRenewedRenderConforms(t *testing.T) {
	for _, keep := range []bool{false, true} {
		dir := fakeRender(t)
		renumber(t, dir, "etcd", 1, 2, keep)
		renumber(t, dir, "kube-apiserver", 1, 2, keep)
		r := compare(t, dir)
		if !r.OK() || len(r.Adapted) != 0 {
			var b strings.Builder
			r.Write(&b)
			t.Fatalf("keep=%v: a renewed render identical up to normalisation is reported as different:\n%s", keep, b.String())
		}
		cfg := filepath.Join(dir, "rootfs/etc/kubernetes/static-pod-resources/kube-apiserver-pod-2/configmaps/config/config.yaml")
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, cfg, 0o600, []byte(strings.Replace(string(b), "KubeAPIServerConfig", "Other", 1)))
		r = compare(t, dir)
		if len(r.Unexplained) != 1 || r.Unexplained[0].Path != "rootfs/etc/kubernetes/static-pod-resources/kube-apiserver-pod-2/configmaps/config/config.yaml:kind" {
			t.Errorf("keep=%v: a changed config in the current revision: %v", keep, r.Unexplained)
		}
	}
}

// TestReportIsText: the report shows values as text, not JSON escapes (\u003e for ">").
func TestReportIsText(t *testing.T) {
	dir := fakeRender(t)
	pod := filepath.Join(dir, "rootfs/etc/kubernetes/manifests/kube-apiserver-pod.yaml")
	b, _ := os.ReadFile(pod)
	writeFile(t, pod, 0o600, []byte(strings.Replace(string(b), "--insecure-port=6080", "--insecure-port=6080>/dev/null&<x", 1)))
	var out strings.Builder
	compare(t, dir).Write(&out)
	if !strings.Contains(out.String(), `got "--insecure-port=6080>/dev/null&<x"`) || strings.Contains(out.String(), `\u00`) {
		t.Errorf("report:\n%s", out.String())
	}
}
