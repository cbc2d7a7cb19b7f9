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
	"context"

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

// Component is kube-scheduler in one render.
type Component struct {
	operator.Base
}

// New registers the operator resource (operator.openshift.io/v1 KubeScheduler "cluster", managed, log level
// Normal) with its resource sync rule: kube-apiserver's operator mints the scheduler's client certificate in
// openshift-config-managed, it goes into the cert directory; the config observer adds the policy configmap rule
// through the syncer.
func New(c *loops.Cluster, in *clusterconfig.Inputs) *Component {
	return &Component{Base: operator.NewBase(c, in, operator.Spec{Name: ComponentName, Kind: "KubeScheduler",
		Resource: "kubeschedulers", StaticPod: StaticPod(), Inputs: Inputs, SyncRules: SyncRules})}
}

// Converge returns the loops that run to a fixpoint, in the order of the package comment.
func (s *Component) Converge() []loops.Loop {
	return s.OperatorLoops("KubeSchedulerStaticResources", s.configObserver(), s.targetConfig())
}

// targetConfig is the operator's target config controller, one loop per output, in the operator's order.
func (s *Component) targetConfig() []loops.Loop {
	return s.TargetConfigLoops([]operator.Step{
		{Name: "config", Sync: s.manageConfig},
		{Name: "serviceaccount-ca", Sync: func(ctx context.Context) error {
			return operator.ServiceAccountCA(ctx, s.Cluster, TargetNamespace, jira, s.Recorder)
		}},
		{Name: "localhost-recovery-client-token", Sync: func(context.Context) error {
			return operator.CheckRecoveryToken(s.Cluster, TargetNamespace)
		}},
		{Name: "scheduler-kubeconfig", Sync: func(ctx context.Context) error {
			return operator.InternalKubeconfig(ctx, s.Cluster, ComponentName+"/kubeconfig.yaml", s.Recorder)
		}},
		{Name: "kube-scheduler-pod", Sync: operator.ByFlavor(s.In, s.managePod, s.manageUpstreamPod)},
	}, nil)
}

// StaticPod is kube-scheduler's static pod description (see Component.StaticPod).
func StaticPod() staticpod.StaticPod {
	return staticpod.StaticPod{
		Namespace: TargetNamespace, PodConfigMap: "kube-scheduler-pod", CertDir: "kube-scheduler-certs",
		ConfigMaps: staticpod.Names("kube-scheduler-pod", "config", "serviceaccount-ca", "policy-configmap?",
			"scheduler-kubeconfig", "kube-scheduler-cert-syncer-kubeconfig"),
		Secrets:     staticpod.Names("serving-cert?", "localhost-recovery-client-token"),
		CertSecrets: staticpod.Names("kube-scheduler-client-cert-key"),
	}

}

// SyncRules are the scheduler operator's resource sync rules.
var SyncRules = []resourcesync.Rule{
	{Secret: true, Dest: certs.Location{Namespace: TargetNamespace, Name: "kube-scheduler-client-cert-key"},
		Source: certs.Location{Namespace: ManagedNamespace, Name: "kube-scheduler-client-cert-key"}},
}
