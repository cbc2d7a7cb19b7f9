// Package scheduler is the kube-scheduler component: the kube-scheduler operator's control loops, in the
// operator's order, run offline against the render's cluster until they settle, and then its revision controller,
// which makes revision 1 of the static pod. kube-scheduler has no certificates of its own: its client certificate
// is minted by kube-apiserver's operator (openshift-config-managed/kube-scheduler-client-cert-key).
//
// Loops, in order (one pass runs them all; the engine repeats passes until nothing changes):
//
//	static-resources/kube-scheduler          library-go staticresourcecontroller over manifests/kube-scheduler/static
//	node/kube-scheduler                      library-go node controller: status.nodeStatuses
//	config-observer/kube-scheduler           library-go configobserver: scheduler policy (none) and TLS profile
//	target-config/kube-scheduler/<what>      the operator's target config, one loop per output (ours)
//	resource-sync/kube-scheduler             library-go resourcesynccontroller: the client certificate
//	revision/kube-scheduler                  library-go revisioncontroller (revision phase)
package scheduler

import (
	"github.com/openshift/library-go/pkg/operator/configobserver/featuregates"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
	"github.com/render-static/render-static/pkg/resourcesync"
	"github.com/render-static/render-static/pkg/staticpod"
)

// Namespaces of the kube-scheduler operator.
const (
	OperatorNamespace = "openshift-kube-scheduler-operator"
	TargetNamespace   = "openshift-kube-scheduler"
	ConfigNamespace   = "openshift-config"
	ManagedNamespace  = "openshift-config-managed"
)

// ComponentName is the component's name in traces, loop names and reports.
const ComponentName = "kube-scheduler"

// jira is the owning component the operator stamps on what it creates.
const jira = "kube-scheduler"

// Namespaces are the namespaces whose objects kube-scheduler's loops list.
var Namespaces = []string{OperatorNamespace, TargetNamespace, ConfigNamespace, ManagedNamespace}

// Registration is kube-scheduler's entry in the registry (pkg/components).
var Registration = operator.Registration{
	Name:       ComponentName,
	Namespaces: Namespaces,
	Images: clusterconfig.Images{
		"hyperkube":                       clusterconfig.OKDImage("hyperkube"),
		"cluster-kube-scheduler-operator": clusterconfig.OKDImage("cluster-kube-scheduler-operator"),
		UpstreamImage:                     clusterconfig.KubernetesImage(UpstreamImage),
	},
	UpstreamImage: UpstreamImage,
	Inputs:        Inputs,
	New:           func(c *loops.Cluster, in *clusterconfig.Inputs) operator.Component { return New(c, in) },
}

// Inputs are what kube-scheduler's loops read that others produce.
var Inputs = []operator.Input{
	operator.ServiceAccountCAInput,
	operator.Secret(ManagedNamespace, "kube-scheduler-client-cert-key", "tls.crt", "kube-apiserver"),
	operator.Secret(TargetNamespace, "localhost-recovery-client-token", "token", "emulate/legacy-serviceaccount-token-controller"),
	{Kind: "Scheduler", Name: "cluster", From: "installer"},
	{Kind: "Infrastructure", Name: "cluster", From: "installer"},
	{Kind: "Node", From: "emulate/node"},
}

// Component is kube-scheduler in one render.
type Component struct {
	operator.Base
	features featuregates.FeatureGateAccess
	syncer   *resourcesynccontroller.ResourceSyncController
}

// New registers the operator resource (operator.openshift.io/v1 KubeScheduler "cluster", managed, log level
// Normal) and builds the resource syncer its loops share: kube-apiserver's operator mints the scheduler's client
// certificate in openshift-config-managed, it goes into the cert directory; the config observer adds the policy
// configmap rule through it.
func New(c *loops.Cluster, in *clusterconfig.Inputs) *Component {
	s := &Component{Base: operator.NewBase(c, in, operator.Spec{Name: ComponentName, Kind: "KubeScheduler",
		Resource: "kubeschedulers", StaticPod: StaticPod(), Inputs: Inputs})}
	s.features = clusterconfig.FeatureGates(c, in)
	s.syncer = s.ResourceSync(SyncRules)
	return s
}

// Converge returns the loops that run to a fixpoint, in the order of the package comment.
func (s *Component) Converge() []loops.Loop {
	out := []loops.Loop{
		s.StaticResourcesLoop("KubeSchedulerStaticResources", staticFiles()),
		s.NodeLoop(),
		s.configObserver(),
	}
	out = append(out, s.targetConfig()...)
	out = append(out, s.ControllerLoop(s.syncer, "resource-sync"))
	return out
}

// staticFiles are the YAML files of manifests/kube-scheduler/static, sorted.
func staticFiles() []string {
	files, err := operator.StaticFiles(ComponentName + "/static")
	if err != nil {
		panic(err) // the embedded manifests are part of the binary: a programming error
	}
	return files
}

// StaticPod is kube-scheduler's static pod description (see Component.StaticPod).
func StaticPod() staticpod.StaticPod {
	r := func(name string) staticpod.Resource { return staticpod.Resource{Name: name} }
	opt := func(name string) staticpod.Resource { return staticpod.Resource{Name: name, Optional: true} }
	return staticpod.StaticPod{
		Namespace:    TargetNamespace,
		PodConfigMap: "kube-scheduler-pod",
		ConfigMaps: []staticpod.Resource{
			r("kube-scheduler-pod"), r("config"), r("serviceaccount-ca"), opt("policy-configmap"),
			r("scheduler-kubeconfig"), r("kube-scheduler-cert-syncer-kubeconfig"),
		},
		Secrets:     []staticpod.Resource{opt("serving-cert"), r("localhost-recovery-client-token")},
		CertDir:     "kube-scheduler-certs",
		CertSecrets: []staticpod.Resource{r("kube-scheduler-client-cert-key")},
	}
}

// SyncRules are the scheduler operator's resource sync rules.
var SyncRules = []resourcesync.Rule{
	{Secret: true, Dest: certs.Location{Namespace: TargetNamespace, Name: "kube-scheduler-client-cert-key"},
		Source: certs.Location{Namespace: ManagedNamespace, Name: "kube-scheduler-client-cert-key"}},
}
