package state

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// writeSmallState writes a state of two Secrets and one operator resource into dir/state.
func writeSmallState(t *testing.T, dir string) {
	t.Helper()
	secret := func(name string) runtime.Object {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-etcd", Name: name}, Data: map[string][]byte{"tls.key": []byte("key of " + name)}}
		s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		return s
	}
	s := &State{Version: Version, InfraID: "sno-abcde", Objects: []runtime.Object{secret("etcd-signer"), secret("etcd-client")},
		Operators: map[string][]byte{"etcds": []byte(`{"spec":{}}`)}}
	if err := s.Write(dir); err != nil {
		t.Fatal(err)
	}
}

func TestLoadChecksEveryFile(t *testing.T) {
	signer := "objects/core_secret_openshift-etcd_etcd-signer.yaml"
	for _, tc := range []struct {
		name   string
		tamper func(root string) error
		want   string
	}{
		{"intact", func(string) error { return nil }, ""},
		{"object removed", func(root string) error { return os.Remove(filepath.Join(root, signer)) }, signer + ": missing (listed in SHA256SUMS)"},
		{"render.json removed", func(root string) error { return os.Remove(filepath.Join(root, "render.json")) }, "render.json: missing"},
		{"manifest removed", func(root string) error { return os.Remove(filepath.Join(root, SumsFile)) }, "SHA256SUMS: missing"},
		{"object changed", func(root string) error {
			return os.WriteFile(filepath.Join(root, signer), []byte("kind: Secret\n"), 0o600)
		}, signer + ": changed since it was written"},
		{"file added", func(root string) error {
			return os.WriteFile(filepath.Join(root, "objects", "core_secret_x_y.yaml"), []byte("kind: Secret\n"), 0o600)
		}, "objects/core_secret_x_y.yaml: not written by render-static"},
		{"operator changed", func(root string) error {
			return os.WriteFile(filepath.Join(root, "operators", "etcds.json"), []byte("{}\n"), 0o600)
		}, "operators/etcds.json: changed"},
		{"a symlink", func(root string) error {
			return os.Symlink("/etc/passwd", filepath.Join(root, "objects", "link.yaml"))
		}, "objects/link.yaml: not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSmallState(t, dir)
			root := filepath.Join(dir, Dir)
			if err := tc.tamper(root); err != nil {
				t.Fatal(err)
			}
			s, err := Load(dir)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Load of an intact state: %v", err)
				}
				if len(s.Objects) != 2 || s.InfraID != "sno-abcde" || len(s.Operators) != 1 || s.Legacy {
					t.Errorf("loaded %d objects, infra ID %q, %d operators, legacy %v", len(s.Objects), s.InfraID, len(s.Operators), s.Legacy)
				}
				// sha256sum itself agrees with the manifest.
				if sum, err := exec.LookPath("sha256sum"); err == nil {
					cmd := exec.Command(sum, "--check", "--quiet", SumsFile)
					cmd.Dir = root
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Errorf("sha256sum --check: %v\n%s", err, out)
					}
				}
				return
			}
			var ie *IntegrityError
			if !errors.As(err, &ie) {
				t.Fatalf("Load: %v, want an IntegrityError", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "{fresh}") {
				t.Errorf("Load: %v\nwant it to say %q and to refer to {fresh}", err, tc.want)
			}
		})
	}
}

// A format 1 state (before SHA256SUMS) is still read, and known for what it is.
func TestLoadReadsAFormatOneState(t *testing.T) {
	dir := t.TempDir()
	writeSmallState(t, dir)
	root := filepath.Join(dir, Dir)
	if err := os.Remove(filepath.Join(root, SumsFile)); err != nil {
		t.Fatal(err)
	}
	head, err := os.ReadFile(filepath.Join(root, "render.json"))
	if err != nil {
		t.Fatal(err)
	}
	v1 := strings.Replace(string(head), `"version": 2`, `"version": 1`, 1)
	if v1 == string(head) {
		t.Fatalf("render.json has no version 2: %s", head)
	}
	if err := os.WriteFile(filepath.Join(root, "render.json"), []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Legacy || s.Version != Version || len(s.Objects) != 2 {
		t.Errorf("legacy %v, version %d, %d objects", s.Legacy, s.Version, len(s.Objects))
	}
}

// A state edited consistently (a signer's file deleted and SHA256SUMS written again to match) is refused: its
// certificates name a signer it does not hold, and a run would silently make a new one in its place.
func TestLoadRefusesAMissingSigner(t *testing.T) {
	leaf := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-etcd", Name: "etcd-client",
		Annotations: map[string]string{"auth.openshift.io/certificate-issuer": "openshift-etcd_etcd-signer@1795874429"}},
		Data: map[string][]byte{"tls.key": []byte("key")}}
	leaf.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	dir := t.TempDir()
	s := &State{Version: Version, InfraID: "sno-abcde", Objects: []runtime.Object{leaf}, Operators: map[string][]byte{}}
	if err := s.Write(dir); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	var ie *IntegrityError
	if !errors.As(err, &ie) {
		t.Fatalf("Load: %v, want an IntegrityError", err)
	}
	for _, want := range []string{"objects/core_secret_openshift-etcd_etcd-signer.yaml: missing", "the signer of secret openshift-etcd/etcd-client", "{fresh}"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load: %v\nwant it to say %q", err, want)
		}
	}
}
