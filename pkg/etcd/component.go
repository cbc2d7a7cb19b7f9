// Package etcd is the etcd component: the cluster-etcd-operator's control loops run offline against the render's
// cluster, to a single-member etcd as a static pod that starts on a fresh node.
//
// The loops, in the operator's order (Converge), each a loop of its own:
//
//	cert-rotation/<Name>          the signers etcd-signer and etcd-metric-signer with their bundles etcd-ca-bundle
//	                              and etcd-metrics-ca-bundle, the clients etcd-client and etcd-metric-client, and
//	                              the node's etcd-peer-<node>, etcd-serving-<node>, etcd-serving-metrics-<node>
//	                              (library-go certrotation, one controller per row of Rotations)
//	cert-signer/etcd-all-bundles  server-ca-bundle.crt and metrics-ca-bundle.crt in one configmap
//	cert-signer/etcd-all-certs    every node certificate and key in one secret
//	static-resources/etcd         the namespaces and the etcd service (library-go staticresourcecontroller)
//	config-observer/etcd          the TLS profile and the control-plane replicas (library-go configobserver)
//	resource-sync/etcd            the bundles and client certificates other components read, openshift-config
//	                              among them (library-go resourcesynccontroller)
//	endpoints/etcd-endpoints      the members' IPs, as bootstrap-in-place seeds them
//	env-var/etcd                  the environment of every etcd container (writes nothing; read by the next loops)
//	target-config/etcd-scripts    etcd.env and the backup and restore scripts
//	target-config/restore-etcd-pod  the restore and quorum-restore pods
//	target-config/etcd-pod        the static pod
//
// and in the revision phase revision/etcd (library-go revision controller) makes revision 1.
//
// # Fresh-node start (adaptation)
//
// The operator's etcd container (revision 1 and later) asks discover-etcd-initial-cluster for the initial cluster:
// that needs either an existing member directory or a reachable member, which a brand-new node has neither of; the
// container would restart forever. On a real cluster the bootstrap member has formed the cluster before. The
// rendered etcd container therefore decides itself: when /var/lib/etcd/member is absent (first boot), etcd starts
// with --initial-cluster-state=new --initial-cluster=<node>=https://<node IP>:2380 and forms a new single-member
// cluster; on every later boot it starts from its data directory exactly as the operator's pod does. Everything
// else is the operator's pod. manifests/etcd/conformance-adaptations.yaml names the difference.
package etcd

import (
	"fmt"
	"sync"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
	"github.com/render-static/render-static/pkg/staticpod"
)

// The operator's namespaces.
const (
	OperatorNamespace = "openshift-etcd-operator"
	TargetNamespace   = "openshift-etcd"
	ConfigNamespace   = "openshift-config"
	ManagedNamespace  = "openshift-config-managed"
	KubeSystem        = "kube-system"
)

// Namespaces are the namespaces whose objects etcd's loops list.
var Namespaces = []string{TargetNamespace, OperatorNamespace, ConfigNamespace, ManagedNamespace, KubeSystem}

// Names of the resources the loops make, in the target namespace unless said otherwise.
const (
	PodConfigMap      = "etcd-pod"
	EndpointsName     = "etcd-endpoints"
	AllBundlesName    = "etcd-all-bundles"
	AllCertsName      = "etcd-all-certs"
	ScriptsName       = "etcd-scripts"
	RestorePodName    = "restore-etcd-pod"
	CertDir           = "etcd-certs"
	SignerName        = "etcd-signer"
	MetricSignerName  = "etcd-metric-signer"
	CABundleName      = "etcd-ca-bundle"
	MetricsBundleName = "etcd-metrics-ca-bundle"
	ClientName        = "etcd-client"
	MetricClientName  = "etcd-metric-client"
	// ServingCAName is the name other components know the etcd CA bundle by (openshift-config/etcd-serving-ca).
	ServingCAName = "etcd-serving-ca"
)

// ComponentName is the component's name in traces, loop names and reports.
const ComponentName = "etcd"

// Component is etcd in one render.
type Component struct {
	operator.Base

	mu  sync.Mutex
	env EnvVars // computed by the env-var loop
}

// New registers the operator resource: operator.openshift.io/v1 Etcd "cluster", managed, with the node in its
// status as the operator's node controller puts it.
func New(c *loops.Cluster, in *clusterconfig.Inputs) *Component {
	return &Component{Base: operator.NewBase(c, in, operator.Spec{Name: ComponentName, Kind: "Etcd", Resource: "etcds",
		NodeStatus: true, StaticPod: StaticPod(), Inputs: Inputs, SyncRules: SyncRules})}
}

// Converge returns the loops that run to a fixpoint, in the operator's order.
func (k *Component) Converge() []loops.Loop {
	var out []loops.Loop
	for _, r := range Rotations(k.In) {
		out = append(out, r.Loop(k.Cluster, k.In.Lifetimes, k.Op, k.Recorder))
	}
	out = append(out, k.allBundlesLoop(), k.allCertsLoop())
	out = append(out, k.staticResourcesLoop(), k.configObserverLoop(), k.ResourceSyncLoop(), k.endpointsLoop(), k.envVarLoop())
	out = append(out, k.scriptsLoop(), k.restorePodLoop(), k.podLoop())
	return out
}

// StaticPod is the operator's declaration of the etcd static pod: the revisioned configmaps and secret, and the
// cert directory etcd-certs that holds the live certificates, the scripts and the restore pods.
func StaticPod() staticpod.StaticPod {
	return staticpod.StaticPod{
		Namespace:    TargetNamespace,
		PodConfigMap: PodConfigMap,
		ConfigMaps:   []staticpod.Resource{{Name: PodConfigMap}, {Name: EndpointsName}, {Name: AllBundlesName}},
		Secrets:      []staticpod.Resource{{Name: AllCertsName}},
		CertDir:      CertDir,
		CertConfigMaps: []staticpod.Resource{
			{Name: RestorePodName}, {Name: ScriptsName}, {Name: AllBundlesName},
			{Name: "external-etcd-pod", Optional: true},
		},
		CertSecrets: []staticpod.Resource{{Name: AllCertsName}},
	}
}

// envVars returns what the env-var loop computed last.
func (k *Component) envVars() (EnvVars, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.env == nil {
		return nil, fmt.Errorf("etcd environment not computed yet (env-var/etcd)")
	}
	return k.env, nil
}
