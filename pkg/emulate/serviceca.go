package emulate

import (
	"context"
	"fmt"
	"time"

	"github.com/openshift/library-go/pkg/crypto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// Where service-ca-operator keeps its signing CA and publishes its bundle.
const (
	ServiceCANamespace        = "openshift-service-ca"
	ServiceCASigningKey       = "signing-key"      // secret, kubernetes.io/tls
	ServiceCASigningBundle    = "signing-cabundle" // configmap, ca-bundle.crt
	ServiceCAManagedNS        = "openshift-config-managed"
	ServiceCAManagedBundle    = "service-ca" // configmap, ca-bundle.crt
	serviceCASignerNamePrefix = "openshift-service-serving-signer"
)

// ServiceCA stands in for service-ca-operator (loop "emulate/service-ca-operator"): it makes the service CA at
// render time, as the operator does when it first starts, keeps it where the operator keeps it
// (openshift-service-ca/signing-key, with its bundle in openshift-service-ca/signing-cabundle) and publishes the
// bundle as openshift-config-managed/service-ca.
//
// Why it is needed: kube-controller-manager's operator syncs openshift-config-managed/service-ca into its operand
// namespace as the revisioned configmap service-ca, required for a revision; the controller manager publishes it in
// every namespace (openshift-service-ca.crt) and its config points serviceServingCert.certFile at it. No
// service-ca-operator runs offline. Because the signing key is stored where the operator looks for it, the operator
// adopts this CA when it starts on the node instead of minting another one, so revision 1 stays valid.
//
// The CA lives as long as the render's signers (certs.Lifetimes.Signer); an existing, unexpired signing key is
// kept, so a second pass writes nothing.
//
// The loop is concurrent (pkg/loops, turn.go): the CA's key is made while the loops ahead of it run; its
// footprint is the namespace, the signing key and both bundles, which no other loop writes.
func ServiceCA(c *loops.Cluster, in *clusterconfig.Inputs) loops.Loop {
	turn := loops.NewTurn()
	kube := turn.CoreV1(c.Kube.CoreV1())
	return loops.Loop{Name: "emulate/service-ca-operator", Sync: func(ctx context.Context) error {
		if _, err := kube.Namespaces().Get(ctx, ServiceCANamespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ServiceCANamespace}}
			turn.Wait() // the turn client waits only for secrets and config maps
			if _, err := kube.Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		secret, err := kube.Secrets(ServiceCANamespace).Get(ctx, ServiceCASigningKey, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && !validCA(secret)) {
			secret, err = newServiceCASecret(in)
			if err != nil {
				return err
			}
			if _, gerr := kube.Secrets(ServiceCANamespace).Get(ctx, ServiceCASigningKey, metav1.GetOptions{}); apierrors.IsNotFound(gerr) {
				secret, err = kube.Secrets(ServiceCANamespace).Create(ctx, secret, metav1.CreateOptions{})
			} else {
				secret, err = kube.Secrets(ServiceCANamespace).Update(ctx, secret, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return err
		}
		bundle := string(secret.Data[corev1.TLSCertKey])
		for _, loc := range [][2]string{{ServiceCANamespace, ServiceCASigningBundle}, {ServiceCAManagedNS, ServiceCAManagedBundle}} {
			if err := ensureBundle(ctx, kube, loc[0], loc[1], bundle); err != nil {
				return err
			}
		}
		return nil
	}}.Concurrent(turn,
		loops.Object{Resource: "namespaces", Name: ServiceCANamespace},
		loops.Secret(ServiceCANamespace, ServiceCASigningKey),
		loops.ConfigMap(ServiceCANamespace, ServiceCASigningBundle),
		loops.ConfigMap(ServiceCAManagedNS, ServiceCAManagedBundle)).
		MakesKeys(loops.Secret(ServiceCANamespace, ServiceCASigningKey))
}

// validCA: the secret holds a CA certificate and key that belong together and are not expired.
func validCA(s *corev1.Secret) bool {
	ca, err := crypto.GetCAFromBytes(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil || len(ca.Config.Certs) == 0 {
		return false
	}
	cert := ca.Config.Certs[0]
	return cert.IsCA && time.Now().Before(cert.NotAfter)
}

func newServiceCASecret(in *clusterconfig.Inputs) (*corev1.Secret, error) {
	name := fmt.Sprintf("%s@%d", serviceCASignerNamePrefix, time.Now().Unix())
	cfg, err := crypto.MakeSelfSignedCAConfigForDuration(name, in.Lifetimes.Signer)
	if err != nil {
		return nil, fmt.Errorf("service CA: %w", err)
	}
	certPEM, keyPEM, err := cfg.GetPEMBytes()
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ServiceCANamespace, Name: ServiceCASigningKey},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}, nil
}

// ensureBundle makes ns/name a configmap whose ca-bundle.crt is bundle.
func ensureBundle(ctx context.Context, kube corev1client.CoreV1Interface, ns, name, bundle string) error {
	cms := kube.ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data:       map[string]string{"ca-bundle.crt": bundle},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil || cm.Data["ca-bundle.crt"] == bundle {
		return err
	}
	next := cm.DeepCopy()
	if next.Data == nil {
		next.Data = map[string]string{}
	}
	next.Data["ca-bundle.crt"] = bundle
	_, err = cms.Update(ctx, next, metav1.UpdateOptions{})
	return err
}
