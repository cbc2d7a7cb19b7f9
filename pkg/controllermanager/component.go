// Package controllermanager is the kube-controller-manager component: the kube-controller-manager operator's
// control loops, in the operator's order, run offline against the render's cluster until they settle, and then its
// revision controller, which makes revision 1 of the static pod.
//
// Loops, in order (one pass runs them all; the engine repeats passes until nothing changes):
//
//	cert-rotation/CSRSigningCert                      library-go certrotation: the CSR signer's signer, its CA
//	                                                  bundle and the intermediate "kube-csr-signer" (operator ns)
//	sa-token-signer                                   the service-account token signer in bootstrap mode (ours)
//	static-resources/kube-controller-manager          library-go staticresourcecontroller over manifests/.../static
//	node/kube-controller-manager                      library-go node controller: status.nodeStatuses
//	config-observer/kube-controller-manager           library-go configobserver with the operator's observers
//	target-config/kube-controller-manager/<what>      the operator's target config, one loop per output (ours)
//	resource-sync/kube-controller-manager             library-go resourcesynccontroller with the operator's rules
//	revision/kube-controller-manager                  library-go revisioncontroller (revision phase)
package controllermanager

import (
	"github.com/openshift/library-go/pkg/crypto"

	"github.com/render-static/render-static/internal/parsecache"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
	"github.com/render-static/render-static/pkg/staticpod"
)

// Namespaces of the kube-controller-manager operator.
const (
	OperatorNamespace = "openshift-kube-controller-manager-operator"
	TargetNamespace   = "openshift-kube-controller-manager"
	ConfigNamespace   = "openshift-config"
	ManagedNamespace  = "openshift-config-managed"
)

// ComponentName is the component's name in traces, loop names and reports.
const ComponentName = "kube-controller-manager"

// jira is the owning component the operator stamps on what it creates.
const jira = "kube-controller-manager"

// Namespaces are the namespaces whose objects kube-controller-manager's loops list.
var Namespaces = []string{OperatorNamespace, TargetNamespace, ConfigNamespace, ManagedNamespace, "kube-system"}

// Component is kube-controller-manager in one render.
type Component struct {
	operator.Base
	// signer is the csr-signer CA parsed last (csrSigner): two loops read it every pass, and parsing it (its RSA
	// key's validation) is most of their cost. The CA is only read.
	signer parsecache.Value[*crypto.CA]
}

// New registers the operator resource (operator.openshift.io/v1 KubeControllerManager "cluster", managed, log
// level Normal, useMoreSecureServiceCA as for a new cluster) with its resource sync rules.
func New(c *loops.Cluster, in *clusterconfig.Inputs) *Component {
	k := &Component{Base: operator.NewBase(c, in, operator.Spec{Name: ComponentName, Kind: "KubeControllerManager",
		Resource: "kubecontrollermanagers", StaticPod: StaticPod(), Inputs: Inputs, SyncRules: SyncRules})}
	// Exported with the resource, so that the operator on the node keeps the pod as rendered (see
	// UseMoreSecureServiceCA).
	k.Op.KindSpec = map[string]interface{}{"useMoreSecureServiceCA": UseMoreSecureServiceCA}
	return k
}

// Converge returns the loops that run to a fixpoint, in the order of the package comment.
func (k *Component) Converge() []loops.Loop {
	own := []loops.Loop{
		CSRSignerRotation().Loop(k.Cluster, csrSignerLifetimes(k.In.Lifetimes), k.Op, k.Recorder),
		k.saTokenSigner(),
	}
	return append(own, k.OperatorLoops("KubeControllerManagerStaticResources", k.configObserver(), k.targetConfig())...)
}

// StaticPod is kube-controller-manager's static pod description (see Component.StaticPod).
func StaticPod() staticpod.StaticPod {
	return staticpod.StaticPod{
		Namespace: TargetNamespace, PodConfigMap: "kube-controller-manager-pod", CertDir: "kube-controller-manager-certs",
		ConfigMaps: staticpod.Names("kube-controller-manager-pod", "config", "cluster-policy-controller-config",
			"controller-manager-kubeconfig", "cloud-config?", "kube-controller-cert-syncer-kubeconfig", "serviceaccount-ca",
			"service-ca", "recycler-config"),
		Secrets:        staticpod.Names("service-account-private-key", "serving-cert?", "localhost-recovery-client-token"),
		CertConfigMaps: staticpod.Names("aggregator-client-ca", "client-ca", "trusted-ca-bundle?"),
		CertSecrets:    staticpod.Names("kube-controller-manager-client-cert-key", "csr-signer"),
	}
}

func loc(ns, name string) certs.Location { return certs.Location{Namespace: ns, Name: name} }

// CSRSignerRotation is the operator's only cert-rotation row: csr-signer-signer signs the intermediate CA
// csr-signer ("kube-csr-signer"), with which kube-controller-manager signs kubelet client and serving CSRs;
// csr-controller-signer-ca publishes csr-signer-signer.
func CSRSignerRotation() certs.Rotation {
	return certs.Rotation{
		Name:          "CSRSigningCert",
		Signer:        loc(OperatorNamespace, "csr-signer-signer"),
		Bundle:        loc(OperatorNamespace, "csr-controller-signer-ca"),
		Target:        loc(OperatorNamespace, "csr-signer"),
		Kind:          certs.IntermediateSigner,
		SignerName:    "kube-csr-signer",
		Description:   "Intermediate CA with which kube-controller-manager signs kubelet client and serving certificates.",
		JiraComponent: jira,
	}
}

// csrSignerLifetimes: csr-signer is a signer, not a leaf (it signs every kubelet certificate for
// --cluster-signing-duration), so it lives as long as signers do; library-go caps it at what its own signer has
// left.
func csrSignerLifetimes(lt certs.Lifetimes) certs.Lifetimes {
	return certs.Lifetimes{Leaf: lt.Signer, Signer: lt.Signer}
}
