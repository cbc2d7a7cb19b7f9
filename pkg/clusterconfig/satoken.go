package clusterconfig

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The service-account token signing key pair, where the installer puts it for a new cluster: the private key
// for kube-controller-manager's token signer, the public key for kube-apiserver's token verification.
const (
	SAPrivateKeyNamespace = "openshift-config"
	SAPrivateKeySecret    = "initial-service-account-private-key"
	SAPrivateKeyKey       = "service-account.key"
	SAPublicKeyNamespace  = "openshift-config-managed"
	SAPublicKeyConfigMap  = "sa-token-signing-certs"
	SAPublicKeyKey        = "service-account-001.pub"

	// ServerCANamespace/ServerCAConfigMap is the CA bundle of kube-apiserver's serving certificates that token
	// secrets carry as ca.crt (kube-apiserver publishes it there).
	ServerCANamespace = "openshift-config-managed"
	ServerCAConfigMap = "kube-apiserver-server-ca"

	saTokenKeyBits = 2048
)

// ServiceAccountKeySeeds makes the service-account token signing key pair of one render, as the installer
// seeds it: secret openshift-config/initial-service-account-private-key (service-account.key, PKCS#1 PEM) and
// configmap openshift-config-managed/sa-token-signing-certs (service-account-001.pub, PKIX PEM). The pipeline
// adds them to the cluster's seeds.
func ServiceAccountKeySeeds() ([]runtime.Object, error) {
	key, err := rsa.GenerateKey(rand.Reader, saTokenKeyBits)
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	return []runtime.Object{
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: SAPrivateKeyNamespace, Name: SAPrivateKeySecret},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{SAPrivateKeyKey: priv},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: SAPublicKeyNamespace, Name: SAPublicKeyConfigMap},
			Data:       map[string]string{SAPublicKeyKey: string(pub)},
		},
	}, nil
}
