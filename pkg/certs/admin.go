package certs

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	"github.com/openshift/library-go/pkg/crypto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/render-static/render-static/internal/kubeconfig"
)

// Admin is the cluster-admin credential of a render. Like the installer's admin-kubeconfig-signer, its signer
// lives outside the cluster: only its CA bundle is given to the cluster (openshift-config/admin-kubeconfig-client-ca,
// which kube-apiserver's client-ca includes), so nobody can mint admin certificates from cluster contents.
type Admin struct {
	CABundle []byte // PEM of the signer
	CertPEM  []byte
	KeyPEM   []byte
}

// AdminUser is who the admin kubeconfig authenticates as.
const AdminUser = "system:admin"

// NewAdmin makes the admin signer and a client certificate for system:admin in group system:masters.
func NewAdmin(lt Lifetimes) (*Admin, error) {
	signer, err := NewAdminSigner(lt)
	if err != nil {
		return nil, err
	}
	return signer.Issue()
}

// AdminSigner is the admin signer before it issued the admin client certificate: the cluster needs only its CA
// bundle, so a render issues the certificate (and makes its key) while the loops run.
type AdminSigner struct {
	ca       *crypto.CA
	CABundle []byte // PEM of the signer
	leaf     time.Duration
}

// NewAdminSigner makes the admin signer.
func NewAdminSigner(lt Lifetimes) (*AdminSigner, error) {
	cfg, err := crypto.MakeSelfSignedCAConfigForDuration(fmt.Sprintf("admin-kubeconfig-signer@%d", time.Now().Unix()), lt.Signer)
	if err != nil {
		return nil, fmt.Errorf("admin signer: %w", err)
	}
	caPEM, _, err := cfg.GetPEMBytes()
	if err != nil {
		return nil, err
	}
	return &AdminSigner{ca: &crypto.CA{Config: cfg, SerialGenerator: &crypto.RandomSerialGenerator{}}, CABundle: caPEM, leaf: lt.Leaf}, nil
}

// ClientCAConfigMap is the bundle kube-apiserver trusts for the admin client certificate.
func (s *AdminSigner) ClientCAConfigMap() *corev1.ConfigMap { return clientCAConfigMap(s.CABundle) }

// Issue makes the admin client certificate; the signer's key is dropped with the AdminSigner.
func (s *AdminSigner) Issue() (*Admin, error) {
	client, err := s.ca.MakeClientCertificateForDuration(&user.DefaultInfo{Name: AdminUser, Groups: []string{"system:masters"}}, s.leaf)
	if err != nil {
		return nil, fmt.Errorf("admin client certificate: %w", err)
	}
	certPEM, keyPEM, err := client.GetPEMBytes()
	if err != nil {
		return nil, err
	}
	return &Admin{CABundle: s.CABundle, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ClientCAConfigMap is the bundle kube-apiserver trusts for the admin client certificate.
func (a *Admin) ClientCAConfigMap() *corev1.ConfigMap { return clientCAConfigMap(a.CABundle) }

func clientCAConfigMap(bundle []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-config", Name: "admin-kubeconfig-client-ca"},
		Data:       map[string]string{"ca-bundle.crt": string(bundle)},
	}
}

// Kubeconfig builds a kubeconfig with one cluster, one client-certificate user and one context.
func Kubeconfig(clusterName, server string, caPEM, certPEM, keyPEM []byte, userName string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[userName] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[userName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: userName}
	cfg.CurrentContext = userName
	return kubeconfig.Write(*cfg)
}

// ParseCertificates returns every CERTIFICATE block of a PEM bundle.
func ParseCertificates(pemData []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := pemData
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// JoinBundles concatenates PEM bundles, dropping duplicate certificates, in order.
func JoinBundles(bundles ...[]byte) ([]byte, error) {
	var out bytes.Buffer
	seen := map[string]bool{}
	for _, b := range bundles {
		certs, err := ParseCertificates(b)
		if err != nil {
			return nil, err
		}
		for _, c := range certs {
			if seen[string(c.Raw)] {
				continue
			}
			seen[string(c.Raw)] = true
			_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
		}
	}
	return out.Bytes(), nil
}
