package apiserver

import (
	"context"
	"fmt"

	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/render-static/render-static/pkg/loops"
)

// nodeKubeconfigsLoop renders openshift-kube-apiserver/node-kubeconfigs: system:admin kubeconfigs for the node
// (localhost, localhost-recovery by SNI name, and the external and internal API names), with the
// node-system-admin client certificate and the kube-apiserver-server-ca bundle.
func (k *Component) nodeKubeconfigsLoop() loops.Loop {
	return loops.Loop{Name: "target-config/node-kubeconfigs", Sync: func(ctx context.Context) error {
		cert, err := k.Cluster.KubeInformers.InformersFor(OperatorNamespace).Core().V1().Secrets().Lister().
			Secrets(OperatorNamespace).Get("node-system-admin-client")
		if err != nil {
			return err
		}
		ca, err := k.Cluster.KubeInformers.InformersFor(TargetNamespace).Core().V1().ConfigMaps().Lister().
			ConfigMaps(TargetNamespace).Get("kube-apiserver-server-ca")
		if err != nil {
			return err
		}
		infra, err := k.Cluster.ConfigInformers.Config().V1().Infrastructures().Lister().Get("cluster")
		if err != nil {
			return err
		}
		if len(cert.Data["tls.crt"]) == 0 || len(cert.Data["tls.key"]) == 0 || ca.Data["ca-bundle.crt"] == "" {
			return fmt.Errorf("node-system-admin-client or kube-apiserver-server-ca is empty")
		}
		if infra.Status.APIServerURL == "" || infra.Status.APIServerInternalURL == "" {
			return fmt.Errorf("infrastructure.config.openshift.io/cluster has no API server URLs yet")
		}
		targets := []struct{ key, cluster, server, sni string }{
			{"localhost.kubeconfig", "localhost", "https://localhost:6443", ""},
			{"localhost-recovery.kubeconfig", "localhost-recovery", "https://localhost:6443", "localhost-recovery"},
			{"lb-ext.kubeconfig", "lb-ext", infra.Status.APIServerURL, ""},
			{"lb-int.kubeconfig", "lb-int", infra.Status.APIServerInternalURL, ""},
		}
		data := map[string][]byte{}
		for _, t := range targets {
			cfg := clientcmdapi.NewConfig()
			cfg.Clusters[t.cluster] = &clientcmdapi.Cluster{Server: t.server, TLSServerName: t.sni,
				CertificateAuthorityData: []byte(ca.Data["ca-bundle.crt"])}
			cfg.AuthInfos["system:admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert.Data["tls.crt"], ClientKeyData: cert.Data["tls.key"]}
			cfg.Contexts["system:admin"] = &clientcmdapi.Context{Cluster: t.cluster, AuthInfo: "system:admin"}
			cfg.CurrentContext = "system:admin"
			raw, err := clientcmd.Write(*cfg)
			if err != nil {
				return err
			}
			data[t.key] = raw
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: "node-kubeconfigs",
			Annotations: map[string]string{"openshift.io/owning-component": jira}}, Type: corev1.SecretTypeOpaque, Data: data}
		_, _, err = resourceapply.ApplySecret(ctx, k.Cluster.Kube.CoreV1(), k.Recorder, s)
		return err
	}}
}
