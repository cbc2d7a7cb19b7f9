package registries

import (
	"reflect"
	"testing"
)

// The mirrors the machine-config operator writes for an ImageDigestMirrorSet: digest-only mirrors, a blocked
// source for NeverContactSource.
const conf = `unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]
short-name-mode = ""

[[registry]]
  prefix = ""
  location = "quay.io/openshift-release-dev/ocp-v4.0-art-dev"

  [[registry.mirror]]
    location = "mirror.example.net:5000/ocp/release"
    pull-from-mirror = "digest-only"

[[registry]]
  prefix = ""
  location = "registry.k8s.io"
  blocked = true

  [[registry.mirror]]
    location = "mirror.example.net:5000/k8s"
    pull-from-mirror = "digest-only"
`

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestResolve(t *testing.T) {
	got, err := Resolve([]byte(conf), []string{
		"quay.io/openshift-release-dev/ocp-v4.0-art-dev@" + digest,
		"quay.io/openshift-release-dev/ocp-v4.0-art-dev:4.20",
		"registry.k8s.io/pause@" + digest,
		"registry.k8s.io/pause:3.10",
		"quay.io/other/image",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Pull{
		{Image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@" + digest, Digest: true, Sources: []Source{
			{Ref: "mirror.example.net:5000/ocp/release@" + digest, Mirror: true},
			{Ref: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@" + digest},
		}},
		{Image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev:4.20", Sources: []Source{
			{Ref: "quay.io/openshift-release-dev/ocp-v4.0-art-dev:4.20"},
		}},
		{Image: "registry.k8s.io/pause@" + digest, Digest: true, Sources: []Source{
			{Ref: "mirror.example.net:5000/k8s/pause@" + digest, Mirror: true},
			{Ref: "registry.k8s.io/pause@" + digest, Blocked: true},
		}},
		{Image: "registry.k8s.io/pause:3.10", Sources: []Source{
			{Ref: "registry.k8s.io/pause:3.10", Blocked: true},
		}},
		{Image: "quay.io/other/image", Sources: []Source{{Ref: "quay.io/other/image:latest"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Resolve:\n got %+v\nwant %+v", got, want)
	}
	if got[0].ViaMirrorOnly() || !got[2].ViaMirrorOnly() || got[3].ViaMirrorOnly() || len(got[3].Reachable()) != 0 {
		t.Errorf("ViaMirrorOnly/Reachable: %v %v %v %v", got[0].ViaMirrorOnly(), got[2].ViaMirrorOnly(), got[3].ViaMirrorOnly(), got[3].Reachable())
	}
	if _, err := Resolve([]byte("[[registry]\n"), []string{"a/b"}); err == nil {
		t.Error("a malformed registries.conf resolved")
	}
	if _, err := Resolve(nil, []string{"UPPER/case"}); err == nil {
		t.Error("a malformed image resolved")
	}
}
