package emulate

import (
	"context"
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/crypto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
)

func TestServiceCA(t *testing.T) {
	ctx := context.Background()
	c := testCluster(t, clusterconfig.Namespaces)
	in := testInputs(t, "192.168.126.10")
	l := ServiceCA(c, in)
	if l.Name != "emulate/service-ca-operator" {
		t.Errorf("loop name %q", l.Name)
	}
	syncTwice(t, c, l)
	kube := c.Kube.CoreV1()
	secret, err := kube.Secrets(ServiceCANamespace).Get(ctx, ServiceCASigningKey, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("signing-key type %q", secret.Type)
	}
	ca, err := crypto.GetCAFromBytes(secret.Data["tls.crt"], secret.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	cert := ca.Config.Certs[0]
	if !cert.IsCA || cert.NotAfter.Sub(cert.NotBefore) < certs.MinSignerValidity-time.Hour {
		t.Errorf("service CA: IsCA %v, lives %s", cert.IsCA, cert.NotAfter.Sub(cert.NotBefore))
	}
	for _, loc := range [][2]string{{ServiceCANamespace, ServiceCASigningBundle}, {ServiceCAManagedNS, ServiceCAManagedBundle}} {
		cm, err := c.KubeFactory().Core().V1().ConfigMaps().Lister().ConfigMaps(loc[0]).Get(loc[1])
		if err != nil {
			t.Fatalf("%s/%s is not listed: %v", loc[0], loc[1], err)
		}
		if cm.Data["ca-bundle.crt"] != string(secret.Data["tls.crt"]) {
			t.Errorf("%s/%s does not publish the signing CA", loc[0], loc[1])
		}
	}

	// A signing key that is not a usable CA is replaced, and the bundles follow.
	broken := secret.DeepCopy()
	broken.Data["tls.key"] = []byte("garbage")
	if _, err := kube.Secrets(ServiceCANamespace).Update(ctx, broken, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	syncTwice(t, c, l)
	fixed, _ := kube.Secrets(ServiceCANamespace).Get(ctx, ServiceCASigningKey, metav1.GetOptions{})
	if string(fixed.Data["tls.crt"]) == string(secret.Data["tls.crt"]) || !validCA(fixed) {
		t.Errorf("a broken signing key was not replaced by a new CA")
	}
	cm, _ := c.KubeFactory().Core().V1().ConfigMaps().Lister().ConfigMaps(ServiceCAManagedNS).Get(ServiceCAManagedBundle)
	if cm.Data["ca-bundle.crt"] != string(fixed.Data["tls.crt"]) {
		t.Errorf("openshift-config-managed/service-ca does not follow the new CA")
	}
}
