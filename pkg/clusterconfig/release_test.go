package clusterconfig

import (
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/releasetest"
)

var payloadImages = []string{"hyperkube", "etcd", "pod", "tools"}

// TestParseReleaseForms: both forms, as oc writes them, give the payload's pull specs, version and (the JSON's)
// architecture and release pull spec.
func TestParseReleaseForms(t *testing.T) {
	info := releasetest.Payload("4.20.8", "amd64", payloadImages)
	is := releasetest.ImageStream("4.20.8", releasetest.Specs(payloadImages))
	for _, c := range []struct {
		name, form, arch, pullSpec string
		raw                        []byte
	}{
		{"release info", ReleaseInfoForm, "amd64", releasetest.ReleaseRepository + "@" + info.Digest, releasetest.JSON(info)},
		{"image-references", ImageReferencesForm, "", "", releasetest.JSON(is)},
	} {
		r, err := ParseRelease(c.raw, "release.json")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Form != c.form || r.Version != "4.20.8" || r.Architecture != c.arch || r.PullSpec != c.pullSpec || r.Multi {
			t.Errorf("%s: %+v", c.name, r)
		}
		for _, n := range payloadImages {
			if want := releasetest.Repository + "@" + releasetest.Digest(n); r.Images[n] != want {
				t.Errorf("%s: %s is %q, want %q", c.name, n, r.Images[n], want)
			}
		}
		got, err := r.Over(Images{"hyperkube": "a/b:1", "etcd": "a/c:1", "kube-apiserver": "k/a:1"}, []string{"hyperkube", "etcd"}, "amd64")
		if err != nil {
			t.Fatalf("%s: Over: %v", c.name, err)
		}
		if got["hyperkube"] != r.Images["hyperkube"] || got["kube-apiserver"] != "k/a:1" || got["pod"] != "" {
			t.Errorf("%s: Over: %v", c.name, got)
		}
	}
}

// TestReleaseVersionIsThePayloads: the release's version is the FeatureGate status version, over the operator
// image's tag.
func TestReleaseVersionIsThePayloads(t *testing.T) {
	in := &Inputs{Images: Images{"cluster-kube-apiserver-operator": "quay.io/openshift/origin-cluster-kube-apiserver-operator:4.19"}}
	if v := in.PayloadVersion(); v != "4.19" {
		t.Fatalf("without a release: %q", v)
	}
	r, err := ParseRelease(releasetest.JSON(releasetest.Payload("4.20.8", "amd64", payloadImages)), "r")
	if err != nil {
		t.Fatal(err)
	}
	in.Release = r
	if v := in.PayloadVersion(); v != "4.20.8" {
		t.Errorf("with release 4.20.8: %q", v)
	}
}

// TestBadReleases: each bad input is one error naming the file and the field.
func TestBadReleases(t *testing.T) {
	tagged := releasetest.Payload("4.20.8", "amd64", payloadImages)
	tagged.References.Spec.Tags[1].From.Name = "quay.io/openshift/origin-hyperkube:4.20"
	wrongKind := releasetest.ImageStream("4.20.8", releasetest.Specs(payloadImages))
	wrongKind.Kind = "ImageStreamTag"
	noArch := releasetest.Payload("4.20.8", "amd64", payloadImages)
	noArch.Config = nil
	for _, c := range []struct {
		name string
		raw  []byte
		want []string
	}{
		{"malformed JSON", []byte("{\n  \"references\": {\n    \"spec\": [\n"), []string{"release.json: malformed JSON: line 4, column 1"}},
		{"YAML", []byte("kind: ImageStream\napiVersion: image.openshift.io/v1\n"), []string{"malformed JSON: line 1, column 1"}},
		{"tag", releasetest.JSON(tagged), []string{`references.spec.tags[1].from.name (hyperkube): "quay.io/openshift/origin-hyperkube:4.20" is not by digest`}},
		{"neither", []byte(`{"apiVersion": "v1", "kind": "List", "items": []}`), []string{`kind "List", apiVersion "v1": neither the JSON of`}},
		{"not a kind of ours", releasetest.JSON(wrongKind), []string{`kind "ImageStreamTag"`, "neither"}},
		{"no references", []byte(`{"image": "quay.io/x/y:1", "digest": "sha256:00"}`), []string{"release.json: neither"}},
		{"an array", []byte(`[]`), []string{"not a JSON object"}},
		{"no architecture", releasetest.JSON(noArch), []string{"config.architecture: missing"}},
	} {
		_, err := ParseRelease(c.raw, "release.json")
		if err == nil {
			t.Errorf("%s: parsed", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
}

// TestReleaseOverChecks: a component the render's nodes pull missing from the release, and a release of another
// architecture than the install-config's, are errors naming the field; oc's and the release tags' architecture
// names are the installer's.
func TestReleaseOverChecks(t *testing.T) {
	parse := func(info *releasetest.ReleaseInfo) *Release {
		t.Helper()
		r, err := ParseRelease(releasetest.JSON(info), "r")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	defaults := Images{"hyperkube": "a/b:1", "etcd": "a/c:1", "pod": "a/d:1", "tools": "a/e:1", "coredns": "a/f:1"}
	r := parse(releasetest.Payload("4.20.8", "amd64", payloadImages))
	if _, err := r.Over(defaults, []string{"hyperkube", "coredns"}, "amd64"); err == nil || !strings.Contains(err.Error(), "references.spec.tags: no coredns") {
		t.Errorf("missing coredns: %v", err)
	}
	if _, err := r.Over(defaults, payloadImages, "arm64"); err == nil || !strings.Contains(err.Error(), "config.architecture: amd64, but the install-config's controlPlane.architecture is arm64") {
		t.Errorf("amd64 release for arm64: %v", err)
	}
	if r := parse(releasetest.Payload("4.20.8", "x86_64", payloadImages)); r.Architecture != "amd64" {
		t.Errorf("x86_64 is %q", r.Architecture)
	}
	// A multi-architecture release (a manifest list): oc describes one of its images; the error says how to
	// describe the node's.
	multi := releasetest.Payload("4.20.8", "amd64", payloadImages)
	multi.ManifestListDigest = releasetest.Digest("list")
	m := parse(multi)
	if !m.Multi || m.PullSpec != releasetest.ReleaseRepository+"@"+multi.ManifestListDigest {
		t.Errorf("multi: %+v", m)
	}
	if _, err := m.Over(defaults, payloadImages, "arm64"); err == nil || !strings.Contains(err.Error(), "--filter-by-os=linux/arm64") {
		t.Errorf("multi for arm64: %v", err)
	}
	if _, err := m.Over(defaults, payloadImages, "amd64"); err != nil {
		t.Errorf("multi for amd64: %v", err)
	}
	// An ImageStream says no architecture: nothing to check.
	is, err := ParseRelease(releasetest.JSON(releasetest.ImageStream("1.34.3", releasetest.Specs(payloadImages))), "is")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := is.Over(defaults, payloadImages, "s390x"); err != nil {
		t.Errorf("ImageStream: %v", err)
	}
	if d := is.Describe(); d != "1.34.3 (from "+ImageReferencesForm+")" {
		t.Errorf("Describe: %q", d)
	}
}
