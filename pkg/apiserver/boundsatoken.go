package apiserver

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/render-static/render-static/pkg/loops"
)

// The bound service-account token signer's objects and keys.
const (
	NextBoundSigningKeySecret = "next-bound-service-account-signing-key"
	BoundSigningKeySecret     = "bound-service-account-signing-key"
	BoundSigningCertsCM       = "bound-sa-token-signing-certs"
	PrivateKeyKey             = "service-account.key"
	PublicKeyKey              = "service-account.pub"
	boundSigningKeyBits       = 2048
)

// boundSATokenSignerLoop is the bound service-account token signer, as the operator does it on a new cluster:
//  1. make an RSA key pair in the operator namespace (next-bound-service-account-signing-key) if there is none;
//  2. publish its public key in openshift-kube-apiserver/bound-sa-token-signing-certs as service-account-NNN.pub
//     (the next free number) unless a key there is already the same;
//  3. the first time, when the operand has no signing key yet, copy the pair to
//     openshift-kube-apiserver/bound-service-account-signing-key right away (with a running cluster the operator
//     waits until every node's revision carries the public key; a new cluster has no revision to wait for).
//
// The loop is concurrent (pkg/loops, turn.go): the key pair is made while the loops ahead of it run; it reads and
// writes only its three objects, which no other loop writes.
func (k *Component) boundSATokenSignerLoop() loops.Loop {
	turn := loops.NewTurn()
	kube := turn.CoreV1(k.Cluster.Kube.CoreV1())
	return loops.Loop{Name: "bound-sa-token-signer", Sync: func(ctx context.Context) error {
		return k.syncBoundSATokenSigner(ctx, kube)
	}}.Concurrent(turn,
		loops.Secret(OperatorNamespace, NextBoundSigningKeySecret),
		loops.ConfigMap(TargetNamespace, BoundSigningCertsCM),
		loops.Secret(TargetNamespace, BoundSigningKeySecret)).
		MakesKeys(loops.Secret(OperatorNamespace, NextBoundSigningKeySecret))
}

func (k *Component) syncBoundSATokenSigner(ctx context.Context, kube corev1client.CoreV1Interface) error {
	secrets := func(ns string) interface {
		Get(string) (*corev1.Secret, error)
	} {
		return k.Cluster.KubeInformers.InformersFor(ns).Core().V1().Secrets().Lister().Secrets(ns)
	}
	next, err := secrets(OperatorNamespace).Get(NextBoundSigningKeySecret)
	if apierrors.IsNotFound(err) || (err == nil && !validKeyPair(next)) {
		key, kerr := rsa.GenerateKey(rand.Reader, boundSigningKeyBits)
		if kerr != nil {
			return kerr
		}
		pub, perr := publicKeyPEM(&key.PublicKey)
		if perr != nil {
			return perr
		}
		next = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: NextBoundSigningKeySecret,
				Annotations: map[string]string{
					"openshift.io/owning-component": jira,
					"openshift.io/description":      "Key pair the kube-apiserver signs bound service-account tokens with, before it is handed to the operand.",
				}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{
				PrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
				PublicKeyKey:  pub,
			},
		}
		if _, _, err := resourceapply.ApplySecret(ctx, kube, k.Recorder, next); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}

	// Publish the public key.
	cms := k.Cluster.KubeInformers.InformersFor(TargetNamespace).Core().V1().ConfigMaps().Lister().ConfigMaps(TargetNamespace)
	certs, err := cms.Get(BoundSigningCertsCM)
	var data map[string]string
	switch {
	case apierrors.IsNotFound(err):
		data = map[string]string{}
	case err != nil:
		return err
	default:
		data = map[string]string{}
		for key, v := range certs.Data {
			data[key] = v
		}
	}
	pub := string(next.Data[PublicKeyKey])
	published := false
	for _, v := range data {
		if v == pub {
			published = true
		}
	}
	if !published {
		data[nextPublicKeyName(data)] = pub
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: BoundSigningCertsCM,
				Annotations: map[string]string{
					"openshift.io/owning-component": jira,
					"openshift.io/description":      "Public keys that verify bound service-account tokens.",
				}},
			Data: data,
		}
		if _, _, err := resourceapply.ApplyConfigMap(ctx, kube, k.Recorder, cm); err != nil {
			return err
		}
	}

	// First time: hand the pair to the operand.
	if _, err := secrets(TargetNamespace).Get(BoundSigningKeySecret); apierrors.IsNotFound(err) {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: BoundSigningKeySecret,
				Annotations: map[string]string{
					"openshift.io/owning-component": jira,
					"openshift.io/description":      "Key pair the kube-apiserver signs bound service-account tokens with.",
				}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{PrivateKeyKey: next.Data[PrivateKeyKey], PublicKeyKey: next.Data[PublicKeyKey]},
		}
		_, _, err := resourceapply.ApplySecret(ctx, kube, k.Recorder, s)
		return err
	} else if err != nil {
		return err
	}
	return nil
}

func validKeyPair(s *corev1.Secret) bool {
	return len(s.Data[PrivateKeyKey]) > 0 && len(s.Data[PublicKeyKey]) > 0
}

// publicKeyPEM encodes a public key as PKIX in a block labelled "RSA PUBLIC KEY", like the operator's keys.
func publicKeyPEM(pub *rsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: der}), nil
}

// nextPublicKeyName is the first free service-account-NNN.pub, counting from 001.
func nextPublicKeyName(data map[string]string) string {
	for i := 1; ; i++ {
		name := fmt.Sprintf("service-account-%03d.pub", i)
		if _, taken := data[name]; !taken {
			return name
		}
	}
}
