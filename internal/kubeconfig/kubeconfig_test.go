package kubeconfig

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func config(i int) clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://api:6443", CertificateAuthorityData: []byte(fmt.Sprintf("-----BEGIN CERTIFICATE-----\n%d\n-----END CERTIFICATE-----\n", i))}
	cfg.Clusters["no-ca"] = &clientcmdapi.Cluster{Server: "https://other:6443"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte(fmt.Sprintf("cert %d", i)), ClientKeyData: []byte("key")}
	cfg.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["u"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "u"
	return *cfg
}

// TestReadRememberedIsParsed: what Read returns for bytes Write wrote is what parsing them gives (clientcmd.Load),
// and Write's bytes are clientcmd.Write's.
func TestReadRememberedIsParsed(t *testing.T) {
	for i := 0; i < 3; i++ {
		cfg := config(i)
		b, err := Write(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := clientcmd.Write(cfg); string(want) != string(b) {
			t.Fatalf("Write's bytes differ from clientcmd.Write's")
		}
		remembered, err := Read(b)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(remembered, parsed) {
			t.Errorf("remembered %v, parsed %v", remembered, parsed)
		}
		if len(remembered.Clusters) != 1 || len(remembered.Users) != 1 {
			t.Errorf("certificates %v: want the one cluster CA and the one client certificate", remembered)
		}
	}
	// Bytes this process did not write are parsed.
	other := []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster:\n    server: https://x\n    certificate-authority-data: Y2E=\nusers: []\ncontexts: []\n")
	c, err := Read(other)
	if err != nil || string(c.Clusters["x"]) != "ca" {
		t.Errorf("Read of bytes not written here = %v, %v", c, err)
	}
	if _, err := Read([]byte("clusters: [")); err == nil {
		t.Errorf("Read of bytes that are no kubeconfig did not fail")
	}
}

// TestWriteRemembersBoundedly: the process keeps at most the last `remembered` kubeconfigs it wrote.
func TestWriteRemembersBoundedly(t *testing.T) {
	var first []byte
	for i := 0; i < remembered+10; i++ {
		b, err := Write(config(1000 + i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b
		}
	}
	mu.Lock()
	n := len(written)
	_, kept := written[string(first)]
	mu.Unlock()
	if n > remembered || kept {
		t.Errorf("%d kubeconfigs remembered (bound %d), the oldest kept: %v", n, remembered, kept)
	}
}

// TestWriteIsClientcmdWrite: Write gives clientcmd.Write's bytes for kubeconfigs of every shape the v1 format
// has (several clusters, users and contexts; TLS server names, proxies, insecure flags, tokens, exec providers,
// namespaces, preferences) and names and values that YAML must quote or escape.
func TestWriteIsClientcmdWrite(t *testing.T) {
	words := []string{"a", "sno", "system:admin", "localhost-recovery", "https://api.sno.example.com:6443", "yes", "no",
		"null", "~", "1.5", "0x1F", "2001:db8::1", "-dash", "key: value", "#hash", "it's", `"quoted"`, "tab\there",
		"line\nbreak", "ünïcode", "emoji 🙂", " lead", "trail ", "", "@at", "*star", "&amp", "!bang", "%pct", "{x}", "[y]"}
	rnd := rand.New(rand.NewSource(1))
	w := func() string { return words[rnd.Intn(len(words))] }
	for i := 0; i < 300; i++ {
		cfg := clientcmdapi.NewConfig()
		for j := rnd.Intn(3); j >= 0; j-- {
			cfg.Clusters[w()+fmt.Sprint(j)] = &clientcmdapi.Cluster{Server: w(), TLSServerName: w(), InsecureSkipTLSVerify: rnd.Intn(2) == 0,
				CertificateAuthorityData: []byte(w()), ProxyURL: w(), DisableCompression: rnd.Intn(2) == 0}
		}
		for j := rnd.Intn(3); j >= 0; j-- {
			u := &clientcmdapi.AuthInfo{ClientCertificateData: []byte(w()), ClientKeyData: []byte(w()), Token: w(), Username: w()}
			if rnd.Intn(3) == 0 {
				u.Exec = &clientcmdapi.ExecConfig{Command: w(), Args: []string{w(), w()}, Env: []clientcmdapi.ExecEnvVar{{Name: w(), Value: w()}},
					APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
			}
			cfg.AuthInfos[w()+fmt.Sprint(j)] = u
		}
		cfg.Contexts[w()] = &clientcmdapi.Context{Cluster: w(), AuthInfo: w(), Namespace: w()}
		cfg.CurrentContext = w()
		cfg.Preferences.Colors = rnd.Intn(2) == 0
		want, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("config %d: Write wrote\n%s\nclientcmd.Write\n%s", i, got, want)
		}
	}
}
