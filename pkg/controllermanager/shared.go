package controllermanager

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/certrotation"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"
	"github.com/openshift/library-go/pkg/operator/staticpod/controller/node"
	"github.com/openshift/library-go/pkg/operator/staticresourcecontroller"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/loops"
)

// This file holds what kube-controller-manager and kube-scheduler build the same way, as their operators do
// (pkg/scheduler uses it): static resources, the node controller, target-config steps, the service-account CA,
// the localhost-recovery token check, the api-int kubeconfig and the pod configmap.

// StaticResources is library-go's static resource controller over every YAML file in the embedded directory dir
// (e.g. "kube-controller-manager/static"), applied in file-name order, as a loop named
// "static-resources/<component>". instanceName names its <instanceName>Degraded condition, as in the operator.
// A missing or empty directory is a programming error and panics at construction.
func StaticResources(c *loops.Cluster, component, instanceName, dir string, op loops.StaticPodOperator, recorder events.Recorder) loops.Loop {
	files, err := StaticFiles(dir)
	if err != nil {
		panic(err)
	}
	ctrl := staticresourcecontroller.NewStaticResourceController(instanceName,
		func(name string) ([]byte, error) { return manifests.Read(name) },
		files, resourceapply.NewKubeClientHolder(c.Kube), op, recorder)
	return loops.ControllerLoop("static-resources/"+component, ctrl, recorder)
}

