package apiserver

import (
	"context"
	"fmt"

	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/render-static/render-static/internal/kubeconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// nodeKubeconfigsLoop renders openshift-kube-apiserver/node-kubeconfigs: system:admin kubeconfigs for the node
// (localhost, localhost-recovery by SNI name, and the external and internal API names), with the
// node-system-admin client certificate and the kube-apiserver-server-ca bundle.
//
// Every pass runs it again, mostly with nothing changed: the kubeconfigs are kept (memo) while the versions
// (loops.Cluster.Version) of the three objects they are made of are unchanged, and the apply is skipped while
// the kubeconfigs and the secret are unchanged since an apply of them that succeeded (resourceapply.ApplySecret
// decides from exactly those two, and an apply of an Opaque secret is idempotent: once it wrote, applying the same
// secret again to what it wrote writes nothing, so the secret as the apply left it is kept too).
func (k *Component) nodeKubeconfigsLoop() loops.Loop {
	var memo nodeKubeconfigsMemo
	return loops.Loop{Name: "target-config/node-kubeconfigs", Sync: func(ctx context.Context) error {
		c := k.Cluster
		inputs := [3]int{c.Version("secrets", OperatorNamespace, "node-system-admin-client"),
			c.Version("configmaps", TargetNamespace, "kube-apiserver-server-ca"),
			c.Version("infrastructures.config.openshift.io", "", "cluster")}
		if memo.data == nil || memo.inputs != inputs {
			data, err := k.nodeKubeconfigs()
			if err != nil {
				memo = nodeKubeconfigsMemo{}
				return err
			}
			memo = nodeKubeconfigsMemo{inputs: inputs, data: data}
		}
		target := c.Version("secrets", TargetNamespace, "node-kubeconfigs")
		if memo.applied && memo.target == target {
			return nil
		}
		data := make(map[string][]byte, len(memo.data))
		for key, v := range memo.data {
			data[key] = v
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: "node-kubeconfigs",
			Annotations: map[string]string{"openshift.io/owning-component": jira}}, Type: corev1.SecretTypeOpaque, Data: data}
		_, _, err := resourceapply.ApplySecret(ctx, c.Kube.CoreV1(), k.Recorder, s)
		memo.applied, memo.target = err == nil, c.Version("secrets", TargetNamespace, "node-kubeconfigs")
		return err
	}}
}

// nodeKubeconfigsMemo is what nodeKubeconfigsLoop keeps between runs: the kubeconfigs (data) made from the inputs
// at versions inputs, and whether applying them succeeded, leaving the secret at version target.
type nodeKubeconfigsMemo struct {
	inputs  [3]int
	data    map[string][]byte
	applied bool
	target  int
}

// nodeKubeconfigs makes the kubeconfigs of secret node-kubeconfigs from the node-system-admin client certificate,
// the kube-apiserver-server-ca bundle and the API server URLs.
func (k *Component) nodeKubeconfigs() (map[string][]byte, error) {
	cert, err := k.Cluster.KubeInformers.InformersFor(OperatorNamespace).Core().V1().Secrets().Lister().
		Secrets(OperatorNamespace).Get("node-system-admin-client")
	if err != nil {
		return nil, err
	}
	ca, err := k.Cluster.KubeInformers.InformersFor(TargetNamespace).Core().V1().ConfigMaps().Lister().
		ConfigMaps(TargetNamespace).Get("kube-apiserver-server-ca")
	if err != nil {
		return nil, err
	}
	infra, err := k.Cluster.ConfigInformers.Config().V1().Infrastructures().Lister().Get("cluster")
	if err != nil {
		return nil, err
	}
	if len(cert.Data["tls.crt"]) == 0 || len(cert.Data["tls.key"]) == 0 || ca.Data["ca-bundle.crt"] == "" {
		return nil, fmt.Errorf("node-system-admin-client or kube-apiserver-server-ca is empty")
	}
	if infra.Status.APIServerURL == "" || infra.Status.APIServerInternalURL == "" {
		return nil, fmt.Errorf("infrastructure.config.openshift.io/cluster has no API server URLs yet")
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
		raw, err := kubeconfig.Write(*cfg)
		if err != nil {
			return nil, err
		}
		data[t.key] = raw
	}
	return data, nil
}
