package manifests

import (
	"reflect"
	"testing"

	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
)

// DecodePod gives what resourceread.ReadPodV1 gives, every time, as a pod the caller owns.
func TestDecodePodIsReadPodV1(t *testing.T) {
	raw := []byte(`apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: ns
  labels: {app: p}
spec:
  hostNetwork: true
  containers:
  - name: c
    image: img
    args: ["--a", "--b"]
    resources:
      requests: {cpu: 10m, memory: 50Mi}
    volumeMounts: [{name: v, mountPath: /v}]
  volumes:
  - name: v
    hostPath: {path: /v}
`)
	want, err := resourceread.ReadPodV1(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		got, err := DecodePod(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decode %d: %#v\nwant %#v", i, got, want)
		}
		// The caller owns it: changing it changes no later decode.
		got.Spec.Containers[0].Image = "changed"
		got.Spec.Containers[0].Args[0] = "changed"
		got.Labels["app"] = "changed"
	}
	if _, err := DecodePod([]byte("kind: [")); err == nil {
		t.Error("bad YAML decoded")
	}
	for i := 0; i < 2*maxDecodedPods; i++ { // bounded
		if _, err := DecodePod(append(raw, []byte("# "+string(rune('a'+i%26))+string(rune('a'+i/26))+"\n")...)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(decodedPods.m); n > maxDecodedPods {
		t.Errorf("%d pods kept, want at most %d", n, maxDecodedPods)
	}
}
