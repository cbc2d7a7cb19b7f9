package pipeline

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/node"
)

// TestRenderUserInputs renders a disconnected single-node install-config (mirrors with a NeverContactSource
// source, the mirror registry's CA, cpuPartitioningMode AllNodes) and checks aio.ign: registries.conf, the trust
// anchor and the workload-pinning files on the node; the ImageDigestMirrorSet and its CRD, user-ca-bundle and a
// Proxy without trustedCA (policy Proxyonly, no proxy) among the exported manifests; every static pod carries
// the management workload annotation; ignition-validate accepts it.
func TestRenderUserInputs(t *testing.T) {
	testtools.Long(t, "renders the whole cluster")
	r := render(t, "testdata/installconfig/nodeinputs/disconnected.yaml", "")
	checkIgnitionValidate(t, filepath.Join(r.dir, "aio.ign"))
	for p, mode := range map[string]int{
		node.RegistriesConfPath: 0644, node.UserCATrustAnchorPath: 0600,
		node.WorkloadPinningPath: 0644, node.CRIOWorkloadPinningPath: 0644,
	} {
		if _, ok := r.files[p]; !ok {
			t.Errorf("aio.ign has no %s", p)
		} else if r.modes[p] != mode {
			t.Errorf("%s: mode %o, want %o", p, r.modes[p], mode)
		}
	}
	if !strings.Contains(string(r.files[node.RegistriesConfPath]), "location = \"mirror.example.com:8443/ocp/release\"\n    pull-from-mirror = \"digest-only\"") {
		t.Errorf("registries.conf:\n%s", r.files[node.RegistriesConfPath])
	}

	var manifests []string
	for p, b := range r.files {
		if strings.HasPrefix(p, node.ManifestsDir+"/") {
			manifests = append(manifests, string(b))
		}
	}
	has := func(parts ...string) bool {
		for _, m := range manifests {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(m, p)
			}
			if ok {
				return true
			}
		}
		return false
	}
	for what, parts := range map[string][]string{
		"the ImageDigestMirrorSet": {"kind: ImageDigestMirrorSet", "name: image-digest-mirror", "mirrorSourcePolicy: NeverContactSource", "source: quay.io/openshift-release-dev/ocp-release"},
		"its CRD":                  {"kind: CustomResourceDefinition", "name: imagedigestmirrorsets.config.openshift.io"},
		"user-ca-bundle":           {"kind: ConfigMap", "name: user-ca-bundle", "openshift.io/owning-component: End User", "BEGIN CERTIFICATE"},
		"Infrastructure AllNodes":  {"kind: Infrastructure", "cpuPartitioning: AllNodes"},
	} {
		if !has(parts...) {
			t.Errorf("no exported manifest is %s (%q)", what, parts)
		}
	}
	if has("kind: Proxy", "trustedCA:\n    name: user-ca-bundle") {
		t.Error("the Proxy names user-ca-bundle although the policy is Proxyonly and there is no proxy")
	}
	pods := 0
	for p, b := range r.files {
		// The four components' pods (the kube-apiserver startup monitor is a short-lived helper, not checked here).
		if strings.HasPrefix(p, "/etc/kubernetes/manifests/") && !strings.Contains(p, "startup-monitor") {
			pods++
			if !strings.Contains(string(b), `target.workload.openshift.io/management`) {
				t.Errorf("%s lacks the management workload annotation", p)
			}
		}
	}
	if pods != 4 {
		t.Errorf("%d static pods, want 4", pods)
	}
}

// TestRefusedFields: an install-config with a field the render cannot honour fails validation naming the field
// and why, before anything is rendered.
func TestRefusedFields(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	o := Options{InstallConfig: repo("testdata/installconfig/bad/refused-fields.yaml"), NodeIP: "192.168.126.10",
		NodeName: "sno-0", Dir: dir, CertValidity: certs.DefaultLeafValidity}
	_, err := Validate(o)
	var list installconfig.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Validate: %v, want field errors", err)
	}
	found := false
	for _, e := range list {
		if e.Field == "fips" && strings.Contains(e.Detail, "FIPS mode cannot be enabled by aio.ign") {
			found = true
		}
	}
	if !found {
		t.Errorf("no fips refusal in %v", list)
	}
}
