package node

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// SaveKeys returns the private keys of the client certificates the node side signed (PKCS#8 PEM, by CSR name),
// for a render's state (pkg/state): a later run that continues the cluster reuses them, and the emulated CSR
// approval then re-signs nothing that is still valid.
func (n *Node) SaveKeys() (map[string]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]string{}
	for name, k := range n.keys {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, fmt.Errorf("node key %s: %w", name, err)
		}
		out[name] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	}
	return out, nil
}

// RestoreKeys gives the node side the keys SaveKeys returned, before its loops run.
func (n *Node) RestoreKeys(keys map[string]string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, p := range keys {
		k, err := parsePrivateKey([]byte(p))
		if err != nil {
			return fmt.Errorf("node key %s: %w", name, err)
		}
		n.keys[name] = k
	}
	return nil
}
