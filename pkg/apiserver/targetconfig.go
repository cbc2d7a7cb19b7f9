package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	kubecontrolplanev1 "github.com/openshift/api/kubecontrolplane/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

// A combined CA bundle of the target config: the destination and the bundles it is the union of (missing inputs
// are skipped, as in the operator).
type combinedBundle struct {
	Dest   certs.Location
	Inputs []certs.Location
}

// combinedBundles are the bundles kube-apiserver's target-config controller builds.
var combinedBundles = []combinedBundle{
	// Every client CA kube-apiserver trusts.
	{Dest: loc(TargetNamespace, "client-ca"), Inputs: []certs.Location{
		loc(ConfigNamespace, "admin-kubeconfig-client-ca"),
		loc(ManagedNamespace, "csr-controller-ca"),
		loc(OperatorNamespace, "kube-apiserver-to-kubelet-client-ca"),
		loc(OperatorNamespace, "kube-control-plane-signer-ca"),
		loc(TargetNamespace, "user-client-ca"),
		loc(ManagedNamespace, "kubelet-bootstrap-kubeconfig"),
		loc(OperatorNamespace, "node-system-admin-ca"),
	}},
	// Every CA that signs a kube-apiserver serving certificate.
	{Dest: loc(TargetNamespace, "kube-apiserver-server-ca"), Inputs: ServingCABundles},
}

// bundleLoops returns one "target-config/<name>" loop per combined bundle.
func (k *Component) bundleLoops() []loops.Loop {
	var out []loops.Loop
	for _, b := range combinedBundles {
		b := b
		out = append(out, loops.Loop{Name: "target-config/" + b.Dest.Name, Sync: func(ctx context.Context) error {
			return operator.CombineCABundles(ctx, k.Cluster, jira, k.Recorder, b.Dest, b.Inputs...)
		}})
	}
	return out
}

// TargetConfigRequired are the observed-config paths the target config waits for, like the operator: without
// them kube-apiserver would not start.
var TargetConfigRequired = [][]string{
	{"servingInfo", "namedCertificates"},
	{"apiServerArguments", "etcd-servers"},
	{"admission", "pluginConfig", "network.openshift.io/RestrictedEndpointsAdmission"},
}

// observedConfig returns the operator's observed config and unsupported overrides (JSON), failing when one of
// the required paths is missing.
func (k *Component) observedConfig() (observed map[string]interface{}, observedRaw, overrides []byte, err error) {
	spec, _, _, err := k.Op.GetStaticPodOperatorState()
	if err != nil {
		return nil, nil, nil, err
	}
	observedRaw = spec.ObservedConfig.Raw
	if len(observedRaw) == 0 {
		return nil, nil, nil, fmt.Errorf("the operator has no observedConfig yet")
	}
	if err := json.Unmarshal(observedRaw, &observed); err != nil {
		return nil, nil, nil, fmt.Errorf("observedConfig: %w", err)
	}
	for _, p := range TargetConfigRequired {
		if _, found, _ := unstructured.NestedFieldNoCopy(observed, p...); !found {
			return nil, nil, nil, fmt.Errorf("observedConfig has no %s yet", strings.Join(p, "."))
		}
	}
	return observed, observedRaw, spec.UnsupportedConfigOverrides.Raw, nil
}

// targetConfigLoop renders openshift-kube-apiserver/config (config.yaml): defaultconfig.yaml,
// config-overrides.yaml, the observed config and the unsupported overrides merged in that order (maps merge,
// lists replace), pruned to the KubeAPIServerConfig schema (observations for the pod template, such as
// gracefulTerminationDuration, do not reach the file).
func (k *Component) targetConfigLoop() loops.Loop {
	return k.whenInputs(loops.Loop{Name: "target-config/config", Sync: func(ctx context.Context) error {
		_, observed, overrides, err := k.observedConfig()
		if err != nil {
			return err
		}
		base, err := operator.ReadConfigLayer("kube-apiserver/defaultconfig.yaml")
		if err != nil {
			return err
		}
		over, err := operator.ReadConfigLayer("kube-apiserver/config-overrides.yaml")
		if err != nil {
			return err
		}
		yamls := [][]byte{base, over, observed}
		if len(overrides) > 0 {
			yamls = append(yamls, overrides)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: "config",
			Annotations: map[string]string{"openshift.io/owning-component": jira}}, Data: map[string]string{}}
		return k.ApplyMergedConfig(ctx, &kubecontrolplanev1.KubeAPIServerConfig{}, cm, yamls...)
	}}, etcdEndpoints)
}

// PodValues are the pod template's values.
type PodValues struct {
	Image, OperatorImage, OperatorImageVersion string
	// Verbosity is " -v=N" (appended to the kube-apiserver command line); MonitorVerbosity is "-v=N".
	Verbosity, MonitorVerbosity string
	GracefulTerminationDuration int
	SetupTimeout                int
	GOGC                        int
	CheckEndpointsListen        string
}

