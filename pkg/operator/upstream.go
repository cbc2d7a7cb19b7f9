package operator

import (
	"net/netip"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/render-static/render-static/pkg/loops"
)

// Secret serving-cert is the certificate service-ca-operator issues for a component's metrics service; in the
// revision, the pods pass it as --tls-cert-file and --tls-private-key-file once it exists (without it they serve a
// self-signed certificate).
var (
	ServingCertFile = ResourceFile("secrets", "serving-cert", "tls.crt")
	ServingKeyFile  = ResourceFile("secrets", "serving-cert", "tls.key")
)

// HasServingCert says whether the operand namespace holds secret serving-cert.
func HasServingCert(c *loops.Cluster, namespace string) (bool, error) {
	_, err := c.KubeInformers.SecretLister().Secrets(namespace).Get("serving-cert")
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, err
	}
}

// UpstreamServer is what the upstream kube-controller-manager and kube-scheduler pods share, kubeadm style: one
// kubeconfig of the revision for the client connection and for delegated authentication and authorization,
// leader election on kubeadm's lease kube-system/<Lease>, the secure port on every node address, the writable
// cert directory, the TLS profile of the observed config, the serving certificate when the revision has one and
// the klog level.
type UpstreamServer struct {
	Kubeconfig  string
	Lease       string
	SecurePort  int
	NodeIPs     []netip.Addr
	Observed    map[string]interface{}
	ServingCert bool
	Verbosity   int
}

// Flags adds the server's flags to f.
func (u UpstreamServer) Flags(f *Flags) error {
	for _, name := range []string{"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"} {
		f.Add(name, u.Kubeconfig)
	}
	// The lease kubeadm's components hold (the flags' defaults, spelled out).
	f.Add("leader-elect", "true")
	f.Add("leader-elect-resource-namespace", "kube-system")
	f.Add("leader-elect-resource-name", u.Lease)
	f.Add("secure-port", strconv.Itoa(u.SecurePort))
	f.Add("cert-dir", UpstreamCertDir)
	// A restarted instance binds at once (the OpenShift pods wait for the port instead).
	f.Add("permit-address-sharing", "true")
	bind, err := BindAddress(u.NodeIPs)
	if err != nil {
		return err
	}
	f.Add("bind-address", bind)
	tls, err := UpstreamTLS(u.Observed)
	if err != nil {
		return err
	}
	tls.Flags(f)
	if u.ServingCert {
		f.Add("tls-cert-file", ServingCertFile)
		f.Add("tls-private-key-file", ServingKeyFile)
	}
	f.Add("v", strconv.Itoa(u.Verbosity))
	return nil
}
