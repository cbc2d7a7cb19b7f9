package controllermanager

import (
	"bytes"
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/crypto"
)

// TestParsedCAKeepsOnlyTheSameBytes: the component's kept csr-signer CA (Component.signer, as csrSigner uses it) returns what crypto.GetCAFromBytes returns for the bytes given,
// parsing again whenever the certificate or the key differ from those it kept.
func TestParsedCAKeepsOnlyTheSameBytes(t *testing.T) {
	newCA := func(name string) (crt, key []byte) {
		cfg, err := crypto.MakeSelfSignedCAConfigForDuration(name, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		crt, key, err = cfg.GetPEMBytes()
		if err != nil {
			t.Fatal(err)
		}
		return crt, key
	}
	crtA, keyA := newCA("a")
	crtB, keyB := newCA("b")
	var p Component
	check := func(step string, crt, key []byte, wantErr bool) {
		t.Helper()
		got, err := p.signer.Get(func() (*crypto.CA, error) { return crypto.GetCAFromBytes(crt, key) }, crt, key)
		want, wantE := crypto.GetCAFromBytes(crt, key)
		if (err != nil) != wantErr || (wantE != nil) != wantErr {
			t.Fatalf("%s: err = %v, GetCAFromBytes err = %v, want error %v", step, err, wantE, wantErr)
		}
		if wantErr {
			return
		}
		if !bytes.Equal(got.Config.Certs[0].Raw, want.Config.Certs[0].Raw) {
			t.Fatalf("%s: kept CA %s, want %s", step, got.Config.Certs[0].Subject.CommonName, want.Config.Certs[0].Subject.CommonName)
		}
	}
	check("a", crtA, keyA, false)
	check("a again", crtA, keyA, false)
	check("b", crtB, keyB, false)
	check("b's certificate with a's key", crtB, keyA, true)
	check("a's certificate with b's key", crtA, keyB, true)
	check("a after errors", crtA, keyA, false)
	// A copy of the bytes the caller changes afterwards does not change what is kept.
	c := bytes.Clone(crtB)
	check("b from a copy", c, keyB, false)
	copy(c, crtA)
	check("b after the copy changed", crtB, keyB, false)
}
