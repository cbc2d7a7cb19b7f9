package clusterconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	imagev1 "github.com/openshift/api/image/v1"
	"go.podman.io/image/v5/docker/reference"
)

// A release input (--release-info): the images of a release payload, by digest, from one of two files.
//
//   - The JSON of `oc adm release info --output=json <release>`: openshift/oc pkg/cli/admin/release/info.go, its
//     ReleaseInfo struct: "image" (the pull spec it was given), "digest", "contentDigest", "listDigest" (set when the
//     release image is a manifest list: a multi-architecture release), "config" (the image config,
//     library-go pkg/image/dockerv1client DockerImageConfig: "architecture", "os"), "metadata" (the
//     release-metadata file, new.go's CincinnatiMetadata: "version") and "references" (the payload's
//     image-references ImageStream).
//   - The payload's image-references file alone: an ImageStream (kind ImageStream, apiVersion image.openshift.io/v1,
//     as new.go checks it when it reads one), whose metadata.name is the release's name (info.go PreferredName falls
//     back to it) and whose spec.tags[] name each image of the payload (name) and its pull spec (from.name, from.kind
//     DockerImage: info.go retrieveReleaseImages skips other kinds).
//
// The tag names are the payload's component names, which the openshift flavor's --images keys are (hyperkube, etcd,
// cluster-kube-apiserver-operator, pod, tools, kube-proxy, coredns, ...). No payload exists for the upstream
// flavor: an ImageStream written for it names its tags by that flavor's keys (kube-apiserver, etcd-upstream, ...).

// Release is a release input, parsed (ParseRelease).
type Release struct {
	// Version is the release's version: the JSON's metadata.version, else the ImageStream's metadata.name ("": none).
	Version string
	// Form says which of the two files it was: ReleaseInfoForm or ImageReferencesForm.
	Form string
	// PullSpec is the release image by digest (the JSON's; "" for an ImageStream): as `oc adm release info` says
	// "Pull From", the manifest list's digest for a multi-architecture release.
	PullSpec string
	// Architecture is the release image's architecture as the JSON's config says it, in the installer's names
	// (ArchitectureOf); "" for an ImageStream, which says none. Multi: the release is a manifest list (listDigest
	// set: info.go's Platform says "multi (os/arch)"), and Architecture is that of the one image oc described from
	// it: the one its --filter-by-os names, else the one of oc's own platform (the command's help), so that a
	// mismatch asks for the node's with --filter-by-os.
	Architecture string
	Multi        bool
	// Images are the payload's pull specs by tag name, as the file gives them.
	Images Images
}

// The release input's two forms, as messages and the summary name them.
const (
	ReleaseInfoForm     = "oc adm release info --output=json"
	ImageReferencesForm = "image-references ImageStream"
)

// releaseInfo mirrors the fields of oc's ReleaseInfo (openshift/oc pkg/cli/admin/release/info.go) a render reads;
// oc writes more (displayVersions, images, warnings, ...), which are ignored.
type releaseInfo struct {
	Image         string `json:"image"`
	Digest        string `json:"digest"`
	ContentDigest string `json:"contentDigest"`
	ListDigest    string `json:"listDigest"`
	Config        *struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	} `json:"config"`
	Metadata *struct {
		Version string `json:"version"`
	} `json:"metadata"`
	References *imagev1.ImageStream `json:"references"`
}

// ParseRelease reads a release input (raw, the file name in messages): the JSON of `oc adm release info
// --output=json`, or an image-references ImageStream. Malformed JSON, a file of neither form, a tag without a pull
// spec and a pull spec not by digest are errors naming the field.
func ParseRelease(raw []byte, name string) (*Release, error) {
	var top map[string]json.RawMessage
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%s: malformed JSON: %s", name, jsonError(raw, json.Unmarshal(raw, &top)))
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %s", name, neither)
	}
	var r Release
	var is *imagev1.ImageStream
	switch {
	case top["kind"] != nil || top["apiVersion"] != nil:
		is = &imagev1.ImageStream{}
		if err := json.Unmarshal(raw, is); err != nil {
			return nil, fmt.Errorf("%s: malformed JSON: %s", name, jsonError(raw, err))
		}
		if is.Kind != "ImageStream" || is.APIVersion != imagev1.GroupVersion.String() {
			return nil, fmt.Errorf("%s: kind %q, apiVersion %q: %s", name, is.Kind, is.APIVersion, neither)
		}
		r.Form, r.Version = ImageReferencesForm, is.Name
	case top["references"] != nil:
		var info releaseInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			return nil, fmt.Errorf("%s: malformed JSON: %s", name, jsonError(raw, err))
		}
		if info.References == nil {
			return nil, fmt.Errorf("%s: references: null: %s", name, neither)
		}
		is = info.References
		r.Form, r.Version = ReleaseInfoForm, is.Name
		if info.Metadata != nil && info.Metadata.Version != "" {
			r.Version = info.Metadata.Version
		}
		if info.Config == nil || info.Config.Architecture == "" {
			return nil, fmt.Errorf("%s: config.architecture: missing: oc writes the release image's architecture there", name)
		}
		r.Architecture, r.Multi = ArchitectureOf(info.Config.Architecture), info.ListDigest != ""
		dgst := info.Digest
		if r.Multi {
			dgst = info.ListDigest
		}
		if info.Image != "" && dgst != "" {
			if ref, err := reference.ParseNormalizedNamed(info.Image); err == nil {
				r.PullSpec = ref.Name() + "@" + dgst
			}
		}
	default:
		return nil, fmt.Errorf("%s: %s", name, neither)
	}
	r.Images = Images{}
	var errs []string
	for i, t := range is.Spec.Tags {
		field := fmt.Sprintf("spec.tags[%d]", i)
		if r.Form == ReleaseInfoForm {
			field = "references." + field
		}
		switch {
		case t.Name == "":
			errs = append(errs, field+".name: missing")
		case t.From == nil || t.From.Kind != "DockerImage" || t.From.Name == "":
			errs = append(errs, fmt.Sprintf("%s.from (%s): no DockerImage pull spec", field, t.Name))
		default:
			if msg := digestOnly(t.From.Name); msg != "" {
				errs = append(errs, fmt.Sprintf("%s.from.name (%s): %s", field, t.Name, msg))
				continue
			}
			r.Images[t.Name] = t.From.Name
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %s", name, strings.Join(errs, "; "))
	}
	return &r, nil
}

