package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCountKeys checks BenchmarkKubeadm's key count on the forms both sides write: PEM files, a kubeconfig's
// base64 client-key-data, a YAML block's indented PEM, a JSON string's escaped PEM; a key written twice counts
// once, public keys not at all, and skipped files are not read.
func TestCountKeys(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(other)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}))
	ecPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}))
	yamlPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(mustRSA(t))}))
	pkcs8PEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	files := map[string]string{
		"pki/sa.key":        rsaPEM,
		"pki/sa-copy.key":   rsaPEM,
		"pki/sa.pub":        string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})),
		"admin.conf":        "users:\n- name: admin\n  user:\n    client-key-data: " + base64.StdEncoding.EncodeToString([]byte(ecPEM)) + "\n",
		"secret.yaml":       "stringData:\n  tls.key: |\n    " + strings.ReplaceAll(strings.TrimSpace(yamlPEM), "\n", "\n    ") + "\n",
		"state/object.json": `{"key":"` + strings.ReplaceAll(pkcs8PEM, "\n", `\n`) + `"}`,
		"skipped.ign":       string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(mustRSA(t))})),
	}
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n := countKeys(t, dir, "skipped.ign"); n != 4 {
		t.Errorf("countKeys = %d, want 4 (an RSA key in two files, another in a YAML block, the EC key in a kubeconfig, the PKCS#8 key in JSON)", n)
	}
	if n := countKeys(t, dir); n != 5 {
		t.Errorf("countKeys without skipping = %d, want 5", n)
	}
}

func mustRSA(t *testing.T) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
