package operator

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sync"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/configobserver"
	"github.com/openshift/library-go/pkg/operator/configobserver/featuregates"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/resource/resourcemerge"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/resourcesync"
	"github.com/render-static/render-static/pkg/staticpod"
)

// Component is one control-plane component of a render, as the pipeline runs it. Its package declares its loops
// in order, as data, its static pod (the revisioned and cert-dir resources its installer lays out) and its inputs.
type Component interface {
	Name() string
	// Converge returns the loops that run to a fixpoint together with every other component's loops.
	Converge() []loops.Loop
	// Revision returns the loops of the revision phase (library-go's revision controller), run once every
	// converge loop settled, so that exactly revision 1 is made.
	Revision() ([]loops.Loop, error)
	// StaticPod is what the installer lays out on the node.
	StaticPod() staticpod.StaticPod
	// Operator is the component's operator resource.
	Operator() *loops.OperatorClient
	// Inputs are the objects the component reads that others produce.
	Inputs() []Input
}

// Registration is a component package's entry in the registry (pkg/components): its name, the namespaces its
// loops list (known before the cluster is built), the default pull specs of the images its pods run (both
// flavors), its inputs and its constructor.
type Registration struct {
	Name       string
	Namespaces []string
	Images     clusterconfig.Images
	// UpstreamImage is the image (a key of Images) the --flavor upstream pod runs.
	UpstreamImage string
	Inputs        []Input
	New           func(c *loops.Cluster, in *clusterconfig.Inputs) Component
}

// Register is a component package's Registration: its name, namespaces, default images, the image of its
// upstream-flavor pod (a key of images), inputs and constructor.
func Register[C Component](name string, namespaces []string, images clusterconfig.Images, upstreamImage string, inputs []Input, build func(*loops.Cluster, *clusterconfig.Inputs) C) Registration {
	return Registration{Name: name, Namespaces: namespaces, Images: images, UpstreamImage: upstreamImage, Inputs: inputs,
		New: func(c *loops.Cluster, in *clusterconfig.Inputs) Component { return build(c, in) }}
}

// Spec is what a component's constructor hands NewBase.
type Spec struct {
	// Name is the component's name in traces, loop names and reports.
	Name string
	// Kind and Resource name the operator resource (operator.openshift.io/v1 <Kind> "cluster", <resource>).
	Kind, Resource string
	// NodeStatus puts the node in status.nodeStatuses, as the operator's node controller would (for components
	// that run no node controller of their own).
	NodeStatus bool
	StaticPod  staticpod.StaticPod
	Inputs     []Input
	// SyncRules are the operator's resource sync rules (Base.Syncer). A rule naming a namespace missing from the
	// component's namespaces is a programming error and panics.
	SyncRules []resourcesync.Rule
}

// Base is what every component embeds: the render's cluster and inputs, its operator resource (registered by
// NewBase: managed, log level Normal), recorder and resource sync controller, and the default methods of
// Component.
type Base struct {
	Cluster  *loops.Cluster
	In       *clusterconfig.Inputs
	Op       *loops.OperatorClient
	Recorder events.Recorder
	// Syncer is the operator's resource sync controller with Spec.SyncRules: built first, because config
	// observers (and kube-apiserver's encryption controllers) register rules on it.
	Syncer *resourcesynccontroller.ResourceSyncController
	// Features are the cluster's feature gates (clusterconfig.FeatureGates).
	Features featuregates.FeatureGateAccess
	spec     Spec
	merged   *mergedConfigs
	observed *observedConfigs
}

// NewBase registers the component's operator resource.
func NewBase(c *loops.Cluster, in *clusterconfig.Inputs, s Spec) Base {
	var status operatorv1.StaticPodOperatorStatus
	if s.NodeStatus {
		status.NodeStatuses = []operatorv1.NodeStatus{{NodeName: in.NodeName}}
	}
	op := c.NewOperatorClient(s.Kind, s.Resource,
		operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed, LogLevel: operatorv1.Normal}},
		status)
	syncer, err := resourcesync.New(c, s.Name, op, c.Recorder, s.SyncRules)
	if err != nil {
		panic(err)
	}
	return Base{Cluster: c, In: in, Op: op, Recorder: c.Recorder, Syncer: syncer, Features: clusterconfig.FeatureGates(c, in), spec: s,
		merged: &mergedConfigs{}, observed: &observedConfigs{}}
}

// Name is the component's name in traces and reports.
func (b *Base) Name() string { return b.spec.Name }

// Operator is the component's operator resource.
func (b *Base) Operator() *loops.OperatorClient { return b.Op }

// StaticPod is what the operator hands its revision controller and installer.
func (b *Base) StaticPod() staticpod.StaticPod { return b.spec.StaticPod }

// Inputs are the objects the component reads that others produce.
func (b *Base) Inputs() []Input { return b.spec.Inputs }

