package pipeline

import (
	"bytes"
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/codec"
	"github.com/render-static/render-static/pkg/export"
)

// The manifests and the state's object files are made from one encoding of what they share
// (export.ManifestsAndWholeOf); every byte must be what encoding each on its own gives: the manifests as
// export.ManifestsOf makes them, each object whole as the state encodes it (its map, apiVersion and kind from its
// type, codec.MarshalYAML).
func TestManifestsAndStateShareEncodings(t *testing.T) {
	for _, tc := range []renderCase{renderCases[0], renderCases[2]} {
		t.Run(tc.name, func(t *testing.T) {
			nodeIP := tc.nodeIP
			if nodeIP == "" {
				nodeIP = nodeIPFromComment(t, repo(tc.config))
			}
			in, err := Validate(Options{InstallConfig: repo(tc.config), NodeIP: nodeIP, NodeName: "sno-0", Dir: t.TempDir(), CertValidity: certs.DefaultLeafValidity, InfraID: "sno-x7k2p"})
			if err != nil {
				t.Fatal(err)
			}
			eng, err := Settle(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := export.Objects(eng.Cluster)
			if err != nil {
				t.Fatal(err)
			}
			shared, whole, err := export.ManifestsAndWholeOf(eng.Cluster, objs, nil)
			if err != nil {
				t.Fatal(err)
			}
			alone, err := export.ManifestsOf(eng.Cluster, objs)
			if err != nil {
				t.Fatal(err)
			}
			if len(shared) != len(alone) {
				t.Fatalf("%d manifests, %d made alone", len(shared), len(alone))
			}
			for i := range alone {
				if shared[i].File != alone[i].File || !bytes.Equal(shared[i].YAML, alone[i].YAML) {
					t.Errorf("%s: manifest differs from the one made alone:\n%s\n---\n%s", alone[i].File, shared[i].YAML, alone[i].YAML)
				}
			}
			for _, o := range objs {
				u, err := codec.ObjectMap(o)
				if err != nil {
					t.Fatal(err)
				}
				obj := &unstructured.Unstructured{Object: u}
				obj.SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
				want, err := codec.MarshalYAML(obj.Object)
				if err != nil {
					t.Fatal(err)
				}
				if got, ok := whole[o]; ok && !bytes.Equal(got, want) {
					t.Errorf("%s %s/%s: whole YAML differs:\n%s\n---\n%s", obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName(), got, want)
				}
			}
			if len(whole) < len(objs)*9/10 {
				t.Errorf("only %d of %d objects encoded by parts: the sharing no longer applies", len(whole), len(objs))
			}
		})
	}
}
