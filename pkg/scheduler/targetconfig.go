package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/resource/resourcemerge"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/operator"
)

// schedulerConfig reads Scheduler "cluster" (the installer's: mastersSchedulable on a single node).
func (s *Component) schedulerConfig() (*configv1.Scheduler, error) {
	return s.Cluster.ConfigInformers.Config().V1().Schedulers().Lister().Get("cluster")
}

// Config builds config.yaml: the profile's KubeSchedulerConfiguration (with the dynamic resource allocation
// plugin when the profile customization enables it), with the default config laid over it.
func Config(spec configv1.SchedulerSpec) ([]byte, error) {
	if spec.Policy.Name != "" {
		return nil, fmt.Errorf("scheduler policy %q: policies were removed upstream (Kubernetes 1.23); use spec.profile", spec.Policy.Name)
	}
	profile := spec.Profile
	switch profile {
	case "":
		profile = configv1.LowNodeUtilization
	case configv1.LowNodeUtilization, configv1.HighNodeUtilization, configv1.NoScoring:
	default:
		return nil, fmt.Errorf("scheduler profile %q not recognized", spec.Profile)
	}
	prof, err := manifests.Read(ComponentName + "/profile-" + string(profile) + ".yaml")
	if err != nil {
		return nil, err
	}
	switch spec.ProfileCustomizations.DynamicResourceAllocation {
	case "", configv1.DRAEnablementDisabled:
	case configv1.DRAEnablementEnabled:
		if prof, err = enableDRA(prof); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("dynamicResourceAllocation customization %q not recognized", spec.ProfileCustomizations.DynamicResourceAllocation)
	}
	def, err := operator.ReadConfigLayer(ComponentName + "/defaultconfig.yaml")
	if err != nil {
		return nil, err
	}
	return resourcemerge.MergeProcessConfig(nil, prof, def)
}

// enableDRA adds the DynamicResources plugin to the multiPoint plugins of the first profile.
func enableDRA(prof []byte) ([]byte, error) {
	var cfg map[string]interface{}
	if err := yaml.Unmarshal(prof, &cfg); err != nil {
		return nil, err
	}
	profiles, _, _ := unstructured.NestedSlice(cfg, "profiles")
	if len(profiles) == 0 {
		profiles = []interface{}{map[string]interface{}{}}
	}
	first, _ := profiles[0].(map[string]interface{})
	enabled, _, _ := unstructured.NestedSlice(first, "plugins", "multiPoint", "enabled")
	enabled = append(enabled, map[string]interface{}{"name": "DynamicResources"})
	if err := unstructured.SetNestedSlice(first, enabled, "plugins", "multiPoint", "enabled"); err != nil {
		return nil, err
	}
	profiles[0] = first
	if err := unstructured.SetNestedSlice(cfg, profiles, "profiles"); err != nil {
		return nil, err
	}
	return json.Marshal(cfg)
}

func (s *Component) manageConfig(ctx context.Context) error {
	sched, err := s.schedulerConfig()
	if err != nil {
		return err
	}
	cfg, err := Config(sched.Spec)
	if err != nil {
		return err
	}
	raw, err := manifests.Read(ComponentName + "/cm-config.yaml")
	if err != nil {
		return err
	}
	cm := resourceread.ReadConfigMapV1OrDie(raw)
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["config.yaml"] = string(cfg)
	_, _, err = resourceapply.ApplyConfigMap(ctx, s.Cluster.Kube.CoreV1(), s.Recorder, cm)
	return err
}

// FeatureGatesArg is --feature-gates with every known gate, sorted by name, as Name=true|false.
func FeatureGatesArg(enabled, disabled []configv1.FeatureGateName) string {
	var all []string
	for _, g := range enabled {
		all = append(all, string(g)+"=true")
	}
	for _, g := range disabled {
		all = append(all, string(g)+"=false")
	}
	sort.Strings(all)
	return "--feature-gates=" + strings.Join(all, ",")
}

// managePod completes the pod template (see manifests/kube-scheduler/pod.yaml) and applies the
// kube-scheduler-pod configmap.
func (s *Component) managePod(ctx context.Context) error {
	obs, spec, err := s.ObservedConfig()
	if err != nil {
		return err
	}
	if _, err := s.schedulerConfig(); err != nil {
		return err
	}
	operatorImage := s.In.Images.Image("cluster-kube-scheduler-operator")
	pod, err := operator.ReadPodTemplate(ComponentName+"/pod.yaml",
		map[string]string{"${OPERATOR_IMAGE_VERSION}": s.In.OperatorVersion(operatorImage)},
		map[string]string{"${IMAGE}": s.In.Images.Image("hyperkube"), "${OPERATOR_IMAGE}": operatorImage})
	if err != nil {
		return err
	}
	gates, err := s.Features.CurrentFeatureGates()
	if err != nil {
		return err
	}
	var enabled, disabled []configv1.FeatureGateName
	for _, g := range gates.KnownFeatures() {
		if gates.Enabled(g) {
			enabled = append(enabled, g)
		} else {
			disabled = append(disabled, g)
		}
	}
	main := &pod.Spec.Containers[0]
	if main.Name != "kube-scheduler" {
		return fmt.Errorf("pod template: the first container must be kube-scheduler")
	}
	main.Args = append(main.Args, FeatureGatesArg(enabled, disabled), fmt.Sprintf("-v=%d", schedulerLogLevel(spec.LogLevel)))
	if ok, err := operator.HasServingCert(s.Cluster, TargetNamespace); err != nil {
		return err
	} else if ok {
		main.Args = append(main.Args, "--tls-cert-file="+operator.ServingCertFile, "--tls-private-key-file="+operator.ServingKeyFile)
	}
	tls, err := operator.TLSArgs(obs)
	if err != nil {
		return err
	}
	main.Args = append(main.Args, tls...)
	unsupported, err := unsupportedArgs(spec.UnsupportedConfigOverrides.Raw)
	if err != nil {
		return err
	}
	main.Args = append(main.Args, unsupported...)
	return s.ApplyPodConfigMap(ctx, TargetNamespace, "kube-scheduler-pod", pod, spec)
}

// schedulerLogLevel is the operand's -v: kube-scheduler logs node scores at level 10, so TraceAll goes that far
// (cluster-kube-scheduler-operator pkg/operator/targetconfigcontroller/targetconfigcontroller.go, managePod).
func schedulerLogLevel(l operatorv1.LogLevel) int { return operator.Verbosity(l, 10) }

// unsupportedArgs are the "arguments" of unsupportedConfigOverrides ({"arguments": {"flag": ["value", ...]}}),
// as sorted --flag=value arguments.
func unsupportedArgs(raw []byte) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var cfg struct {
		Arguments map[string][]string `json:"arguments"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("unsupportedConfigOverrides: %w", err)
	}
	return operator.ListArgs(cfg.Arguments), nil
}