// Revision is library-go's revision controller over StaticPod, run once every converge loop settled.
func (b *Base) Revision() ([]loops.Loop, error) {
	return staticpod.RevisionLoops(b.Cluster, b.spec.Name, b.spec.StaticPod, b.Op, b.Recorder)
}

// LoopName names one of the component's loops: <kind>/<component>[/<what>].
func (b *Base) LoopName(kind string, what ...string) string {
	return loops.LoopName(kind, b.spec.Name, what...)
}

// ControllerLoop runs a library-go controller as the loop <kind>/<component>[/<what>].
func (b *Base) ControllerLoop(ctrl loops.Syncer, kind string, what ...string) loops.Loop {
	return loops.ControllerLoop(b.LoopName(kind, what...), ctrl, b.Recorder)
}

// StaticResourcesLoop is library-go's static resource controller over files, as "static-resources/<component>".
func (b *Base) StaticResourcesLoop(instanceName string, files []string) loops.Loop {
	l := b.ControllerLoop(StaticResourceController(b.Cluster, instanceName, files, b.Op, b.Recorder), "static-resources")
	return UnchangedStaticResources(l, files, b.Op)
}

// NodeLoop is library-go's node controller, as "node/<component>".
func (b *Base) NodeLoop() loops.Loop {
	return b.ControllerLoop(NodeController(b.Cluster, b.spec.Name, b.Op, b.Recorder), "node")
}

// ConfigObserverLoop is library-go's config observer with the operator's observers, as
// "config-observer/<component>".
func (b *Base) ConfigObserverLoop(l Listers, observers ...configobserver.ObserveConfigFunc) loops.Loop {
	ctrl := configobserver.NewConfigObserver(b.spec.Name, b.Op, b.Recorder, l, nil, observers...)
	return b.ControllerLoop(ctrl, "config-observer")
}

// ResourceSyncLoop is the resource sync controller, as "resource-sync/<component>", run within its step until it
// writes nothing (loops.Loop.Settling: it visits its rules in map order).
func (b *Base) ResourceSyncLoop() loops.Loop {
	return b.ControllerLoop(b.Syncer, "resource-sync").Settling(b.Cluster, ResourceSyncRuns)
}

// ResourceSyncRuns bounds the runs of a resource sync controller within one step. A chain of n copies (a copy of
// a copy is n = 2: kube-apiserver's kubelet-serving-ca) settles in at most n + 1 runs, and each run past the first
// happens only because the one before wrote; past the bound the runner's next pass carries on, as it would
// without settling.
const ResourceSyncRuns = 8

// OperatorLoops are the loops a library-go static-pod operator runs after its own ones, in the operators' order
// (kube-controller-manager's and kube-scheduler's): static resources over manifests/<component>/static, the node
// controller, the config observer, the target-config steps and the resource sync.
func (b *Base) OperatorLoops(staticResources string, observer loops.Loop, targetConfig []loops.Loop) []loops.Loop {
	out := []loops.Loop{b.StaticResourcesLoop(staticResources, MustStaticFiles(b.spec.Name+"/static")), b.NodeLoop(), observer}
	out = append(out, targetConfig...)
	return append(out, b.ResourceSyncLoop())
}

// TargetConfigLoops are the target-config steps as loops "target-config/<component>/<step>", skipped while ready
// fails (nil: never).
func (b *Base) TargetConfigLoops(steps []Step, ready func(context.Context) error) []loops.Loop {
	return TargetConfigLoops(b.spec.Name, steps, ready)
}

// ObservedConfig decodes the operator's observed config and returns it with the spec.
func (b *Base) ObservedConfig() (map[string]interface{}, *operatorv1.StaticPodOperatorSpec, error) {
	spec, _, _, err := b.Op.GetStaticPodOperatorState()
	if err != nil {
		return nil, nil, err
	}
	obs, err := b.observed.decode(spec.ObservedConfig.Raw)
	if err != nil {
		return nil, nil, err
	}
	return obs, spec, nil
}

// observedConfigs keeps the last observed config ObservedConfig decoded (the target-config steps decode the same
// one, step after step and pass after pass), and hands out copies of it.
type observedConfigs struct {
	mu  sync.Mutex
	raw []byte
	obs map[string]interface{}
}

