// Package apiserver is the kube-apiserver component: the kube-apiserver operator's control loops in the order the
// seed describes (cert rotation, encryption, bound tokens, static resources, config observation, target config,
// resource sync), run offline against the render's cluster.
package apiserver

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/events"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/staticpod"
)

// Namespaces are the namespaces whose objects kube-apiserver's loops list.
var Namespaces = []string{OperatorNamespace, TargetNamespace, ConfigNamespace, ManagedNamespace, "kube-system", "openshift-etcd"}

// Component is kube-apiserver in one render.
type Component struct {
	cluster  *loops.Cluster
	in       *clusterconfig.Inputs
	op       *loops.OperatorClient
	recorder events.Recorder
}

// New registers the operator resource (operator.openshift.io/v1 KubeAPIServer "cluster", managed, with the
// node in its status as the operator's node controller would put it).
func New(c *loops.Cluster, in *clusterconfig.Inputs) *Component {
	op := c.NewOperatorClient("KubeAPIServer", "kubeapiservers",
		operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed, LogLevel: operatorv1.Normal}},
		operatorv1.StaticPodOperatorStatus{NodeStatuses: []operatorv1.NodeStatus{{NodeName: in.NodeName}}})
	return &Component{cluster: c, in: in, op: op, recorder: c.Recorder}
}

// Name is the component's name in traces and reports.
func (k *Component) Name() string { return "kube-apiserver" }

// Converge returns the loops that run to a fixpoint, in order.
func (k *Component) Converge() []loops.Loop {
	cfg := k.cluster.ConfigInformers.Config().V1()
	var out []loops.Loop
	for _, r := range Rotations(cfg.Networks().Lister(), cfg.Infrastructures().Lister()) {
		out = append(out, r.Loop(k.cluster, k.in.Lifetimes, k.op, k.recorder))
	}
	out = append(out, k.bundleLoops()...)
	return out
}

// ServingCABundles are the CA bundles that verify kube-apiserver's serving certificates, in the order the
// operator unions them into kube-apiserver-server-ca.
var ServingCABundles = []certs.Location{
	loc(OperatorNamespace, "loadbalancer-serving-ca"),
	loc(OperatorNamespace, "localhost-serving-ca"),
	loc(OperatorNamespace, "service-network-serving-ca"),
	loc(OperatorNamespace, "localhost-recovery-serving-ca"),
}

// Operator is the component's operator resource.
func (k *Component) Operator() *loops.OperatorClient { return k.op }

// Revision returns the revision phase's loops: none until the pod and config exist.
func (k *Component) Revision() ([]loops.Loop, error) { return nil, nil }

// StaticPod is what the installer lays out for kube-apiserver.
func (k *Component) StaticPod() staticpod.StaticPod { return CertDirSecrets() }

// CertDirSecrets is the part of the operator's cert directory (kube-apiserver-certs) that the loops so far
// produce: every rotation target in the operand namespace but the localhost-recovery serving cert (which is
// revisioned), and the client CA bundle. The installer lays these out unrevisioned, and the cert syncer keeps
// them live on a running node.
func CertDirSecrets() staticpod.StaticPod {
	sp := staticpod.StaticPod{Namespace: TargetNamespace, CertDir: "kube-apiserver-certs",
		CertConfigMaps: []staticpod.Resource{{Name: "client-ca"}}}
	for _, r := range Rotations(nil, nil) {
		if r.Target.Namespace == TargetNamespace && r.Name != "LocalhostRecoveryServing" {
			sp.CertSecrets = append(sp.CertSecrets, staticpod.Resource{Name: r.Target.Name})
		}
	}
	return sp
}
