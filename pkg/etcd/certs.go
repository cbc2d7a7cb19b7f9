package etcd

import (
	"context"
	"crypto/x509"
	"fmt"

	"github.com/openshift/api/annotations"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
)

const jira = "etcd"

func loc(name string) certs.Location { return certs.Location{Namespace: TargetNamespace, Name: name} }

// PeerSecret, ServingSecret and ServingMetricsSecret are the node's certificate secrets.
func PeerSecret(node string) string           { return "etcd-peer-" + node }
func ServingSecret(node string) string        { return "etcd-serving-" + node }
func ServingMetricsSecret(node string) string { return "etcd-serving-metrics-" + node }

// NodeSecrets are the node's certificate secrets, in the order etcd-all-certs lists them.
func NodeSecrets(node string) []string {
	return []string{PeerSecret(node), ServingSecret(node), ServingMetricsSecret(node)}
}

// serverNames are the names every etcd node certificate carries besides the node's IPs.
var serverNames = []string{
	"localhost",
	"etcd.kube-system.svc", "etcd.kube-system.svc.cluster.local",
	"etcd.openshift-etcd.svc", "etcd.openshift-etcd.svc.cluster.local",
	"127.0.0.1", "::1",
}

// NodeHostnames are the SANs of the node's peer, serving and serving-metrics certificates: the fixed server names
// and every IP of the node (both for dual stack), as the operator takes them from the node's InternalIPs.
func NodeHostnames(in *clusterconfig.Inputs) []string {
	out := append([]string(nil), serverNames...)
	for _, ip := range in.NodeIPs {
		out = append(out, ip.String())
	}
	return out
}

// Rotations is etcd's certificate table: two signers in the target namespace with their bundles, the two client
// certificates, and the three certificates of the node. The node certificates are serving certificates that are
// also used as clients (peers, etcdctl, the readyz probe), so they carry both extended key usages.
func Rotations(in *clusterconfig.Inputs) []certs.Rotation {
	signer, bundle := loc(SignerName), loc(CABundleName)
	metricSigner, metricBundle := loc(MetricSignerName), loc(MetricsBundleName)
	node := in.NodeName
	hostnames := func() ([]string, error) { return NodeHostnames(in), nil }
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}
	rows := []certs.Rotation{
		{Name: "EtcdClient", Signer: signer, Bundle: bundle, Target: loc(ClientName), Kind: certs.Client,
			User: "etcd-client", Groups: []string{"system:etcd", "etcd-client"},
			Description: "etcd client certificate"},
		{Name: "EtcdMetricClient", Signer: metricSigner, Bundle: metricBundle, Target: loc(MetricClientName), Kind: certs.Client,
			User: "etcd-metric", Groups: []string{"system:etcd", "etcd-metric"},
			Description: "etcd metrics client certificate"},
		{Name: "EtcdPeer-" + node, Signer: signer, Bundle: bundle, Target: loc(PeerSecret(node)), Kind: certs.Serving,
			Hostnames: hostnames, ExtKeyUsages: usages,
			Description: "Peer Cert for node " + node},
		{Name: "EtcdServing-" + node, Signer: signer, Bundle: bundle, Target: loc(ServingSecret(node)), Kind: certs.Serving,
			Hostnames: hostnames, ExtKeyUsages: usages,
			Description: "Serving Cert for node " + node},
		{Name: "EtcdServingMetrics-" + node, Signer: metricSigner, Bundle: metricBundle, Target: loc(ServingMetricsSecret(node)), Kind: certs.Serving,
			Hostnames: hostnames, ExtKeyUsages: usages,
			Description: "Metric Serving Cert for node " + node},
	}
	for i := range rows {
		rows[i].JiraComponent = jira
	}
	return rows
}

func ownedBy() map[string]string {
	return map[string]string{annotations.OpenShiftComponent: jira}
}

// allBundlesLoop is the cert signer's etcd-all-bundles: the etcd CA bundle as server-ca-bundle.crt and the metrics
// CA bundle as metrics-ca-bundle.crt, the trust the static pod reads from one place.
func (k *Component) allBundlesLoop() loops.Loop {
	lister := k.Cluster.KubeInformers.InformersFor(TargetNamespace).Core().V1().ConfigMaps().Lister().ConfigMaps(TargetNamespace)
	return loops.Loop{Name: "cert-signer/" + AllBundlesName, Sync: func(ctx context.Context) error {
		data := map[string]string{}
		for key, name := range map[string]string{"server-ca-bundle.crt": CABundleName, "metrics-ca-bundle.crt": MetricsBundleName} {
			cm, err := lister.Get(name)
			if err != nil {
				return fmt.Errorf("%s/%s: %w", TargetNamespace, name, err)
			}
			if cm.Data["ca-bundle.crt"] == "" {
				return fmt.Errorf("%s/%s has no ca-bundle.crt yet", TargetNamespace, name)
			}
			data[key] = cm.Data["ca-bundle.crt"]
		}
		_, _, err := resourceapply.ApplyConfigMap(ctx, k.Cluster.Kube.CoreV1(), k.Recorder, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: AllBundlesName, Annotations: ownedBy()},
			Data:       data,
		})
		return err
	}}
}

// allCertsLoop is the cert signer's etcd-all-certs: every node certificate secret's tls.crt and tls.key as
// <secret>.crt and <secret>.key, the certificates the static pod reads from one place.
//
// Every pass runs it again, mostly with nothing changed: it is skipped while the node certificate secrets and
// etcd-all-certs are unchanged (loops.Memo) since a run that succeeded. The loop writes only etcd-all-certs, with
// resourceapply.ApplySecret, which is idempotent for an Opaque secret: a run right after one that wrote it
// applies the same secret to what it wrote and writes nothing, so the versions after a run that wrote are kept.
func (k *Component) allCertsLoop() loops.Loop {
	lister := k.Cluster.KubeInformers.InformersFor(TargetNamespace).Core().V1().Secrets().Lister().Secrets(TargetNamespace)
	var reads []loops.Object
	for _, name := range append(NodeSecrets(k.In.NodeName), AllCertsName) {
		reads = append(reads, loops.Secret(TargetNamespace, name))
	}
	var memo loops.Memo
	return loops.Loop{Name: "cert-signer/" + AllCertsName, Sync: func(ctx context.Context) error {
		versions := k.Cluster.Versions(reads...)
		if memo.Same(versions) {
			return nil
		}
		memo.Forget()
		if err := k.syncAllCerts(ctx, lister); err != nil {
			return err
		}
		memo.Keep(k.Cluster.Versions(reads...))
		return nil
	}}
}

// syncAllCerts applies etcd-all-certs from the node certificate secrets.
func (k *Component) syncAllCerts(ctx context.Context, lister corev1listers.SecretNamespaceLister) error {
	data := map[string][]byte{}
	for _, name := range NodeSecrets(k.In.NodeName) {
		s, err := lister.Get(name)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", TargetNamespace, name, err)
		}
		crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
		if len(crt) == 0 || len(key) == 0 {
			return fmt.Errorf("%s/%s has no certificate and key yet", TargetNamespace, name)
		}
		data[name+".crt"], data[name+".key"] = crt, key
	}
	_, _, err := resourceapply.ApplySecret(ctx, k.Cluster.Kube.CoreV1(), k.Recorder, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: AllCertsName, Annotations: ownedBy()},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	})
	return err
}