// decode is DecodeObserved(raw): a new object the caller owns.
func (o *observedConfigs) decode(raw []byte) (map[string]interface{}, error) {
	if o == nil {
		return DecodeObserved(raw)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.obs != nil && bytes.Equal(o.raw, raw) {
		return runtime.DeepCopyJSON(o.obs), nil
	}
	obs, err := DecodeObserved(raw)
	if err != nil {
		return nil, err
	}
	o.raw, o.obs = bytes.Clone(raw), runtime.DeepCopyJSON(obs)
	return obs, nil
}

// ApplyPodConfigMap applies the pod configmap <name> of the operand namespace with pod (see PodConfigMap).
func (b *Base) ApplyPodConfigMap(ctx context.Context, namespace, name string, pod *corev1.Pod, spec *operatorv1.StaticPodOperatorSpec) error {
	_, _, err := resourceapply.ApplyConfigMap(ctx, b.Cluster.Kube.CoreV1(), b.Recorder, PodConfigMap(namespace, name, pod, spec))
	return err
}

// ApplyMergedConfig applies cm with config.yaml: the layers (YAML or JSON) merged in order, maps merged and lists
// replaced, pruned to the fields of schema, as the operators' target-config controllers build config.yaml
// (resourcemerge.MergePrunedConfigMap).
//
// The merge depends on nothing but the schema's type and the layers' bytes, and every pass merges the same layers
// again: the last merge of each configmap is kept (mergedConfigs) and reused while they are the same.
func (b *Base) ApplyMergedConfig(ctx context.Context, schema runtime.Object, cm *corev1.ConfigMap, layers ...[]byte) error {
	var merged *corev1.ConfigMap
	config, ok := b.merged.get(cm, schema, layers)
	if ok {
		// What resourcemerge.MergePrunedConfigMap returns for config: it compares the string it holds with
		// the merged bytes (never equal) and returns a copy with config.yaml set.
		merged = cm.DeepCopy()
		merged.Data["config.yaml"] = string(config)
	} else {
		var err error
		merged, _, err = resourcemerge.MergePrunedConfigMap(schema, cm, "config.yaml", nil, layers...)
		if err != nil {
			return fmt.Errorf("%s/%s config.yaml: %w", cm.Namespace, cm.Name, err)
		}
		b.merged.put(cm, schema, layers, []byte(merged.Data["config.yaml"]))
	}
	_, _, err := resourceapply.ApplyConfigMap(ctx, b.Cluster.Kube.CoreV1(), b.Recorder, merged)
	return err
}

// mergedConfigs keeps, by configmap, the last config.yaml ApplyMergedConfig merged and what it merged it from:
// the schema's type (the schema must be its type's zero value: the merge decodes into a copy of it) and copies
// of the layers.
type mergedConfigs struct {
	mu   sync.Mutex
	last map[string]mergedConfig
}

type mergedConfig struct {
	schema reflect.Type
	layers [][]byte
	config []byte
}

func mergedKey(cm *corev1.ConfigMap) string { return cm.Namespace + "/" + cm.Name }

// get returns the config.yaml merged last for cm from the same schema type and layers.
func (m *mergedConfigs) get(cm *corev1.ConfigMap, schema runtime.Object, layers [][]byte) ([]byte, bool) {
	if m == nil || !zeroValue(schema) {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	last, ok := m.last[mergedKey(cm)]
	if !ok || last.schema != reflect.TypeOf(schema) || len(last.layers) != len(layers) {
		return nil, false
	}
	for i := range layers {
		if !bytes.Equal(last.layers[i], layers[i]) {
			return nil, false
		}
	}
	return last.config, true
}

// put keeps config as merged for cm from schema's type and (copies of) layers.
func (m *mergedConfigs) put(cm *corev1.ConfigMap, schema runtime.Object, layers [][]byte, config []byte) {
	if m == nil || !zeroValue(schema) {
		return
	}
	kept := make([][]byte, len(layers))
	for i, l := range layers {
		kept[i] = bytes.Clone(l)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]mergedConfig{}
	}
	m.last[mergedKey(cm)] = mergedConfig{schema: reflect.TypeOf(schema), layers: kept, config: config}
}

// zeroValue says whether o is a non-nil pointer to its type's zero value.
func zeroValue(o runtime.Object) bool {
	v := reflect.ValueOf(o)
	return v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().IsZero()
}

// Listers are the config observers' listers with every cluster configuration lister, the resource syncer and the
// feature gates filled; a component adds the configmap and secret listers its observers read.
func (b *Base) Listers() Listers {
	cfg := b.Cluster.ConfigInformers.Config().V1()
	return Listers{
		Sync:           b.Syncer,
		APIServer:      cfg.APIServers().Lister(),
		Authentication: cfg.Authentications().Lister(),
		Infrastructure: cfg.Infrastructures().Lister(),
		Network:        cfg.Networks().Lister(),
		Proxy:          cfg.Proxies().Lister(),
		Scheduler:      cfg.Schedulers().Lister(),
		FeatureGates:   b.Features,
	}
}

// ByFlavor is openshift or upstream, by the render's flavor (--flavor): the target-config step that writes the
// pod configmap is the only one that differs.
func ByFlavor[T any](in *clusterconfig.Inputs, openshift, upstream T) T {
	if in.Flavor == clusterconfig.FlavorUpstream {
		return upstream
	}
	return openshift
}
