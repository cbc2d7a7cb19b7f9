// Package manifests embeds the templates and static resources render-static writes itself: pod templates,
// default configs, static resources of each component (manifests/<component>/...), and the documented
// conformance adaptations (manifests/<component>/conformance-adaptations.yaml).
package manifests

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sync"
	"text/template"

	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	corev1 "k8s.io/api/core/v1"
)

//go:embed */*
var files embed.FS

// FS is every embedded file, by its path below manifests/ ("kube-apiserver/pod.yaml").
var FS fs.FS = files

// Read returns one embedded file; a missing file is a programming error reported as an error.
func Read(name string) ([]byte, error) { return fs.ReadFile(files, name) }

// Execute renders the embedded template name with data; funcs may be nil. A missing key is an error.
func Execute(name string, funcs template.FuncMap, data any) ([]byte, error) {
	raw, err := Read(name)
	if err != nil {
		return nil, err
	}
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(string(raw))
	if err != nil {
		return nil, fmt.Errorf("manifests/%s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("manifests/%s: %w", name, err)
	}
	return b.Bytes(), nil
}

// Pod renders an embedded pod template (see Execute) and parses the result as a v1 Pod; it returns the pod and
// the rendered text.
func Pod(name string, funcs template.FuncMap, data any) (*corev1.Pod, []byte, error) {
	b, err := Execute(name, funcs, data)
	if err != nil {
		return nil, nil, err
	}
	pod, err := DecodePod(b)
	if err != nil {
		return nil, nil, fmt.Errorf("manifests/%s does not render to a pod: %w", name, err)
	}
	return pod, b, nil
}

// DecodePod is resourceread.ReadPodV1(b): a new Pod the caller owns. A render's loops decode the same rendered pod
// templates on every pass, so the pods decoded from the last few distinct texts are kept and deep-copied (a copy
// costs a small fraction of a decode); errors are not kept.
func DecodePod(b []byte) (*corev1.Pod, error) {
	key := string(b)
	decodedPods.Lock()
	cached, ok := decodedPods.m[key]
	decodedPods.Unlock()
	if ok {
		return cached.DeepCopy(), nil
	}
	pod, err := resourceread.ReadPodV1(b)
	if err != nil {
		return nil, err
	}
	decodedPods.Lock()
	if len(decodedPods.m) >= maxDecodedPods {
		clear(decodedPods.m) // bounded: a fleet renders sites whose pods differ
	}
	decodedPods.m[key] = pod.DeepCopy()
	decodedPods.Unlock()
	return pod, nil
}

// maxDecodedPods bounds DecodePod's cache: a render decodes a few dozen distinct pod texts.
const maxDecodedPods = 64

var decodedPods = struct {
	sync.Mutex
	m map[string]*corev1.Pod
}{m: map[string]*corev1.Pod{}}
