// Package apiserver is the kube-apiserver component: the kube-apiserver operator's control loops in the order the
// seed describes (cert rotation, encryption, bound tokens, static resources, config observation, target config,
// resource sync), run offline against the render's cluster, then its revision controller.
package apiserver

import (
	"fmt"

	"github.com/openshift/library-go/pkg/operator/apiserver/controller/auditpolicy"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
	"github.com/render-static/render-static/pkg/staticpod"
)

// Namespaces are the namespaces whose objects kube-apiserver's loops list.
var Namespaces = []string{OperatorNamespace, TargetNamespace, ConfigNamespace, ManagedNamespace, "kube-system", EtcdNamespace}

// EtcdNamespace holds etcd's endpoints configmap, which the etcd component publishes.
const EtcdNamespace = "openshift-etcd"

// ComponentName is the component's name in traces, loop names and reports.
const ComponentName = "kube-apiserver"

// Component is kube-apiserver in one render. Its resource sync controller (Base.Syncer) runs as the
// "resource-sync" loop; the encryption controllers and the config observers register rules on it.
type Component struct {
	operator.Base
}

// New registers the operator resource (operator.openshift.io/v1 KubeAPIServer "cluster", managed, with the
// node in its status as the operator's node controller would put it).
func New(c *loops.Cluster, in *clusterconfig.Inputs) *Component {
	return &Component{Base: operator.NewBase(c, in, operator.Spec{Name: ComponentName, Kind: "KubeAPIServer",
		Resource: "kubeapiservers", NodeStatus: true, StaticPod: StaticPod(), Inputs: Inputs, SyncRules: SyncRules})}
}

// Converge returns the loops that run to a fixpoint, in the operator's order (seed 001):
//
//	cert rotation → encryption → bound service-account token signer → static resources → config observation →
//	target config → resource sync → node kubeconfigs, audit policy
//
// Every pass runs them all again, which is the seed's "one more time" cycle through observation, target config
// and resource sync.
func (k *Component) Converge() []loops.Loop {
	cfg := k.Cluster.ConfigInformers.Config().V1()
	var out []loops.Loop
	for _, r := range Rotations(cfg.Networks().Lister(), cfg.Infrastructures().Lister()) {
		out = append(out, r.Loop(k.Cluster, k.In.Lifetimes, k.Op, k.Recorder))
	}
	stages := [][]loops.Loop{
		k.encryptionLoops(),
		{k.boundSATokenSignerLoop()},
		{k.staticResourcesLoop()},
		{k.configObserverLoop()},
		k.bundleLoops(),
		{k.targetConfigLoop(), k.podConfigMapLoop()},
		{loops.ControllerLoop("resource-sync", k.Syncer, k.Recorder).Settling(k.Cluster, operator.ResourceSyncRuns)},
		{k.nodeKubeconfigsLoop(), k.auditPolicyLoop()},
	}
	for _, s := range stages {
		out = append(out, s...)
	}
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

// Revision returns the revision phase's loop: library-go's revision controller over the operator's revisioned
// configmaps and secrets. It waits (makes no revision, and no error) while an input another component produces
// is missing; Waiting says which.
func (k *Component) Revision() ([]loops.Loop, error) {
	l, err := staticpod.RevisionLoop(k.Cluster, k.Name(), StaticPod(), k.Op, k.Recorder)
	if err != nil {
		return nil, err
	}
	return []loops.Loop{operator.WhenInputs(k.Cluster, l, revisionInputs...)}, nil
}

// StaticPod is kube-apiserver's static pod as the operator hands it to its revision controller and installer:
// the revisioned configmaps and secrets (the pod configmap first) and the cert directory kube-apiserver-certs,
// which the cert syncer keeps live on a running node.
func StaticPod() staticpod.StaticPod {
	return staticpod.StaticPod{
		Namespace:    TargetNamespace,
		PodConfigMap: "kube-apiserver-pod",
		ConfigMaps: []staticpod.Resource{
			{Name: "kube-apiserver-pod"},
			{Name: "config"},
			{Name: "kube-apiserver-cert-syncer-kubeconfig"},
			{Name: "oauth-metadata", Optional: true},
			{Name: "cloud-config", Optional: true},
			{Name: "bound-sa-token-signing-certs"},
			{Name: "etcd-serving-ca"},
			{Name: "kube-apiserver-server-ca", Optional: true},
			{Name: "kubelet-serving-ca"},
			{Name: "sa-token-signing-certs"},
			{Name: "kube-apiserver-audit-policies"},
			{Name: "auth-config", Optional: true},
		},
		Secrets: []staticpod.Resource{
			{Name: "etcd-client"},
			{Name: "encryption-config", Optional: true},
			{Name: "localhost-recovery-serving-certkey"},
			{Name: "localhost-recovery-client-token"},
			{Name: "webhook-authenticator", Optional: true},
		},
		CertDir: "kube-apiserver-certs",
		CertConfigMaps: []staticpod.Resource{
			{Name: "aggregator-client-ca"},
			{Name: "client-ca"},
			{Name: "trusted-ca-bundle", Optional: true},
			{Name: "control-plane-node-kubeconfig"},
			{Name: "check-endpoints-kubeconfig"},
		},
		CertSecrets: certDirSecrets(),
	}
}

func certDirSecrets() []staticpod.Resource {
	out := []staticpod.Resource{
		{Name: "aggregator-client"},
		{Name: "localhost-serving-cert-certkey"},
		{Name: "service-network-serving-certkey"},
		{Name: "external-loadbalancer-serving-certkey"},
		{Name: "internal-loadbalancer-serving-certkey"},
		{Name: "bound-service-account-signing-key"},
		{Name: "control-plane-node-admin-client-cert-key"},
		{Name: "check-endpoints-client-cert-key"},
		{Name: "kubelet-client"},
		{Name: "node-kubeconfigs"},
		{Name: "user-serving-cert", Optional: true},
	}
	for i := 0; i < 10; i++ {
		out = append(out, staticpod.Resource{Name: fmt.Sprintf("user-serving-cert-%03d", i), Optional: true})
	}
	return out
}

// auditPolicyLoop is library-go's audit policy controller: the APIServer's audit profile as
// openshift-kube-apiserver/kube-apiserver-audit-policies (key policy.yaml). It reads the operator's management
// state, the APIServer config and the configmap it writes, and sets only its own AuditPolicyDegraded condition
// (apiserver/controller/auditpolicy: sync, syncAuditPolicy): the runner skips it while none of those changed
// (loops.Loop.Unchanged).
func (k *Component) auditPolicyLoop() loops.Loop {
	const name = "kube-apiserver-audit-policies"
	ctrl := auditpolicy.NewAuditPolicyController(ComponentName, TargetNamespace, name,
		k.Op, k.Cluster.Kube, k.Cluster.ConfigInformers, k.Cluster.KubeInformers.InformersFor(TargetNamespace), k.Recorder)
	return loops.ControllerLoop("target-config/"+name, ctrl, k.Recorder).
		Watches(k.Op.ManagementState(), loops.Object{Resource: "apiservers", Name: "cluster"}, loops.ConfigMap(TargetNamespace, name)).
		Unchanged()
}
