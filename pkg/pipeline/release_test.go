package pipeline

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/releasetest"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/installconfig"
)

// mirrorHost is the mirror registry the tests' install-configs name.
const mirrorHost = "mirror.example.net:5000"

// withMirror is the example install-config with imageDigestSources mirroring source to mirrorHost/path.
func withMirror(t *testing.T, source, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return append(raw, []byte("imageDigestSources:\n- source: "+source+"\n  mirrors:\n  - "+mirrorHost+"/"+path+"\n")...)
}

// releaseOptions render the example with a mirror for the payload's repository (as `oc adm release mirror` makes
// one) into a new directory, with release (nil: none) as the release input.
func releaseOptions(t *testing.T, release []byte) Options {
	return Options{InstallConfigData: withMirror(t, releasetest.Repository, "ocp/release"), InstallConfig: "install-config.yaml",
		NodeIP: "192.168.126.10", NodeName: DefaultNodeName, Dir: filepath.Join(t.TempDir(), "aio"), CertValidity: certs.DefaultLeafValidity,
		ReleaseInfo: "release.json", ReleaseInfoData: release}
}

// payload is a release (oc adm release info's JSON) of every image the openshift flavor's nodes pull with the
// built-in pod network.
func payload(arch string) *releasetest.ReleaseInfo {
	return releasetest.Payload("4.20.8", arch, components.PulledImages(clusterconfig.FlavorOpenShift, true))
}

