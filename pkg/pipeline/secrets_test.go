package pipeline_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/export"
)

// TestSecretsExportedAsText: every exported Secret, read from its manifest as kubectl reads it and merged as the
// API server merges stringData into data, holds exactly the bytes of the render's Secret (a legacy token's
// keys the live controller fills are left out on purpose: node.FilterExport); its certificates and keys are text.
func TestSecretsExportedAsText(t *testing.T) {
	testtools.Long(t, "renders the whole cluster")
	r, err := rendertest.SNO()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(r.Dir, "manifests", "*_secret_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Secret manifests (%v)", err)
	}
	text := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]interface{}
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		md, _ := obj["metadata"].(map[string]interface{})
		ns, name := md["namespace"].(string), md["name"].(string)
		got, err := export.SecretData(obj)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		s, err := r.Cluster.Kube.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for k, v := range s.Data {
			g, ok := got[k]
			if !ok && s.Type == corev1.SecretTypeServiceAccountToken {
				continue
			}
			if !bytes.Equal(g, v) {
				t.Errorf("%s: %s reads back as %d bytes, the render's Secret holds %d", filepath.Base(f), k, len(g), len(v))
			}
		}
		if len(got) > len(s.Data) {
			t.Errorf("%s: %d keys, the render's Secret %d", filepath.Base(f), len(got), len(s.Data))
		}
		if sd, ok := obj["stringData"].(map[string]interface{}); ok {
			text++
			for k, v := range s.Data {
				if _, inText := sd[k]; !inText && bytes.Contains(v, []byte("-----BEGIN ")) {
					t.Errorf("%s: %s is PEM but not in stringData", filepath.Base(f), k)
				}
			}
		} else if strings.Contains(string(raw), "tls.crt") {
			t.Errorf("%s: a TLS Secret not written as text", filepath.Base(f))
		}
	}
	if text < len(files)/2 {
		t.Errorf("%d of %d Secrets written as text", text, len(files))
	}
}
