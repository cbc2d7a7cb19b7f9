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
	"strings"
	"testing"

	"github.com/render-static/render-static/pkg/clusterconfig"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLegacyServiceAccountTokens(t *testing.T) {
	seeds, err := clusterconfig.ServiceAccountKeySeeds()
	if err != nil {
		t.Fatal(err)
	}
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "client-token",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "client"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "plain"}, Data: map[string][]byte{"a": []byte("b")}}
	ca := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: clusterconfig.ServerCANamespace, Name: clusterconfig.ServerCAConfigMap},
		Data: map[string]string{"ca-bundle.crt": "CA"}}
	c := testCluster(t, []string{"ns1", clusterconfig.SAPrivateKeyNamespace, clusterconfig.SAPublicKeyNamespace}, append(seeds, token, other, ca)...)
	loop := LegacyServiceAccountTokens(c)
	ctx := context.Background()
	get := func() *corev1.Secret {
		s, err := c.Kube.CoreV1().Secrets("ns1").Get(ctx, "client-token", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// No service account yet: the controller waits.
	if err := loop.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if len(get().Data) != 0 {
		t.Fatalf("token filled before its service account exists: %v", get().Data)
	}

	sa, err := c.Kube.CoreV1().ServiceAccounts("ns1").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "client"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa.UID == "" {
		t.Fatal("the cluster did not stamp a UID")
	}
	if err := loop.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	s := get()
	if s.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID) {
		t.Errorf("uid annotation = %q, want %q", s.Annotations[corev1.ServiceAccountUIDKey], sa.UID)
	}
	if string(s.Data["ca.crt"]) != "CA" || string(s.Data["namespace"]) != "ns1" {
		t.Errorf("ca.crt/namespace = %q/%q", s.Data["ca.crt"], s.Data["namespace"])
	}

	// The token verifies with the published public key and carries the legacy claims.
	var pubPEM string
	for _, o := range seeds {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			pubPEM = cm.Data[clusterconfig.SAPublicKeyKey]
		}
	}
	b, _ := pem.Decode([]byte(pubPEM))
	if b == nil {
		t.Fatal("no public key seeded")
	}
	pub, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(s.Data["token"]), ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWS", s.Data["token"])
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub.(*rsa.PublicKey), crypto.SHA256, digest[:], sig); err != nil {
		t.Errorf("token signature: %v", err)
	}
	var header, claims map[string]string
	for i, into := range []*map[string]string{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatal(err)
		}
	}
	if header["alg"] != "RS256" || header["kid"] == "" {
		t.Errorf("header = %v", header)
	}
	want := map[string]string{
		"iss":                                    "kubernetes/serviceaccount",
		"sub":                                    "system:serviceaccount:ns1:client",
		"kubernetes.io/serviceaccount/namespace": "ns1",
		"kubernetes.io/serviceaccount/secret.name":          "client-token",
		"kubernetes.io/serviceaccount/service-account.name": "client",
		"kubernetes.io/serviceaccount/service-account.uid":  string(sa.UID),
	}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("claim %s = %q, want %q", k, claims[k], v)
		}
	}
	if len(claims) != len(want) {
		t.Errorf("claims = %v, want exactly %v", claims, want)
	}

	// A second pass writes nothing; a plain secret is never touched.
	before := len(c.Journal())
	if err := loop.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if after := len(c.Journal()); after != before {
		t.Errorf("second pass made %d writes", after-before)
	}
	if p, _ := c.Kube.CoreV1().Secrets("ns1").Get(ctx, "plain", metav1.GetOptions{}); len(p.Annotations) != 0 {
		t.Errorf("plain secret annotated: %v", p.Annotations)
	}
}

func TestLegacyServiceAccountTokensWaitForKey(t *testing.T) {
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "client-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "client"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "client"}}
	c := testCluster(t, []string{"ns1", clusterconfig.SAPrivateKeyNamespace, clusterconfig.SAPublicKeyNamespace}, token, sa)
	if err := LegacyServiceAccountTokens(c).Sync(context.Background()); err != nil {
		t.Fatalf("without the key the controller must wait, got %v", err)
	}
	if len(c.Journal()) != 0 {
		t.Errorf("wrote %d times without a key", len(c.Journal()))
	}
}

// TestLegacyServiceAccountTokensKeptOnlyWhileInputsSame: the loop keeps its parsed key and signed tokens between
// runs; a run after one input changed (the key, the account's UID, a new token secret) writes the token that
// input gives, exactly what a loop without anything kept writes.
func TestLegacyServiceAccountTokensKeptOnlyWhileInputsSame(t *testing.T) {
	seeds, err := clusterconfig.ServiceAccountKeySeeds()
	if err != nil {
		t.Fatal(err)
	}
	token := func(name string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: "client"}},
			Type: corev1.SecretTypeServiceAccountToken,
		}
	}
	ca := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: clusterconfig.ServerCANamespace, Name: clusterconfig.ServerCAConfigMap},
		Data: map[string]string{"ca-bundle.crt": "CA"}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "client", UID: "uid-1"}}
	c := testCluster(t, []string{"ns1", clusterconfig.SAPrivateKeyNamespace, clusterconfig.SAPublicKeyNamespace}, append(seeds, token("client-token"), ca, sa)...)
	ctx := context.Background()
	loop := LegacyServiceAccountTokens(c)
	// check runs the loop, which must write (wantWrite) or not, and compares every token with what a new loop
	// (nothing kept) signs for the same cluster.
	check := func(step string, wantWrite bool) {
		t.Helper()
		n := len(c.Journal())
		if err := loop.Sync(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if wrote := len(c.Journal()) > n; wrote != wantWrite {
			t.Fatalf("%s: wrote = %v, want %v", step, wrote, wantWrite)
		}
		got, err := c.Kube.CoreV1().Secrets("ns1").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n = len(c.Journal())
		if err := LegacyServiceAccountTokens(c).Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if len(c.Journal()) != n {
			t.Fatalf("%s: a loop that kept nothing writes again: the kept key or tokens are stale", step)
		}
		for _, s := range got.Items {
			if len(s.Data["token"]) == 0 {
				t.Fatalf("%s: %s has no token", step, s.Name)
			}
		}
	}
	check("first run", true)
	check("nothing changed", false)

	// A new key: every token is signed again.
	newKeys, err := clusterconfig.ServiceAccountKeySeeds()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Secrets(clusterconfig.SAPrivateKeyNamespace).Update(ctx, newKeys[0].(*corev1.Secret), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("new key", true)
	check("nothing changed after the new key", false)

	// The account is replaced (a new UID).
	if err := c.Kube.CoreV1().ServiceAccounts("ns1").Delete(ctx, "client", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().ServiceAccounts("ns1").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "client"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("new account UID", true)

	// A second token secret for the same account.
	if _, err := c.Kube.CoreV1().Secrets("ns1").Create(ctx, token("client-token-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("new token secret", true)
	check("nothing changed at the end", false)
}
