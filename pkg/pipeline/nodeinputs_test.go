package pipeline

import (
	"context"
	"crypto/fips140"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
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
		"the ImageDigestMirrorSet":                                 {"kind: ImageDigestMirrorSet", "name: image-digest-mirror", "mirrorSourcePolicy: NeverContactSource", "source: quay.io/openshift-release-dev/ocp-release"},
		"its CRD (as JSON on the node: export.Manifest.NodeBytes)": {`"kind":"CustomResourceDefinition"`, `"name":"imagedigestmirrorsets.config.openshift.io"`},
		"user-ca-bundle":                                           {"kind: ConfigMap", "name: user-ca-bundle", "openshift.io/owning-component: End User", "BEGIN CERTIFICATE"},
		"Infrastructure AllNodes":                                  {"kind: Infrastructure", "cpuPartitioning: AllNodes"},
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
		// The four components' pods and kube-proxy's (the kube-apiserver startup monitor is a short-lived helper,
		// not checked here).
		if strings.HasPrefix(p, "/etc/kubernetes/manifests/") && !strings.Contains(p, "startup-monitor") {
			pods++
			if !strings.Contains(string(b), `target.workload.openshift.io/management`) {
				t.Errorf("%s lacks the management workload annotation", p)
			}
		}
	}
	if pods != 5 {
		t.Errorf("%d static pods, want 5", pods)
	}
}

// TestRefusedFields: an install-config with a field the render cannot honour fails validation naming the field
// and why, before anything is rendered; fips: true is not among them (TestFIPSNeedsFIPSMode).
func TestRefusedFields(t *testing.T) {
	o := testOptions(t, "testdata/installconfig/bad/refused-fields.yaml", "192.168.126.10")
	_, err := Validate(o)
	var list installconfig.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Validate: %v, want field errors", err)
	}
	found := false
	for _, e := range list {
		if e.Field == "controlPlane.hyperthreading" && strings.Contains(e.Detail, "cannot be honoured by aio.ign") {
			found = true
		}
		if e.Field == "fips" {
			t.Errorf("fips refused: %v", e)
		}
	}
	if !found {
		t.Errorf("no hyperthreading refusal in %v", list)
	}
}

// TestFIPSNeedsFIPSMode: a fips: true install-config validates, and its render runs only in a process in FIPS
// 140-3 mode: in this one (go test runs without GODEBUG=fips140=on) Render fails with a FIPSModeError before
// anything is written; in FIPS mode (GODEBUG=fips140=on go test ...) it renders, with the encapsulated
// MachineConfig in aio.ign and the summary naming the mode. The command's own start again in FIPS mode is
// cmd/render-static's TestFIPSRestart.
func TestFIPSNeedsFIPSMode(t *testing.T) {
	o := testOptions(t, "testdata/installconfig/good/fips.yaml", "192.168.126.10")
	dir := o.Dir
	in, err := Validate(o)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !in.InstallConfig.FIPS {
		t.Fatal("the test config has no fips: true")
	}
	s, err := Render(context.Background(), o)
	if !fips140.Enabled() {
		if !errors.As(err, new(FIPSModeError)) {
			t.Fatalf("Render outside FIPS mode: %v, want a FIPSModeError", err)
		}
		if _, serr := os.Stat(dir); !errors.Is(serr, fs.ErrNotExist) {
			t.Errorf("the refused render left %s: %v", dir, serr)
		}
		return
	}
	if err != nil {
		t.Fatalf("Render in FIPS mode: %v", err)
	}
	if !strings.HasPrefix(s.Crypto, "FIPS 140-3 mode") {
		t.Errorf("summary crypto %q", s.Crypto)
	}
	if _, err := os.Stat(filepath.Join(dir, "rootfs", node.EncapsulatedMachineConfigPath)); err != nil {
		t.Errorf("no encapsulated MachineConfig: %v", err)
	}
}

// TestFIPSModeEnv: the command's environment for its start in FIPS mode adds fips140=on to GODEBUG, keeping the
// other settings, and adds nothing when GODEBUG already names fips140 (the user's setting stands).
func TestFIPSModeEnv(t *testing.T) {
	for _, c := range []struct {
		env, want []string
		added     bool
	}{
		{[]string{"PATH=/bin"}, []string{"PATH=/bin", "GODEBUG=fips140=on"}, true},
		{[]string{"GODEBUG=", "A=b"}, []string{"GODEBUG=fips140=on", "A=b"}, true},
		{[]string{"GODEBUG=http2client=0"}, []string{"GODEBUG=http2client=0,fips140=on"}, true},
		{[]string{"GODEBUG=x=1, fips140=off"}, []string{"GODEBUG=x=1, fips140=off"}, false},
		{[]string{"GODEBUG=fips140=only"}, []string{"GODEBUG=fips140=only"}, false},
	} {
		got, added := FIPSModeEnv(c.env)
		if !slices.Equal(got, c.want) || added != c.added {
			t.Errorf("FIPSModeEnv(%q) = %q, %v; want %q, %v", c.env, got, added, c.want, c.added)
		}
	}
}
