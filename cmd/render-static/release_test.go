package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/releasetest"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
)

// TestBadReleaseInfo: each bad --release-info (oc's JSON built from oc's field names, internal/testkit/releasetest)
// exits 1 with one problem of --release-info naming the file and the field, and writes nothing.
func TestBadReleaseInfo(t *testing.T) {
	good := func(arch string) *releasetest.ReleaseInfo {
		return releasetest.Payload("4.20.8", arch, components.PulledImages(clusterconfig.FlavorOpenShift, true))
	}
	tagged, missing := good("amd64"), good("amd64")
	tagged.References.Spec.Tags[2].From.Name = "quay.io/openshift/origin-" + tagged.References.Spec.Tags[2].Name + ":4.20"
	missing.References.Spec.Tags = missing.References.Spec.Tags[:len(missing.References.Spec.Tags)-1]
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"malformed", []byte("{\"references\": {]}\n"), ": malformed JSON: line 1, column 17"},
		{"arch", releasetest.JSON(good("s390x")), ": config.architecture: s390x, but the install-config's controlPlane.architecture is amd64"},
		{"tag", releasetest.JSON(tagged), ": references.spec.tags[2].from.name (" + tagged.References.Spec.Tags[2].Name + "): \"quay.io/openshift/origin-"},
		{"missing", releasetest.JSON(missing), ": references.spec.tags: no " + good("amd64").References.Spec.Tags[len(missing.References.Spec.Tags)].Name + ": "},
		{"neither", []byte("{\"apiVersion\": \"v1\", \"kind\": \"Secret\"}\n"), ": kind \"Secret\", apiVersion \"v1\": neither the JSON of"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			file, dir := filepath.Join(tmp, "release.json"), filepath.Join(tmp, "out")
			if err := os.WriteFile(file, c.raw, 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI("--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", "192.168.126.10",
				"--release-info", file, "--dir", dir)
			if code != 1 || stdout != "" {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if want := "  --release-info: " + file + c.want; !strings.Contains(stderr, want) || strings.Count(stderr, "--release-info: ") != 1 {
				t.Errorf("stderr lacks one %q:\n%s", want, stderr)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("output directory was created (%v)", err)
			}
		})
	}
}
