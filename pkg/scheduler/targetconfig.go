package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	configlisters "github.com/openshift/client-go/config/listers/config/v1"
	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/configobserver"
	"github.com/openshift/library-go/pkg/operator/configobserver/apiserver"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/resource/resourcemerge"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/controllermanager"
	"github.com/render-static/render-static/pkg/loops"
)

// observerListers is what kube-scheduler's observers read (library-go's TLS observer casts it to APIServerLister).
type observerListers struct {
	syncer    resourcesynccontroller.ResourceSyncer
	scheduler configlisters.SchedulerLister
	apiServer configlisters.APIServerLister
}

func (l observerListers) ResourceSyncer() resourcesynccontroller.ResourceSyncer { return l.syncer }
func (l observerListers) PreRunHasSynced() []cache.InformerSynced               { return nil }
func (l observerListers) APIServerLister() configlisters.APIServerLister        { return l.apiServer }

// configObserver is library-go's config observer with kube-scheduler's observers: the scheduler policy configmap
// and the API server's TLS profile (which becomes --tls-cipher-suites/--tls-min-version).
func (s *Component) configObserver() loops.Loop {
	cfg := s.cluster.ConfigInformers.Config().V1()
	l := observerListers{syncer: s.syncer, scheduler: cfg.Schedulers().Lister(), apiServer: cfg.APIServers().Lister()}
	ctrl := configobserver.NewConfigObserver(ComponentName, s.op, s.recorder, l, []factory.Informer{},
		observeSchedulerPolicy, apiserver.ObserveTLSSecurityProfile)
	return loops.ControllerLoop("config-observer/"+ComponentName, ctrl, s.recorder)
}

// observeSchedulerPolicy keeps policy-configmap in the operand namespace a copy of openshift-config/<Scheduler
// spec.policy.name>, or deletes it when no policy is named (through the resource syncer). Policies were removed
// upstream; the target config refuses a named one.
func observeSchedulerPolicy(generic configobserver.Listers, recorder events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
	l := generic.(observerListers)
	dest := resourcesynccontroller.ResourceLocation{Namespace: TargetNamespace, Name: "policy-configmap"}
	src := resourcesynccontroller.ResourceLocation{}
	sched, err := l.scheduler.Get("cluster")
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return existing, []error{err}
	case sched.Spec.Policy.Name != "":
		src = resourcesynccontroller.ResourceLocation{Namespace: ConfigNamespace, Name: sched.Spec.Policy.Name}
	}
	if err := l.syncer.SyncConfigMap(dest, src); err != nil {
		return existing, []error{err}
	}
	return map[string]interface{}{}, nil
}

// targetConfig is the operator's target config controller, one loop per output, in the operator's order.
func (s *Component) targetConfig() []loops.Loop {
	return controllermanager.TargetConfigLoops(ComponentName, []controllermanager.Step{
		{Name: "config", Sync: s.manageConfig},
		{Name: "serviceaccount-ca", Sync: func(ctx context.Context) error {
			return controllermanager.ServiceAccountCA(ctx, s.cluster, TargetNamespace, jira, s.recorder)
		}},
		{Name: "localhost-recovery-client-token", Sync: func(context.Context) error {
			return controllermanager.CheckRecoveryToken(s.cluster, TargetNamespace)
		}},
		{Name: "scheduler-kubeconfig", Sync: func(ctx context.Context) error {
			return controllermanager.InternalKubeconfig(ctx, s.cluster, ComponentName+"/kubeconfig.yaml", s.recorder)
		}},
		{Name: "kube-scheduler-pod", Sync: s.managePod},
	}, nil)
}

// schedulerConfig reads Scheduler "cluster" (the installer's: mastersSchedulable on a single node).
func (s *Component) schedulerConfig() (*configv1.Scheduler, error) {
	return s.cluster.ConfigInformers.Config().V1().Schedulers().Lister().Get("cluster")
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
	def, err := manifests.Read(ComponentName + "/defaultconfig.yaml")
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
	_, _, err = resourceapply.ApplyConfigMap(ctx, s.cluster.Kube.CoreV1(), s.recorder, cm)
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
	if s.in.Flavor == clusterconfig.FlavorUpstream {
		return s.manageUpstreamPod(ctx) // upstream.go
	}
	spec, _, _, err := s.op.GetStaticPodOperatorState()
	if err != nil {
		return err
	}
	obs := map[string]interface{}{}
	if len(spec.ObservedConfig.Raw) > 0 {
		if err := json.Unmarshal(spec.ObservedConfig.Raw, &obs); err != nil {
			return fmt.Errorf("observedConfig: %w", err)
		}
	}
	if _, err := s.schedulerConfig(); err != nil {
		return err
	}
	operatorImage := s.in.Images.Image("cluster-kube-scheduler-operator")
	pod, err := controllermanager.ReadPodTemplate(ComponentName+"/pod.yaml",
		map[string]string{"${OPERATOR_IMAGE_VERSION}": controllermanager.ImageTag(operatorImage)},
		map[string]string{"${IMAGE}": s.in.Images.Image("hyperkube"), "${OPERATOR_IMAGE}": operatorImage})
	if err != nil {
		return err
	}
	gates, err := s.features.CurrentFeatureGates()
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
	if _, err := s.cluster.KubeInformers.SecretLister().Secrets(TargetNamespace).Get("serving-cert"); err == nil {
		main.Args = append(main.Args,
			"--tls-cert-file=/etc/kubernetes/static-pod-resources/secrets/serving-cert/tls.crt",
			"--tls-private-key-file=/etc/kubernetes/static-pod-resources/secrets/serving-cert/tls.key")
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	tls, err := controllermanager.TLSArgs(obs)
	if err != nil {
		return err
	}
	main.Args = append(main.Args, tls...)
	unsupported, err := unsupportedArgs(spec.UnsupportedConfigOverrides.Raw)
	if err != nil {
		return err
	}
	main.Args = append(main.Args, unsupported...)
	_, _, err = resourceapply.ApplyConfigMap(ctx, s.cluster.Kube.CoreV1(), s.recorder,
		controllermanager.PodConfigMap(TargetNamespace, "kube-scheduler-pod", pod, spec))
	return err
}

// schedulerLogLevel: kube-scheduler logs node scores at level 10, so TraceAll goes that far.
func schedulerLogLevel(l operatorv1.LogLevel) int {
	if l == operatorv1.TraceAll {
		return 10
	}
	return controllermanager.LogLevel(l)
}

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
	var out []string
	for k, vs := range cfg.Arguments {
		for _, v := range vs {
			out = append(out, fmt.Sprintf("--%s=%s", k, v))
		}
	}
	sort.Strings(out)
	return out, nil
}
