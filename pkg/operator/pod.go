package operator

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"text/template"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/manifests"
)

// Where the operators' pods mount the revision and the cert directory; the upstream pods use the same mount
// points, so that the kubeconfigs of the revision resolve unchanged. UpstreamCertDir is the writable directory (an
// emptyDir) in which kube-controller-manager and kube-scheduler keep their self-signed serving certificate, as the
// OpenShift pods' --cert-dir.
const (
	ResourcesInPod  = "/etc/kubernetes/static-pod-resources"
	CertsInPod      = "/etc/kubernetes/static-pod-certs"
	UpstreamCertDir = "/var/run/kubernetes"
)

// ResourceFile is a file of the revision inside a pod: <ResourcesInPod>/{configmaps,secrets}/<name>/<key>.
func ResourceFile(kind, name, key string) string { return path.Join(ResourcesInPod, kind, name, key) }

// CertFile is a file of the cert directory inside a pod: <CertsInPod>/{configmaps,secrets}/<name>/<key>.
func CertFile(kind, name, key string) string { return path.Join(CertsInPod, kind, name, key) }

// TemplateFuncs are the functions of the pod templates under manifests/: quote makes a YAML double-quoted scalar.
var TemplateFuncs = template.FuncMap{"quote": strconv.Quote}

// UpstreamPodData is what manifests/<component>/upstream/pod.yaml of kube-controller-manager and kube-scheduler is
// rendered with.
type UpstreamPodData struct {
	Image     string
	Args      []string
	Env       []corev1.EnvVar
	Port      int
	ProbeHost string
}

// RenderPod renders a pod template (a path below manifests/) with TemplateFuncs into a pod.
func RenderPod(name string, data any) (*corev1.Pod, error) {
	pod, _, err := manifests.Pod(name, TemplateFuncs, data)
	return pod, err
}

// ReadPodTemplate reads an embedded pod template with ${NAME} placeholders replaced as whole strings, then the
// images of containers whose image is exactly one of images' keys.
func ReadPodTemplate(name string, vars, images map[string]string) (*corev1.Pod, error) {
	raw, err := ReadManifest(name)
	if err != nil {
		return nil, err
	}
	s := string(raw)
	for k, v := range vars {
		s = strings.ReplaceAll(s, k, v)
	}
	pod, err := manifests.DecodePod([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if img, ok := images[cs[i].Image]; ok {
				cs[i].Image = img
			}
		}
	}
	return pod, nil
}

// PodConfigMap is the pod configmap the revision controller copies: pod.yaml, the spec's
// forceRedeploymentReason (a change makes a new revision) and the operator's version (none offline).
func PodConfigMap(namespace, name string, pod *corev1.Pod, spec *operatorv1.StaticPodOperatorSpec) *corev1.ConfigMap {
	cm := ConfigMap(namespace, name)
	cm.Data["pod.yaml"] = resourceread.WritePodV1OrDie(pod)
	cm.Data["forceRedeploymentReason"] = spec.ForceRedeploymentReason
	cm.Data["version"] = ""
	return cm
}

// ConfigMap is an empty configmap.
func ConfigMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{}}
}
