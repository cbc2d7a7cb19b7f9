package apiserver_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/operator/staticpod/installerpod"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/staticpod"
)

// TestRealInstallerMatchesExport runs library-go's installer (installerpod.InstallOptions.Run) against the
// render's fake cluster in a temporary directory and compares its tree with export.Install file by file (paths,
// modes, contents). The installer sleeps 30 s on purpose: skipped with -short.
func TestRealInstallerMatchesExport(t *testing.T) {
	if testing.Short() {
		t.Skip("the real installer sleeps 30 s")
	}
	r := sno(t)
	ctx := context.Background()
	sp := r.comp.StaticPod()
	installerPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: sp.Namespace, Name: "installer-1-" + node, Labels: map[string]string{"app": "installer"}},
		Spec:       corev1.PodSpec{NodeName: node},
	}
	if _, err := r.cluster.Kube.CoreV1().Pods(sp.Namespace).Create(ctx, installerPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	o := installerpod.NewInstallOptions()
	o.KubeClient = r.cluster.Kube
	o.Revision = "1"
	o.NodeName = node
	o.Namespace = sp.Namespace
	o.PodConfigMapNamePrefix = sp.PodConfigMap
	o.ConfigMapNamePrefixes, o.OptionalConfigMapNamePrefixes = names(sp.ConfigMaps)
	o.SecretNamePrefixes, o.OptionalSecretNamePrefixes = names(sp.Secrets)
	o.CertConfigMapNamePrefixes, o.OptionalCertConfigMapNamePrefixes = names(sp.CertConfigMaps)
	o.CertSecretNames, o.OptionalCertSecretNamePrefixes = names(sp.CertSecrets)
	o.ResourceDir = filepath.Join(root, export.ResourceDir)
	o.PodManifestDir = filepath.Join(root, export.PodManifestDir)
	o.CertDir = filepath.Join(o.ResourceDir, sp.CertDir)
	o.Timeout = 2 * time.Minute
	o.KubeletVersion = "1.34.0"
	if err := o.Run(ctx); err != nil {
		t.Fatalf("installer: %v", err)
	}

	real := rendertest.ReadDir(t, root)
	ours := rendertest.FilesOf(r.tree)
	for p, f := range real {
		o, ok := ours[p]
		switch {
		case !ok:
			t.Errorf("the installer wrote %s (%o), export.Install did not", p, f.Mode)
		case o.Mode != f.Mode:
			t.Errorf("%s: mode %o, the installer's %o", p, o.Mode, f.Mode)
		case !bytes.Equal(o.Contents, f.Contents):
			t.Errorf("%s: contents differ from the installer's:\n--- ours\n%s\n--- installer\n%s", p, clip(string(o.Contents)), clip(string(f.Contents)))
		}
	}
	for p := range ours {
		if _, ok := real[p]; !ok {
			t.Errorf("export.Install wrote %s, the installer did not", p)
		}
	}
	if len(real) < 40 {
		t.Errorf("the installer wrote only %d files", len(real))
	}
}

func names(rs []staticpod.Resource) (required, optional []string) {
	for _, r := range rs {
		if r.Optional {
			optional = append(optional, r.Name)
		} else {
			required = append(required, r.Name)
		}
	}
	return required, optional
}
