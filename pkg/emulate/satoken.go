package emulate

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/render-static/render-static/internal/parsecache"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// LegacyServiceAccountTokens stands in for kube-controller-manager's legacy service-account token controller
// (loop "emulate/legacy-serviceaccount-token-controller"): every secret of type
// kubernetes.io/service-account-token whose service account exists gets the account's UID in annotation
// kubernetes.io/service-account.uid and the keys token (a legacy JWT signed RS256 with the service-account
// private key), ca.crt (kube-apiserver's serving CA bundle) and namespace. It waits, without an error, until the
// key and the CA bundle exist; a token is rewritten only when one of its inputs changed (RS256 signatures are
// deterministic, so a second pass writes nothing).
//
// Every pass runs it again, mostly with nothing changed: the parsed key is kept while the key's PEM bytes are the
// same, and each signed token while its inputs (the key, the secret's and the account's names, the account's
// UID) are: a pass neither parses the key nor signs a token it signed before (signing is deterministic, so the
// kept token is the one it would sign).
func LegacyServiceAccountTokens(c *loops.Cluster) loops.Loop {
	all := c.KubeFactory().Core().V1()
	// The loop's Sync never runs concurrently with itself: the kept signer's token map needs no lock.
	var kept parsecache.Value[*legacySigner]
	return loops.Loop{Name: "emulate/legacy-serviceaccount-token-controller", Sync: func(ctx context.Context) error {
		keySecret, err := all.Secrets().Lister().Secrets(clusterconfig.SAPrivateKeyNamespace).Get(clusterconfig.SAPrivateKeySecret)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		keyPEM := keySecret.Data[clusterconfig.SAPrivateKeyKey]
		signer, err := kept.Get(func() (*legacySigner, error) { return newLegacySigner(keyPEM) }, keyPEM)
		if err != nil {
			return fmt.Errorf("%s/%s %s: %w", clusterconfig.SAPrivateKeyNamespace, clusterconfig.SAPrivateKeySecret, clusterconfig.SAPrivateKeyKey, err)
		}
		ca, err := all.ConfigMaps().Lister().ConfigMaps(clusterconfig.ServerCANamespace).Get(clusterconfig.ServerCAConfigMap)
		if apierrors.IsNotFound(err) || (err == nil && ca.Data["ca-bundle.crt"] == "") {
			return nil
		}
		if err != nil {
			return err
		}
		listed, err := all.Secrets().Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		// Only token secrets are written: sorting them alone gives them the order they have among all secrets.
		var secrets []*corev1.Secret
		for _, s := range listed {
			if s.Type == corev1.SecretTypeServiceAccountToken {
				secrets = append(secrets, s)
			}
		}
		sort.Slice(secrets, func(i, j int) bool {
			return secrets[i].Namespace+"/"+secrets[i].Name < secrets[j].Namespace+"/"+secrets[j].Name
		})
		var errs []error
		for _, s := range secrets {
			saName := s.Annotations[corev1.ServiceAccountNameKey]
			if saName == "" {
				continue
			}
			sa, err := all.ServiceAccounts().Lister().ServiceAccounts(s.Namespace).Get(saName)
			if apierrors.IsNotFound(err) || (err == nil && sa.UID == "") {
				continue // the token controller waits for the account
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			token, err := signer.token(s.Namespace, s.Name, sa.Name, string(sa.UID))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			want := map[string][]byte{
				corev1.ServiceAccountTokenKey:     []byte(token),
				corev1.ServiceAccountRootCAKey:    []byte(ca.Data["ca-bundle.crt"]),
				corev1.ServiceAccountNamespaceKey: []byte(s.Namespace),
			}
			if s.Annotations[corev1.ServiceAccountUIDKey] == string(sa.UID) && sameData(s.Data, want) {
				continue
			}
			next := s.DeepCopy()
			if next.Annotations == nil {
				next.Annotations = map[string]string{}
			}
			next.Annotations[corev1.ServiceAccountUIDKey] = string(sa.UID)
			if next.Data == nil {
				next.Data = map[string][]byte{}
			}
			for k, v := range want {
				next.Data[k] = v
			}
			if _, err := c.Kube.CoreV1().Secrets(s.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}}
}

// legacySigner is the service-account key parsed from its PEM bytes, with the tokens signed with it by their
// inputs (a key of other bytes is another legacySigner, with no tokens).
type legacySigner struct {
	key    *rsa.PrivateKey
	tokens map[legacyTokenInputs]string
}

// legacyTokenInputs is everything LegacyToken signs besides the key.
type legacyTokenInputs struct{ namespace, secretName, saName, uid string }

func newLegacySigner(keyPEM []byte) (*legacySigner, error) {
	key, err := parseRSAPrivateKey(keyPEM)
	if err != nil {
		return nil, err
	}
	return &legacySigner{key: key, tokens: map[legacyTokenInputs]string{}}, nil
}

// token returns LegacyToken for the key, signing it only the first time.
func (k *legacySigner) token(namespace, secretName, saName, uid string) (string, error) {
	in := legacyTokenInputs{namespace, secretName, saName, uid}
	if t, ok := k.tokens[in]; ok {
		return t, nil
	}
	t, err := LegacyToken(k.key, namespace, secretName, saName, uid)
	if err != nil {
		return "", err
	}
	k.tokens[in] = t
	return t, nil
}

func sameData(have, want map[string][]byte) bool {
	for k, v := range want {
		if string(have[k]) != string(v) {
			return false
		}
	}
	return true
}

func parseRSAPrivateKey(data []byte) (*rsa.PrivateKey, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, fmt.Errorf("no PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("not an RSA key (%T)", k)
	}
	return rk, nil
}

// legacyClaims are the claims of a legacy (secret-based) service-account token, in the legacy controller's
// layout; legacy tokens carry no expiry.
type legacyClaims struct {
	Issuer             string `json:"iss"`
	Namespace          string `json:"kubernetes.io/serviceaccount/namespace"`
	SecretName         string `json:"kubernetes.io/serviceaccount/secret.name"`
	ServiceAccountName string `json:"kubernetes.io/serviceaccount/service-account.name"`
	ServiceAccountUID  string `json:"kubernetes.io/serviceaccount/service-account.uid"`
	Subject            string `json:"sub"`
}

// LegacyIssuer is the issuer of legacy service-account tokens.
const LegacyIssuer = "kubernetes/serviceaccount"

// LegacyToken signs a legacy service-account token (JWS compact serialisation, RS256) for the account
// namespace/saName with UID uid, stored in secret namespace/secretName. The header's kid identifies the public
// key the way kube-apiserver's token verification does (SHA-256 of its PKIX form, base64url).
func LegacyToken(key *rsa.PrivateKey, namespace, secretName, saName, uid string) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", err
	}
	kid := sha256.Sum256(der)
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}{"RS256", base64.RawURLEncoding.EncodeToString(kid[:])})
	if err != nil {
		return "", err
	}
	claims, err := json.Marshal(legacyClaims{
		Issuer: LegacyIssuer, Namespace: namespace, SecretName: secretName, ServiceAccountName: saName,
		ServiceAccountUID: uid, Subject: "system:serviceaccount:" + namespace + ":" + saName,
	})
	if err != nil {
		return "", err
	}
	signingInput := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	digest := sha256.Sum256([]byte(signingInput))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, digest[:])
	if err != nil {
		return "", err
	}
	return signingInput + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
