package apiserver_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/pkg/conformance"
	"github.com/render-static/render-static/pkg/operator"
)

// This file compares the render with what the real operator produced (testdata/conformance/sno/expected)
// through pkg/conformance: static pods field by field (images by component, shell scripts by their exec
// statements), config files field by field, and the installer's file list with modes. Differences are allowed
// only when manifests/kube-apiserver/conformance-adaptations.yaml lists them with their cause, and every entry
// there must explain at least one difference (no stale entries).

// conformanceReport writes the render's node tree as a render output directory (rootfs/) and compares it with
// the expected tree for kube-apiserver.
func conformanceReport(t *testing.T, r *rendered) *conformance.Report {
	t.Helper()
	dir := t.TempDir()
	for _, f := range r.tree.Files() {
		p := filepath.Join(dir, "rootfs", filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Contents, f.Mode); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := conformance.Compare(conformance.Options{
		RenderDir: dir, ExpectedDir: rendertest.ExpectedDir(),
		Components: []string{"kube-apiserver"}, Images: r.in.Images,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

var (
	reportOnce sync.Once
	reportRes  *conformance.Report
)

func snoReport(t *testing.T) *conformance.Report {
	t.Helper()
	r := sno(t)
	reportOnce.Do(func() { reportRes = conformanceReport(t, r) })
	if reportRes == nil {
		t.Fatal("the conformance comparison failed")
	}
	return reportRes
}

// checkReport fails for unexplained differences whose path starts with one of prefixes.
func checkReport(t *testing.T, rep *conformance.Report, prefixes ...string) {
	t.Helper()
	for _, d := range rep.Unexplained {
		for _, p := range prefixes {
			if strings.HasPrefix(d.Path, p) {
				t.Errorf("%s\n   expected: %s\n   got:      %s", d.Path, clip(d.Expected), clip(d.Got))
				break
			}
		}
	}
	t.Logf("%d items compared; %d known adaptations", rep.Compared, len(rep.Adapted))
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func decodeYAML(t *testing.T, raw []byte) map[string]interface{} {
	t.Helper()
	var out map[string]interface{}
	if err := yaml.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode: %v\n%s", err, raw)
	}
	return out
}

func jwtClaims(t *testing.T, token string) map[string]interface{} {
	t.Helper()
	parts := strings.Split(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("token claims: %v", err)
	}
	var out map[string]interface{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func readReference(t *testing.T, p string) []byte {
	t.Helper()
	raw, err := os.ReadFile(rendertest.Reference(p))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestPodConformance: the installed static pods vs the operator's, field by field (containers, init containers,
// args, env, volumes, mounts, ports, probes, resources, security context, grace period).
func TestPodConformance(t *testing.T) {
	r := sno(t)
	checkReport(t, snoReport(t), "pods/")
	for _, p := range []string{"etc/kubernetes/manifests/kube-apiserver-pod.yaml", "etc/kubernetes/manifests/kube-apiserver-startup-monitor-pod.yaml"} {
		if _, ok := r.files[p]; !ok {
			t.Errorf("no %s", p)
			continue
		}
		// The copy in the revision directory is the same pod.
		if rev := r.file(t, strings.Replace(p, "manifests/", "static-pod-resources/kube-apiserver-pod-1/", 1)); !bytes.Equal(rev, r.file(t, p)) {
			t.Errorf("%s differs from its copy in the revision directory", p)
		}
	}
	// The comparison normalises versions: OPERATOR_IMAGE_VERSION must be the operator image's version.
	pod := podOf(t, r.file(t, "etc/kubernetes/manifests/kube-apiserver-pod.yaml"))
	wantVersion := operator.ImageTag(r.in.Images.Image("cluster-kube-apiserver-operator"))
	if got := envOf(pod, "kube-apiserver-cert-regeneration-controller", "OPERATOR_IMAGE_VERSION"); got != wantVersion || got == "" {
		t.Errorf("OPERATOR_IMAGE_VERSION = %q, want %q", got, wantVersion)
	}
}

// TestConfigConformance: config.yaml, the audit policy and the kubeconfigs of the revision and cert directories
// vs the operator's, field by field; the kubeconfigs and the pod configmap's other keys byte by byte.
func TestConfigConformance(t *testing.T) {
	r := sno(t)
	checkReport(t, snoReport(t), "rootfs/")
	base := "rootfs/etc/kubernetes/static-pod-resources/"
	for _, p := range []string{
		"kube-apiserver-pod-1/configmaps/kube-apiserver-cert-syncer-kubeconfig/kubeconfig",
		"kube-apiserver-pod-1/configmaps/kube-apiserver-pod/forceRedeploymentReason",
		"kube-apiserver-pod-1/configmaps/kube-apiserver-pod/version",
		"kube-apiserver-certs/configmaps/check-endpoints-kubeconfig/kubeconfig",
		"kube-apiserver-certs/configmaps/control-plane-node-kubeconfig/kubeconfig",
	} {
		got := r.file(t, "etc/kubernetes/static-pod-resources/"+p)
		if want := readReference(t, "expected/"+base+p); !bytes.Equal(got, want) {
			t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", p, got, want)
		}
	}
}

// TestFilesConformance: every file the operator's installer wrote for kube-apiserver is there with its mode, and
// nothing else is, but for listed adaptations.
func TestFilesConformance(t *testing.T) {
	checkReport(t, snoReport(t), "files:")
}

// TestAdaptationsAreCurrent: every documented adaptation explains a difference of this render, and nothing is
// left unexplained.
func TestAdaptationsAreCurrent(t *testing.T) {
	rep := snoReport(t)
	for _, a := range rep.Unused {
		t.Errorf("conformance-adaptations.yaml: %s explains no difference (stale)", a)
	}
	if !rep.OK() {
		var b strings.Builder
		rep.Write(&b)
		t.Errorf("unexplained differences:\n%s", b.String())
	}
}