const neither = "neither the JSON of `" + ReleaseInfoForm + "` (an object with references) nor a payload's image-references (kind ImageStream, apiVersion image.openshift.io/v1)"

// jsonError says where the JSON is malformed: the line and column of a syntax error.
func jsonError(raw []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var off int64
	eof := int64(0) // at the end of the input, the column after its last byte
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
		if off == int64(len(raw)) && strings.Contains(syn.Error(), "end of JSON input") {
			eof = 1
		}
	case errors.As(err, &typ):
		off = typ.Offset
	default:
		return err.Error()
	}
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	line := 1 + bytes.Count(raw[:off], []byte("\n"))
	// The offset is past the byte that failed: its column is the bytes before the offset on its line.
	col := max(off-int64(bytes.LastIndexByte(raw[:off], '\n'))-1+eof, 1)
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}

// digestOnly says what is wrong with a release's pull spec ("": a valid reference by digest). A release names its
// images by digest; a tag could change under the cluster, and a digest-only mirror never serves it.
func digestOnly(spec string) string {
	ref, err := reference.ParseNormalizedNamed(spec)
	if err != nil {
		return fmt.Sprintf("%q is not an image pull spec: %v", spec, err)
	}
	if _, ok := ref.(reference.Canonical); !ok {
		return fmt.Sprintf("%q is not by digest (a release names its images @sha256:...)", spec)
	}
	return ""
}

// ArchitectureOf is an architecture in the installer's names (amd64, arm64, ppc64le, s390x: the install-config's
// controlPlane.architecture, which are also Go's and OCI image configs' names), from an image config's or a
// release name's (x86_64, aarch64: the names release tags carry).
func ArchitectureOf(arch string) string {
	switch a := strings.ToLower(arch); a {
	case "x86_64", "x86-64":
		return "amd64"
	case "aarch64":
		return "arm64"
	default:
		return a
	}
}

// Over is defaults with the release's pull specs: every image the release names by a key of defaults; each of
// required (the images the render's nodes pull) the release must name, and a release whose architecture is known
// must be arch's (the install-config's). Errors name the release's field.
func (r *Release) Over(defaults Images, required []string, arch string) (Images, error) {
	var errs []string
	if r.Architecture != "" && r.Architecture != arch {
		msg := fmt.Sprintf("config.architecture: %s, but the install-config's controlPlane.architecture is %s", r.Architecture, arch)
		if r.Multi {
			msg += fmt.Sprintf(": this release is multi-architecture (listDigest), and oc described its %s image: run oc adm release info with --filter-by-os=linux/%s", r.Architecture, arch)
		}
		errs = append(errs, msg)
	}
	out := Images{}
	for k, v := range defaults {
		out[k] = v
		if spec, ok := r.Images[k]; ok {
			out[k] = spec
		}
	}
	field := "spec.tags"
	if r.Form == ReleaseInfoForm {
		field = "references.spec.tags"
	}
	var missing []string
	for _, k := range required {
		if _, ok := r.Images[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		errs = append(errs, fmt.Sprintf("%s: no %s: the render's nodes pull %s (tag names are the image keys)", field, strings.Join(missing, ", "), plural(len(missing), "this image", "these images")))
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "; "))
	}
	return out, nil
}

// Describe is the release as the summary says it: its version and where it comes from ("": no release).
func (r *Release) Describe() string {
	if r == nil {
		return ""
	}
	v := r.Version
	if v == "" {
		v = "unnamed"
	}
	var from []string
	if r.PullSpec != "" {
		from = append(from, r.PullSpec)
	}
	if r.Architecture != "" {
		a := r.Architecture
		if r.Multi {
			a += " of a multi-architecture release"
		}
		from = append(from, a)
	}
	from = append(from, "from "+r.Form)
	return fmt.Sprintf("%s (%s)", v, strings.Join(from, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
