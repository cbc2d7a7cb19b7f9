// Package releasetest writes release inputs (--release-info) as oc writes them, for tests: the JSON of `oc adm
// release info --output=json` built from a struct with the field names of oc's own (openshift/oc
// pkg/cli/admin/release/info.go ReleaseInfo, new.go CincinnatiMetadata, image_mapper.go ComponentVersion, and
// library-go pkg/image/dockerv1client types.go DockerImageConfig), and the payload's image-references ImageStream
// (openshift/api image/v1, the type oc reads and writes it with). Nothing here is a pasted sample.
package releasetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReleaseInfo has the JSON field names of oc's ReleaseInfo (info.go), the fields oc leaves out of JSON
// (`json:"-"`) left out.
type ReleaseInfo struct {
	Image                       string                      `json:"image"`
	Digest                      string                      `json:"digest"`
	ContentDigest               string                      `json:"contentDigest"`
	ManifestListDigest          string                      `json:"listDigest"`
	Config                      *DockerImageConfig          `json:"config"`
	Metadata                    *CincinnatiMetadata         `json:"metadata"`
	References                  *imagev1.ImageStream        `json:"references"`
	DeprecatedComponentVersions map[string]string           `json:"versions"`
	ComponentVersions           map[string]ComponentVersion `json:"displayVersions"`
	ComponentTags               map[string]string           `json:"versionsTags"`
	Images                      map[string]*Image           `json:"images"`
	Warnings                    []string                    `json:"warnings"`
}

// ComponentVersion is oc's (image_mapper.go): no JSON tags, so its Go field names.
type ComponentVersion struct {
	Version     string
	DisplayName string
}

// Image is oc's Image (info.go), as far as a fixture fills it.
type Image struct {
	Name          string             `json:"name"`
	Digest        string             `json:"digest"`
	ContentDigest string             `json:"contentDigest"`
	ListDigest    string             `json:"listDigest"`
	MediaType     string             `json:"mediaType"`
	Config        *DockerImageConfig `json:"config"`
}

// DockerImageConfig is library-go's (pkg/image/dockerv1client types.go), as far as a fixture fills it.
type DockerImageConfig struct {
	ID           string    `json:"id"`
	Created      time.Time `json:"created"`
	Architecture string    `json:"architecture,omitempty"`
	OS           string    `json:"os,omitempty"`
}

// CincinnatiMetadata is oc's (new.go): the release-metadata file.
type CincinnatiMetadata struct {
	Kind     string         `json:"kind"`
	Version  string         `json:"version"`
	Previous []string       `json:"previous"`
	Next     []string       `json:"next,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Repository is where a payload's images live (every tag of a release in one repository, as OpenShift's), and
// ReleaseRepository its release images'.
const (
	Repository        = "quay.io/openshift-release-dev/ocp-v4.0-art-dev"
	ReleaseRepository = "quay.io/openshift-release-dev/ocp-release"
)

// Digest is a digest made from s.
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ImageStream is an image-references ImageStream named version (its metadata.name), with a DockerImage tag per
// entry of specs (tag name → pull spec), in name order.
func ImageStream(version string, specs map[string]string) *imagev1.ImageStream {
	names := make([]string, 0, len(specs))
	for k := range specs {
		names = append(names, k)
	}
	sort.Strings(names)
	is := &imagev1.ImageStream{
		TypeMeta:   metav1.TypeMeta{Kind: "ImageStream", APIVersion: "image.openshift.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: version, CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))},
	}
	for _, n := range names {
		is.Spec.Tags = append(is.Spec.Tags, imagev1.TagReference{Name: n, From: &corev1.ObjectReference{Kind: "DockerImage", Name: specs[n]},
			Annotations: map[string]string{"io.openshift.build.source-location": "https://github.com/openshift/" + n}})
	}
	return is
}

// Specs are tags by digest in Repository, one per name.
func Specs(names []string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = Repository + "@" + Digest(n)
	}
	return out
}

// Payload is a release of version for arch (an image config's name: amd64, arm64, ...) whose references are
// Specs(names), as `oc adm release info --output=json ReleaseRepository:<version>-x86_64` writes it.
func Payload(version, arch string, names []string) *ReleaseInfo {
	specs := Specs(names)
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &ReleaseInfo{
		Image:                       ReleaseRepository + ":" + version + "-x86_64",
		Digest:                      Digest("release " + version),
		ContentDigest:               Digest("release content " + version),
		Config:                      &DockerImageConfig{ID: Digest("config " + version), Created: created, Architecture: arch, OS: "linux"},
		Metadata:                    &CincinnatiMetadata{Kind: "cincinnati-metadata-v0", Version: version, Previous: []string{"4.20.0"}},
		References:                  ImageStream(version, specs),
		DeprecatedComponentVersions: map[string]string{"kubernetes": "1.33.5"},
		ComponentVersions:           map[string]ComponentVersion{"kubernetes": {Version: "1.33.5", DisplayName: "Kubernetes"}},
		Images:                      map[string]*Image{},
	}
	for n, s := range specs {
		r.Images[n] = &Image{Name: s, Digest: Digest(n), ContentDigest: Digest(n), MediaType: "application/vnd.docker.distribution.manifest.v2+json",
			Config: &DockerImageConfig{ID: Digest("config " + n), Created: created, Architecture: arch, OS: "linux"}}
	}
	return r
}

// JSON is v as oc writes it (indented JSON).
func JSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