// TestReleaseThroughTheMirror: a render given a release and the mirror of its repository pulls every image by
// digest through the mirror, and says so; its version is the FeatureGate's; a re-render from the state takes the
// saved release (as renew and the worker command do: the input table's load).
func TestReleaseThroughTheMirror(t *testing.T) {
	testtools.Long(t, "renders twice")
	ctx := context.Background()
	info := payload("amd64")
	o := releaseOptions(t, releasetest.JSON(info))
	s, err := Render(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	pulled := components.PulledImages(clusterconfig.FlavorOpenShift, true)
	if want := "pulls 11 images, all by digest through " + mirrorHost; len(pulled) != 11 || s.Images != want {
		t.Errorf("images line %q, want %q (%d images: %v)", s.Images, want, len(pulled), pulled)
	}
	if want := "4.20.8 (" + releasetest.ReleaseRepository + "@" + info.Digest + ", amd64, from " + clusterconfig.ReleaseInfoForm + ")"; s.Release != want {
		t.Errorf("release line %q, want %q", s.Release, want)
	}
	for _, w := range s.Warnings {
		if strings.Contains(w, "mirror") {
			t.Errorf("warning: %s", w)
		}
	}
	// Every image the node runs is the release's: no default pull spec is left in the node's files, and each
	// release digest the node pulls is in them; the FeatureGate status is the release's version.
	var all strings.Builder
	featureGate := ""
	err = filepath.WalkDir(filepath.Join(o.Dir, "rootfs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if strings.Contains(string(b), "kind: FeatureGate\n") {
			featureGate = string(b)
		}
		all.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(all.String(), "quay.io/openshift/origin-") {
		t.Errorf("a default pull spec is left in the node's files")
	}
	for _, k := range pulled {
		if spec := releasetest.Repository + "@" + releasetest.Digest(k); !strings.Contains(all.String(), spec) {
			t.Errorf("%s's %s is not in the node's files", k, spec)
		}
	}
	if !strings.Contains(featureGate, "version: 4.20.8\n") {
		t.Errorf("the FeatureGate status is not 4.20.8's:\n%s", featureGate)
	}
	// The operators' pods say the release's version (their feature-gate readers look for that FeatureGate status).
	versions := regexp.MustCompile(`"name":"OPERATOR_IMAGE_VERSION","value":"([^"]*)"`).FindAllStringSubmatch(all.String(), -1)
	if len(versions) < 3 {
		t.Errorf("%d OPERATOR_IMAGE_VERSION in the node's files, want those of three pods at least", len(versions))
	}
	for _, v := range versions {
		if v[1] != "4.20.8" {
			t.Errorf("OPERATOR_IMAGE_VERSION %q, want the release's 4.20.8", v[1])
		}
	}

	again, err := Render(ctx, Options{Dir: o.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(again.FromState, "release info") || again.Images != s.Images || again.Release != s.Release {
		t.Errorf("re-render from the state: saved inputs %v, images %q, release %q", again.FromState, again.Images, again.Release)
	}
}

// TestMirrorsWithoutRelease is the hidden-input check: with mirrors and no release input, the render still pulls
// the default tags from their own registries, and warns naming each image that no mirror serves.
func TestMirrorsWithoutRelease(t *testing.T) {
	testtools.Long(t, "renders")
	o := releaseOptions(t, nil)
	o.ReleaseInfo = ""
	s, err := Render(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	pulled := components.PulledImages(clusterconfig.FlavorOpenShift, true)
	if !strings.HasPrefix(s.Images, "pulls 11 images: 11 from their own registries (the internet), not through a mirror (see the warnings): ") {
		t.Errorf("images line %q", s.Images)
	}
	for _, k := range pulled {
		want := "image " + k + " (quay.io/openshift/origin-" + k + ":4.20) is never pulled through a mirror: the install-config names no mirror for quay.io/openshift/origin-" + k
		if !slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
			t.Errorf("no warning %q in %q", want, s.Warnings)
		}
		if !strings.Contains(s.Images, k) {
			t.Errorf("images line lacks %s: %q", k, s.Images)
		}
	}
}

// TestReleasePrecedence: defaults < release < --images, and an --images entry by tag under the release's
// digest-only mirror is never pulled through it: a warning naming it.
func TestReleasePrecedence(t *testing.T) {
	o := releaseOptions(t, releasetest.JSON(payload("amd64")))
	tag := releasetest.Repository + ":tools-tag"
	o.Images, o.ImagesData = "images.yaml", []byte("tools: "+tag+"\n")
	in, err := Validate(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range components.ImageNames() {
		want := components.DefaultImages()[k]
		switch {
		case k == "tools":
			want = tag
		case slices.Contains(components.PulledImages(clusterconfig.FlavorOpenShift, true), k):
			want = releasetest.Repository + "@" + releasetest.Digest(k)
		}
		if in.Images[k] != want {
			t.Errorf("%s: %q, want %q", k, in.Images[k], want)
		}
	}
	p, err := imagePulls(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "pulls 11 images: 10 by digest through " + mirrorHost + "; 1 from their own registries (the internet), not through a mirror (see the warnings): tools"; p.Line() != want {
		t.Errorf("line %q, want %q", p.Line(), want)
	}
	want := "image tools (" + tag + ") is never pulled through a mirror: it is named by tag, and the install-config's mirrors of " + releasetest.Repository + " are digest-only"
	if len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], want) {
		t.Errorf("warnings %q, want one %q", p.Warnings, want)
	}
}

// TestUpstreamReleaseThroughTheMirror: the upstream flavor's release (an ImageStream by its keys, registry.k8s.io
// images by digest) pulls all through a mirror of registry.k8s.io; without the mirror, from registry.k8s.io; and a
// blocked source without a mirror for the pause image says nothing serves it.
func TestUpstreamReleaseThroughTheMirror(t *testing.T) {
	keys := components.PulledImages(clusterconfig.FlavorUpstream, true)
	if want := []string{"coredns", "etcd-upstream", "kube-apiserver", "kube-controller-manager", "kube-proxy", "kube-scheduler", "pod"}; !slices.Equal(keys, want) {
		t.Errorf("the upstream flavor pulls %v, want %v", keys, want)
	}
	specs := map[string]string{}
	for _, k := range keys {
		specs[k] = "registry.k8s.io/" + k + "@" + releasetest.Digest(k)
	}
	o := releaseOptions(t, releasetest.JSON(releasetest.ImageStream("1.34.3", specs)))
	o.InstallConfigData = withMirror(t, "registry.k8s.io", "k8s")
	o.Flavor = string(clusterconfig.FlavorUpstream)
	in, err := Validate(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := imagePulls(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "pulls 7 images, all by digest through " + mirrorHost; p.Line() != want || len(p.Warnings) != 0 {
		t.Errorf("line %q, want %q; warnings %q", p.Line(), want, p.Warnings)
	}
	if in.PayloadVersion() != "1.34.3" {
		t.Errorf("version %q", in.PayloadVersion())
	}

	raw, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	o.InstallConfigData = raw
	if in, err = Validate(o); err != nil {
		t.Fatal(err)
	}
	if p, err = imagePulls(in); err != nil {
		t.Fatal(err)
	}
	if want := "pulls 7 images, all by digest, each from its own registry (the install-config names no mirror)"; p.Line() != want || len(p.Warnings) != 0 {
		t.Errorf("without mirrors: line %q, want %q; warnings %q", p.Line(), want, p.Warnings)
	}

	// registry.k8s.io never contacted: an image by tag (an --images entry) is pulled from nowhere.
	o.InstallConfigData = append(raw, []byte("imageDigestSources:\n- source: registry.k8s.io\n  mirrors:\n  - "+mirrorHost+"/k8s\n  sourcePolicy: NeverContactSource\n")...)
	o.Images, o.ImagesData = "images.yaml", []byte("kube-proxy: registry.k8s.io/kube-proxy:v1.34.3\n")
	if in, err = Validate(o); err != nil {
		t.Fatal(err)
	}
	if p, err = imagePulls(in); err != nil {
		t.Fatal(err)
	}
	if want := "pulls 7 images: 6 by digest through " + mirrorHost + "; 1 from nowhere, their source blocked and no mirror for them (see the warnings): kube-proxy"; p.Line() != want || len(p.Warnings) != 1 ||
		!strings.Contains(p.Warnings[0], "image kube-proxy (registry.k8s.io/kube-proxy:v1.34.3) is never pulled through a mirror: it is named by tag") ||
		!strings.Contains(p.Warnings[0], "its source is blocked (sourcePolicy NeverContactSource): the node cannot pull it") {
		t.Errorf("blocked: line %q, want %q; warnings %q", p.Line(), want, p.Warnings)
	}
}

// TestBadReleaseInputs: each bad release input is one problem of the input releaseInfo naming the file and the
// field (the CLI's exit 1 with nothing written: cmd/render-static TestBadReleaseInfo).
func TestBadReleaseInputs(t *testing.T) {
	tagged := payload("amd64")
	tagged.References.Spec.Tags[0].From.Name = releasetest.Repository + ":latest"
	missing := payload("amd64")
	missing.References.Spec.Tags = missing.References.Spec.Tags[1:]
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"malformed JSON", []byte(`{"references": `), "release.json: malformed JSON: line 1, column 16"},
		{"other architecture", releasetest.JSON(payload("arm64")), "release.json: config.architecture: arm64, but the install-config's controlPlane.architecture is amd64"},
		{"tag", releasetest.JSON(tagged), "references.spec.tags[0].from.name (" + tagged.References.Spec.Tags[0].Name + "): \"" + releasetest.Repository + ":latest\" is not by digest"},
		{"missing component", releasetest.JSON(missing), "release.json: references.spec.tags: no " + payload("amd64").References.Spec.Tags[0].Name + ": the render's nodes pull this image"},
		{"neither", []byte(`{"kind": "ConfigMap", "apiVersion": "v1"}`), "release.json: kind \"ConfigMap\", apiVersion \"v1\": neither"},
	} {
		_, err := Validate(releaseOptions(t, c.raw))
		list, ok := err.(installconfig.ErrorList)
		if !ok || len(list) != 1 || list[0].Field != InReleaseInfo || !strings.Contains(list[0].Detail, c.want) {
			t.Errorf("%s: %v, want one %s problem with %q", c.name, err, InReleaseInfo, c.want)
		}
	}
}

// TestDisconnectedRecipe: the imageDigestSources of docs/disconnected.md's recipe, with a release of the
// payload's repositories (oc's JSON), pull every image by digest through the recipe's mirror.
func TestDisconnectedRecipe(t *testing.T) {
	doc, err := os.ReadFile(repo("docs/disconnected.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(\\s*imageDigestSources:\n.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/disconnected.md has no imageDigestSources block")
	}
	var block strings.Builder
	indent := len(string(m[1])) - len(strings.TrimLeft(string(m[1]), " "))
	for _, l := range strings.SplitAfter(string(m[1]), "\n") {
		block.WriteString(strings.TrimPrefix(l, strings.Repeat(" ", indent)))
	}
	raw, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	o := releaseOptions(t, releasetest.JSON(payload("amd64")))
	o.InstallConfigData = append(raw, block.String()...)
	in, err := Validate(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := imagePulls(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "pulls 11 images, all by digest through " + mirrorHost; p.Line() != want || len(p.Warnings) != 0 {
		t.Errorf("the recipe's mirrors: %q, want %q; warnings %q", p.Line(), want, p.Warnings)
	}
	if !strings.Contains(string(doc), p.Line()) {
		t.Errorf("docs/disconnected.md does not show the line the recipe gives: %q", p.Line())
	}
}