// verbosity is the operand's -v: TraceAll is 10 (cluster-kube-apiserver-operator
// pkg/operator/targetconfigcontroller/targetconfigcontroller.go).
func verbosity(l operatorv1.LogLevel) int { return operator.Verbosity(l, 10) }

// podState is what the pod loops of both flavors start from: the observed config and the operator's spec.
func (k *Component) podState() (map[string]interface{}, *operatorv1.StaticPodOperatorSpec, error) {
	observed, _, _, err := k.observedConfig()
	if err != nil {
		return nil, nil, err
	}
	spec, _, _, err := k.Op.GetStaticPodOperatorState()
	return observed, spec, err
}

// gracefulTerminationDuration is the observed gracefulTerminationDuration in seconds, or def when none is observed.
func gracefulTerminationDuration(observed map[string]interface{}, def int) (int, error) {
	s, found, _ := unstructured.NestedString(observed, gracefulTerminationPath...)
	if !found || s == "" {
		return def, nil
	}
	d, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("observedConfig gracefulTerminationDuration %q: %w", s, err)
	}
	return d, nil
}

// podConfigMapLoop renders openshift-kube-apiserver/kube-apiserver-pod: pod.yaml from the pod template with the
// observed grace period, bind network and proxy; forceRedeploymentReason and version; and, on a single node,
// the startup monitor's pod.
func (k *Component) podConfigMapLoop() loops.Loop {
	if k.In.Flavor == clusterconfig.FlavorUpstream {
		return k.upstreamPodConfigMapLoop() // upstream.go
	}
	return k.whenInputs(loops.Loop{Name: "target-config/kube-apiserver-pod", Sync: func(ctx context.Context) error {
		observed, spec, err := k.podState()
		if err != nil {
			return err
		}
		v := PodValues{
			Image: k.In.Images.Image("hyperkube"), OperatorImage: k.In.Images.Image("cluster-kube-apiserver-operator"),
			GracefulTerminationDuration: 135, GOGC: 100, CheckEndpointsListen: "0.0.0.0:17697",
		}
		v.OperatorImageVersion = k.In.OperatorVersion(v.OperatorImage)
		level := verbosity(spec.LogLevel)
		v.Verbosity, v.MonitorVerbosity = fmt.Sprintf(" -v=%d", level), fmt.Sprintf("-v=%d", level)
		if v.GracefulTerminationDuration, err = gracefulTerminationDuration(observed, v.GracefulTerminationDuration); err != nil {
			return err
		}
		v.SetupTimeout = v.GracefulTerminationDuration + 85
		// check-endpoints binds [::] only when kube-apiserver's bindNetwork is tcp6 (IPv6 single stack); dual stack
		// (tcp) and IPv4 keep 0.0.0.0 (cluster-kube-apiserver-operator pkg/operator/targetconfigcontroller/
		// targetconfigcontroller.go, checkEndpointsBindIPFromConfig).
		if n, _, _ := unstructured.NestedString(observed, bindNetworkPath...); n == "tcp6" {
			v.CheckEndpointsListen = "[::]:17697"
		}
		proxy, err := operator.ProxyEnv(observed, operator.ProxyPath...)
		if err != nil {
			return err
		}
		// The observed proxy (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, sorted) goes to every container of the pod, not to
		// its init container (targetconfigcontroller.go, managePods and proxyMapToEnvVars).
		pod, err := renderPod("kube-apiserver/pod.yaml", v, func(p *corev1.Pod) {
			for i := range p.Spec.Containers {
				p.Spec.Containers[i].Env = append(p.Spec.Containers[i].Env, proxy...)
			}
		})
		if err != nil {
			return err
		}
		data := map[string]string{
			"pod.yaml":                pod,
			"forceRedeploymentReason": spec.ForceRedeploymentReason,
			// The operator's own build version; a render has no operator binary.
			"version": "",
		}
		infra, err := k.Cluster.ConfigInformers.Config().V1().Infrastructures().Lister().Get("cluster")
		if err != nil {
			return err
		}
		if infra.Status.ControlPlaneTopology == configv1.SingleReplicaTopologyMode {
			monitor, err := renderPod("kube-apiserver/startup-monitor-pod.yaml", v, nil)
			if err != nil {
				return err
			}
			data["kube-apiserver-startup-monitor-pod.yaml"] = monitor
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: "kube-apiserver-pod",
			Annotations: map[string]string{"openshift.io/owning-component": jira}}, Data: data}
		_, _, err = resourceapply.ApplyConfigMap(ctx, k.Cluster.Kube.CoreV1(), k.Recorder, cm)
		return err
	}}, etcdEndpoints)
}

// renderPod executes a pod template, checks it is a pod, lets mutate change it and returns it as JSON.
func renderPod(name string, v PodValues, mutate func(*corev1.Pod)) (string, error) {
	pod, _, err := manifests.Pod(name, nil, v)
	if err != nil {
		return "", err
	}
	if mutate != nil {
		mutate(pod)
	}
	return resourceread.WritePodV1OrDie(pod), nil
}
