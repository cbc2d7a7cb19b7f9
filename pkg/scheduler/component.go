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
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/configobserver/featuregates"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/controllermanager"
	"github.com/render-static/render-static/pkg/loops"
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

// Component is kube-scheduler in one render.
type Component struct {
	cluster  *loops.Cluster
	in       *clusterconfig.Inputs
	op       *loops.OperatorClient
	recorder events.Recorder
	features featuregates.FeatureGateAccess
	syncer   *resourcesynccontroller.ResourceSyncController
}

// New registers the operator resource (operator.openshift.io/v1 KubeScheduler "cluster", managed, log level
// Normal) and builds the resource syncer its loops share.
func New(c *loops.Cluster, in *clusterconfig.Inputs) *Component {
	op := c.NewOperatorClient("KubeScheduler", "kubeschedulers",
		operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed, LogLevel: operatorv1.Normal}},
		operatorv1.StaticPodOperatorStatus{})
	s := &Component{cluster: c, in: in, op: op, recorder: c.Recorder, features: clusterconfig.FeatureGates(c, in)}
	s.syncer = s.newResourceSync()
	return s
}

// Name is the component's name in traces and reports.
func (s *Component) Name() string { return ComponentName }

// Operator is the component's operator resource.
func (s *Component) Operator() *loops.OperatorClient { return s.op }

// Converge returns the loops that run to a fixpoint, in the order of the package comment.
func (s *Component) Converge() []loops.Loop {
	out := []loops.Loop{
		controllermanager.StaticResources(s.cluster, ComponentName, "KubeSchedulerStaticResources", ComponentName+"/static", s.op, s.recorder),
		controllermanager.NodeLoop(s.cluster, ComponentName, s.op, s.recorder),
		s.configObserver(),
	}
	out = append(out, s.targetConfig()...)
	out = append(out, loops.ControllerLoop("resource-sync/"+ComponentName, s.syncer, s.recorder))
	return out
}

// Revision returns the revision controller, run once every converge loop settled.
func (s *Component) Revision() ([]loops.Loop, error) {
	return staticpod.RevisionLoops(s.cluster, ComponentName, s.StaticPod(), s.op, s.recorder)
}

// StaticPod is what the operator hands its revision controller and installer. The pod configmap and manifest are
// kube-scheduler-pod while the pod itself is named openshift-kube-scheduler.
func (s *Component) StaticPod() staticpod.StaticPod { return StaticPod() }

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

// newResourceSync builds library-go's resource sync controller with the operator's rule (kube-apiserver's
// operator mints the scheduler's client certificate in openshift-config-managed; it goes into the cert
// directory); the config observer adds the policy configmap rule through it.
func (s *Component) newResourceSync() *resourcesynccontroller.ResourceSyncController {
	rs, err := resourcesync.New(s.cluster, ComponentName, s.op, s.recorder, SyncRules)
	if err != nil {
		panic(err) // a rule naming a namespace missing from Namespaces: a programming error
	}
	return rs
}

// SyncRules are the scheduler operator's resource sync rules.
var SyncRules = []resourcesync.Rule{
	{Secret: true, Dest: certs.Location{Namespace: TargetNamespace, Name: "kube-scheduler-client-cert-key"},
		Source: certs.Location{Namespace: ManagedNamespace, Name: "kube-scheduler-client-cert-key"}},
}