// StaticFiles lists the YAML files of an embedded manifests directory, sorted, as paths below manifests/.
func StaticFiles(dir string) ([]string, error) {
	entries, err := fs.ReadDir(manifests.FS, dir)
	if err != nil {
		return nil, fmt.Errorf("static resources %s: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			files = append(files, path.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("static resources %s: no YAML files", dir)
	}
	sort.Strings(files)
	return files, nil
}

// NodeLoop is library-go's node controller as a loop named "node/<component>": it lists the master nodes (the
// emulated Node, see clusterconfig.NodeEmulation) and keeps status.nodeStatuses in step, as every static-pod
// operator does.
func NodeLoop(c *loops.Cluster, component string, op loops.StaticPodOperator, recorder events.Recorder) loops.Loop {
	ctrl := node.NewNodeController(component, op, c.KubeInformers.InformersFor(""), recorder, nil)
	return loops.ControllerLoop("node/"+component, ctrl, recorder)
}

// Step is one output of a target-config controller, run as a loop of its own named
// "target-config/<component>/<Name>".
type Step struct {
	Name string
	Sync func(ctx context.Context) error
}

// TargetConfigLoops turns steps into loops, each skipped while ready fails (nil: never skipped).
func TargetConfigLoops(component string, steps []Step, ready func(context.Context) error) []loops.Loop {
	out := make([]loops.Loop, 0, len(steps))
	for _, s := range steps {
		l := loops.Loop{Name: "target-config/" + component + "/" + s.Name, Sync: s.Sync}
		if ready != nil {
			l = l.Before(ready)
		}
		out = append(out, l)
	}
	return out
}

// serviceAccountCAInputs are the bundles serviceaccount-ca is the union of: what verifies kube-apiserver's
// serving certificates (published by kube-apiserver's operator) and the default ingress certificate (published by
// the ingress operator, absent in a render). The controller manager hands it to every pod as the service-account
// ca.crt, and the kubeconfigs use it to verify api-int.
var serviceAccountCAInputs = []certs.Location{
	loc(ManagedNamespace, "kube-apiserver-server-ca"),
	loc(ManagedNamespace, "default-ingress-cert"),
}

// ServiceAccountCA builds <namespace>/serviceaccount-ca from serviceAccountCAInputs; kube-apiserver's serving CA
// bundle must be there first (an empty bundle would verify nothing).
func ServiceAccountCA(ctx context.Context, c *loops.Cluster, namespace, owner string, recorder events.Recorder) error {
	first := serviceAccountCAInputs[0]
	if cm, err := c.KubeInformers.ConfigMapLister().ConfigMaps(first.Namespace).Get(first.Name); err != nil {
		return fmt.Errorf("waiting for %s: %w", first, err)
	} else if cm.Data["ca-bundle.crt"] == "" {
		return fmt.Errorf("waiting for %s: no ca-bundle.crt yet", first)
	}
	var in []resourcesynccontroller.ResourceLocation
	for _, l := range serviceAccountCAInputs {
		in = append(in, rl(l))
	}
	cm, err := resourcesynccontroller.CombineCABundleConfigMaps(resourcesynccontroller.ResourceLocation{Namespace: namespace, Name: "serviceaccount-ca"},
		c.KubeInformers.ConfigMapLister(), certrotation.AdditionalAnnotations{JiraComponent: owner}, in...)
	if err != nil {
		return err
	}
	_, _, err = resourceapply.ApplyConfigMap(ctx, c.Kube.CoreV1(), recorder, cm)
	return err
}

// CheckRecoveryToken is the operators' check that the token controller filled the localhost-recovery-client-token
// secret for the current localhost-recovery-client service account (it is a revisioned input: without it there is
// no revision).
func CheckRecoveryToken(c *loops.Cluster, namespace string) error {
	sa, err := c.KubeInformers.InformersFor(namespace).Core().V1().ServiceAccounts().Lister().ServiceAccounts(namespace).Get("localhost-recovery-client")
	if err != nil {
		return fmt.Errorf("serviceaccount %s/localhost-recovery-client: %w", namespace, err)
	}
	token, err := c.KubeInformers.SecretLister().Secrets(namespace).Get("localhost-recovery-client-token")
	if err != nil {
		return fmt.Errorf("secret %s/localhost-recovery-client-token: %w", namespace, err)
	}
	switch uid := token.Annotations[corev1.ServiceAccountUIDKey]; {
	case uid == "":
		return fmt.Errorf("secret %s/localhost-recovery-client-token hasn't been populated with SA token yet: missing SA UID", namespace)
	case uid != string(sa.UID):
		return fmt.Errorf("secret %s/localhost-recovery-client-token hasn't been populated with current SA token yet: SA UID mismatch", namespace)
	}
	for _, key := range []string{"token", "ca.crt"} {
		if len(token.Data[key]) == 0 {
			return fmt.Errorf("secret %s/localhost-recovery-client-token has no %s yet", namespace, key)
		}
	}
	return nil
}

// InternalKubeconfig applies the kubeconfig configmap template (manifests/<template>) with $LB_INT_URL replaced by
// Infrastructure status.apiServerInternalURL.
func InternalKubeconfig(ctx context.Context, c *loops.Cluster, template string, recorder events.Recorder) error {
	infra, err := c.ConfigInformers.Config().V1().Infrastructures().Lister().Get("cluster")
	if err != nil {
		return err
	}
	if infra.Status.APIServerInternalURL == "" {
		return fmt.Errorf("infrastructures.config.openshift.io/cluster: missing status.apiServerInternalURL")
	}
	raw, err := readManifest(template)
	if err != nil {
		return err
	}
	cm := resourceread.ReadConfigMapV1OrDie([]byte(strings.ReplaceAll(string(raw), "$LB_INT_URL", infra.Status.APIServerInternalURL)))
	_, _, err = resourceapply.ApplyConfigMap(ctx, c.Kube.CoreV1(), recorder, cm)
	return err
}

// LogLevel is the -v the operators give their operands for a log level.
func LogLevel(l operatorv1.LogLevel) int {
	switch l {
	case operatorv1.Debug:
		return 4
	case operatorv1.Trace:
		return 6
	case operatorv1.TraceAll:
		return 8
	default:
		return 2
	}
}

// ProxyEnv is the cluster-wide proxy the config observer put at path, as sorted environment variables.
func ProxyEnv(observed map[string]interface{}, path ...string) ([]corev1.EnvVar, error) {
	m, _, err := unstructured.NestedStringMap(observed, path...)
	if err != nil {
		return nil, fmt.Errorf("observedConfig %s: %w", strings.Join(path, "."), err)
	}
	var env []corev1.EnvVar
	for k, v := range m {
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return env, nil
}

// TLSArgs are --tls-cipher-suites and --tls-min-version from the observed servingInfo (the TLS profile).
func TLSArgs(observed map[string]interface{}) ([]string, error) {
	var out []string
	suites, found, err := unstructured.NestedStringSlice(observed, "servingInfo", "cipherSuites")
	if err != nil {
		return nil, fmt.Errorf("observedConfig servingInfo.cipherSuites: %w", err)
	}
	if found && len(suites) > 0 {
		out = append(out, "--tls-cipher-suites="+strings.Join(suites, ","))
	}
	min, found, err := unstructured.NestedString(observed, "servingInfo", "minTLSVersion")
	if err != nil {
		return nil, fmt.Errorf("observedConfig servingInfo.minTLSVersion: %w", err)
	}
	if found && min != "" {
		out = append(out, "--tls-min-version="+min)
	}
	return out, nil
}

// ImageTag is the tag of an image pull spec ("" for a digest or no tag): the operand version the recovery
// controllers report, where the operators take their payload version.
func ImageTag(pullSpec string) string {
	if strings.Contains(pullSpec, "@") {
		return ""
	}
	slash := strings.LastIndex(pullSpec, "/")
	if i := strings.LastIndex(pullSpec, ":"); i > slash {
		return pullSpec[i+1:]
	}
	return ""
}

// ReadPodTemplate reads an embedded pod template with ${NAME} placeholders replaced as whole strings, then the
// images of containers whose image is exactly one of images' keys.
func ReadPodTemplate(name string, vars, images map[string]string) (*corev1.Pod, error) {
	raw, err := readManifest(name)
	if err != nil {
		return nil, err
	}
	s := string(raw)
	for k, v := range vars {
		s = strings.ReplaceAll(s, k, v)
	}
	pod, err := resourceread.ReadPodV1([]byte(s))
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
	cm := configMap(namespace, name)
	cm.Data["pod.yaml"] = resourceread.WritePodV1OrDie(pod)
	cm.Data["forceRedeploymentReason"] = spec.ForceRedeploymentReason
	cm.Data["version"] = ""
	return cm
}
