// Package kubeconfig writes kubeconfigs as clientcmd.Write does and reads back the certificates they carry,
// without parsing the YAML again when this process wrote those very bytes.
//
// A render writes ~15 distinct kubeconfigs (the static pods' revisions repeat them) and its summary then reads
// the certificates of every file on the node (pkg/inventory). clientcmd.Load parses a kubeconfig's YAML with
// go-yaml, whose scanner takes ~0.5 ms over a kubeconfig's long base64 scalars; the bytes Write returned are
// remembered with what they were written from, by content, so reading them back costs a map lookup. Other bytes
// are parsed with clientcmd.Load.
package kubeconfig

import (
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/clientcmd/api/latest"

	"github.com/render-static/render-static/pkg/codec"
)

// Certificates are the certificate data of a kubeconfig: each cluster's certificate-authority-data and each
// user's client-certificate-data, by name (names with none are left out).
type Certificates struct {
	Clusters, Users map[string][]byte
}

// remembered bounds what the process keeps: a fleet writes a site's kubeconfigs, reads them back in its summary
// and moves on; the oldest are dropped first.
const remembered = 512

var (
	mu      sync.Mutex
	written = map[string]Certificates{}
	order   []string // keys of written, oldest first
)

// jsonCodec is clientcmd's codec (clientcmd/api/latest: the v1 kubeconfig, defaulted) with JSON for YAML.
var jsonCodec = versioning.NewDefaultingCodecForScheme(latest.Scheme,
	jsonSerializer, jsonSerializer, schema.GroupVersion{Version: latest.Version}, runtime.InternalGroupVersioner)

var jsonSerializer = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, latest.Scheme, latest.Scheme, kjson.SerializerOptions{})

// Write returns clientcmd.Write(cfg), byte for byte, and remembers the certificates the bytes carry for Read.
// clientcmd.Write marshals the v1 kubeconfig to JSON and that to YAML with sigs.k8s.io/yaml.JSONToYAML, which
// parses the JSON with go-yaml's scanner (slow over the long base64 scalars) and marshals what it parsed; Write
// marshals the same JSON, decoded, with codec.MarshalYAML (sigs.k8s.io/yaml.Marshal byte for byte, without the
// JSON round trip: a kubeconfig's JSON holds strings, booleans, objects and arrays, which decode and re-encode
// as they were, keys sorted as go-yaml sorts them).
func Write(cfg clientcmdapi.Config) ([]byte, error) {
	j, err := runtime.Encode(jsonCodec, &cfg)
	if err != nil {
		return nil, err
	}
	var obj map[string]interface{}
	if err := json.Unmarshal(j, &obj); err != nil {
		return nil, err
	}
	b, err := codec.MarshalYAML(obj)
	if err != nil {
		return nil, err
	}
	certs := certificatesOf(&cfg)
	mu.Lock()
	defer mu.Unlock()
	key := string(b)
	if _, ok := written[key]; !ok {
		if len(order) == remembered {
			delete(written, order[0])
			order = order[1:]
		}
		order = append(order, key)
	}
	written[key] = certs
	return b, nil
}

// Read returns the certificates of a kubeconfig: those remembered if this process wrote data (Write), else those
// clientcmd.Load(data) gives. The maps are shared: read only.
func Read(data []byte) (Certificates, error) {
	mu.Lock()
	c, ok := written[string(data)]
	mu.Unlock()
	if ok {
		return c, nil
	}
	return Parse(data)
}

// Parse returns the certificates clientcmd.Load(data) gives, parsing data whoever wrote it.
func Parse(data []byte) (Certificates, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return Certificates{}, err
	}
	return certificatesOf(cfg), nil
}

func certificatesOf(cfg *clientcmdapi.Config) Certificates {
	c := Certificates{Clusters: map[string][]byte{}, Users: map[string][]byte{}}
	for n, cl := range cfg.Clusters {
		if cl != nil && len(cl.CertificateAuthorityData) > 0 {
			c.Clusters[n] = append([]byte(nil), cl.CertificateAuthorityData...)
		}
	}
	for n, u := range cfg.AuthInfos {
		if u != nil && len(u.ClientCertificateData) > 0 {
			c.Users[n] = append([]byte(nil), u.ClientCertificateData...)
		}
	}
	return c
}
