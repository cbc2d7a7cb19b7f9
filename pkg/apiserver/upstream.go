package apiserver

// The upstream flavor (--flavor upstream): the same loops, PKI, encryption configuration, revision and installer
// layout as the OpenShift flavor; only the pod of configmap kube-apiserver-pod differs. It runs the upstream
// kube-apiserver image (clusterconfig image "kube-apiserver") with flags only, every flag naming a file of the
// revision (/etc/kubernetes/static-pod-resources inside the pod) or of the cert directory
// (/etc/kubernetes/static-pod-certs). Values that depend on the cluster come from the operator's observed config,
// so both flavors serve the same cluster: etcd servers, bind address, service networks, service-account issuer,
// encryption configuration, audit policy, TLS profile, single-node shutdown timings and proxy.
//
// Left out on purpose: the OpenShift config file (--openshift-config), OpenShift admission plugins and
// authorizers, OpenShift feature gates (upstream's defaults apply), the setup and watch-termination shell, the
// cert syncer, cert regeneration controller, insecure readyz and check-endpoints sidecars, and the startup
// monitor. Nothing rotates certificates on this node anyway.

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

// UpstreamImage is the clusterconfig image the upstream pod runs.
const UpstreamImage = "kube-apiserver"

// The upstream pod's files (operator.ResourceFile and CertFile: the OpenShift pod's mount points).
var (
	resourceFile = operator.ResourceFile
	certFile     = operator.CertFile
)

// sniCert is a serving certificate kube-apiserver presents for the names of its cert-rotation row.
type sniCert struct{ dir, secret string }

// upstreamSNICerts are served by name (--tls-sni-cert-key); the service-network certificate is the default one
// (--tls-cert-file). The same certificates the OpenShift flavor lists in servingInfo.namedCertificates.
var upstreamSNICerts = []sniCert{
	{operator.CertsInPod, "localhost-serving-cert-certkey"},
	{operator.ResourcesInPod, "localhost-recovery-serving-certkey"},
	{operator.CertsInPod, "external-loadbalancer-serving-certkey"},
	{operator.CertsInPod, "internal-loadbalancer-serving-certkey"},
}

// UpstreamInputs is what the upstream flags are computed from besides the observed config.
type UpstreamInputs struct {
	// NodeIP is the advertised address (the node's primary IP).
	NodeIP netip.Addr
	// ServiceAccountPublicKeys are the in-pod files of every public key that verifies service-account tokens.
	ServiceAccountPublicKeys []string
	// SNINames are the serving names of each upstreamSNICerts secret.
	SNINames map[string][]string
	// Verbosity is the klog level (2 for the operator's Normal log level).
	Verbosity int
}

// Fixed upstream arguments: files the revision and the cert directory hold, and the settings of a single
// control-plane node that do not depend on the cluster. Keep to flags kube-apiserver v1.34 lists in --help.
var upstreamFixedArgs = [][2]string{
	{"allow-privileged", "true"},
	{"authorization-mode", "Node,RBAC"},
	{"enable-admission-plugins", "NodeRestriction"},
	{"client-ca-file", certFile("configmaps", "client-ca", "ca-bundle.crt")},
	{"etcd-cafile", resourceFile("configmaps", "etcd-serving-ca", "ca-bundle.crt")},
	{"etcd-certfile", resourceFile("secrets", "etcd-client", "tls.crt")},
	{"etcd-keyfile", resourceFile("secrets", "etcd-client", "tls.key")},
	{"tls-cert-file", certFile("secrets", "service-network-serving-certkey", "tls.crt")},
	{"tls-private-key-file", certFile("secrets", "service-network-serving-certkey", "tls.key")},
	{"service-account-signing-key-file", certFile("secrets", BoundSigningKeySecret, PrivateKeyKey)},
	{"kubelet-client-certificate", certFile("secrets", "kubelet-client", "tls.crt")},
	{"kubelet-client-key", certFile("secrets", "kubelet-client", "tls.key")},
	{"kubelet-certificate-authority", resourceFile("configmaps", "kubelet-serving-ca", "ca-bundle.crt")},
	// Kubelets are reached on their internal IPs, which the kubelet serving certificates carry.
	{"kubelet-preferred-address-types", "InternalIP"},
	{"proxy-client-cert-file", certFile("secrets", "aggregator-client", "tls.crt")},
	{"proxy-client-key-file", certFile("secrets", "aggregator-client", "tls.key")},
	{"requestheader-client-ca-file", certFile("configmaps", "aggregator-client-ca", "ca-bundle.crt")},
	// The aggregator client certificate's name (system:openshift-aggregator) and the usual proxy names.
	{"requestheader-allowed-names", "kube-apiserver-proxy,system:kube-apiserver-proxy,system:openshift-aggregator"},
	{"requestheader-extra-headers-prefix", "X-Remote-Extra-"},
	{"requestheader-group-headers", "X-Remote-Group"},
	{"requestheader-username-headers", "X-Remote-User"},
	// Aggregated API servers are reached on their endpoints, not through service IPs (no proxy runs at first).
	{"enable-aggregator-routing", "true"},
	{"audit-log-path", "/var/log/kube-apiserver/audit.log"},
	{"audit-log-format", "json"},
	{"audit-log-maxbackup", "10"},
	{"audit-log-maxsize", "200"},
	// Clients are told to retry while the only instance shuts down, and a restarting instance can bind at once.
	{"shutdown-send-retry-after", "true"},
	{"permit-address-sharing", "true"},
}

// upstreamObservedArgs are the observed apiServerArguments carried over as they are (each value one flag;
// lists of several values are joined with commas unless repeated is set), and whether the render needs them.
var upstreamObservedArgs = []struct {
	name               string
	required, repeated bool
}{
	{name: "etcd-servers", required: true},
	{name: "service-account-issuer", required: true, repeated: true},
	{name: "api-audiences", required: true},
	{name: "service-account-jwks-uri"},
	{name: "encryption-provider-config"},
	{name: "audit-policy-file", required: true},
	{name: "shutdown-delay-duration"},
	{name: "goaway-chance"},
}

// UpstreamArgs returns the upstream kube-apiserver's arguments ("--name=value"), sorted by flag name (a
// repeated flag keeps its order).
func UpstreamArgs(observed map[string]interface{}, in UpstreamInputs) ([]string, error) {
	var flags operator.Flags
	add := flags.Add
	for _, a := range upstreamFixedArgs {
		add(a[0], a[1])
	}

	// Serving: the observed bind address (0.0.0.0 for IPv4, :: for IPv6 and dual stack) and its port.
	bind, _, err := unstructured.NestedString(observed, bindAddressPath...)
	if err != nil || bind == "" {
		return nil, fmt.Errorf("observedConfig has no servingInfo.bindAddress")
	}
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return nil, fmt.Errorf("observedConfig servingInfo.bindAddress %q: %w", bind, err)
	}
	add("bind-address", host)
	add("secure-port", port)
	if !in.NodeIP.IsValid() {
		return nil, fmt.Errorf("no node IP to advertise")
	}
	add("advertise-address", in.NodeIP.String())
	for _, c := range upstreamSNICerts {
		names := in.SNINames[c.secret]
		if len(names) == 0 {
			return nil, fmt.Errorf("no serving names for %s", c.secret)
		}
		dir := path.Join(c.dir, "secrets", c.secret)
		add("tls-sni-cert-key", dir+"/tls.crt,"+dir+"/tls.key:"+strings.Join(names, ","))
	}

	// TLS profile.
	tls, err := operator.UpstreamTLS(observed)
	if err != nil {
		return nil, err
	}
	tls.Flags(&flags)

	// Networks.
	services, _, err := unstructured.NestedString(observed, "servicesSubnet")
	if err != nil || services == "" {
		return nil, fmt.Errorf("observedConfig has no servicesSubnet")
	}
	add("service-cluster-ip-range", services)

	// Service-account tokens: every public key of the revision verifies; the bound key signs.
	if len(in.ServiceAccountPublicKeys) == 0 {
		return nil, fmt.Errorf("no service-account public keys")
	}
	for _, f := range in.ServiceAccountPublicKeys {
		add("service-account-key-file", f)
	}

	for _, a := range upstreamObservedArgs {
		values, found, err := unstructured.NestedStringSlice(observed, "apiServerArguments", a.name)
		if err != nil {
			return nil, fmt.Errorf("observedConfig apiServerArguments.%s: %w", a.name, err)
		}
		if !found || len(values) == 0 {
			if a.required {
				return nil, fmt.Errorf("observedConfig has no apiServerArguments.%s", a.name)
			}
			continue
		}
		if a.repeated {
			for _, v := range values {
				add(a.name, v)
			}
		} else {
			add(a.name, strings.Join(values, ","))
		}
	}
	add("v", strconv.Itoa(in.Verbosity))
	return flags.Args(), nil
}

var bindAddressPath = []string{"servingInfo", "bindAddress"}

// upstreamPodData is what manifests/kube-apiserver/upstream/pod.yaml is rendered with.
type upstreamPodData struct {
	Image                       string
	Args                        []string
	Env                         []corev1.EnvVar
	Port                        int
	ProbeHost                   string
	GracefulTerminationDuration int
}

// upstreamPodConfigMapLoop is target-config/kube-apiserver-pod of the upstream flavor: configmap
// kube-apiserver-pod with the upstream pod.yaml, forceRedeploymentReason and version (no startup monitor: it is
// an operator binary).
func (k *Component) upstreamPodConfigMapLoop() loops.Loop {
	return k.whenInputs(loops.Loop{Name: "target-config/kube-apiserver-pod", Sync: func(ctx context.Context) error {
		observed, spec, err := k.podState()
		if err != nil {
			return err
		}
		in := UpstreamInputs{NodeIP: k.In.NodeIP(), SNINames: map[string][]string{}, Verbosity: verbosity(spec.LogLevel)}
		if in.ServiceAccountPublicKeys, err = k.serviceAccountPublicKeyFiles(); err != nil {
			return err
		}
		cfg := k.Cluster.ConfigInformers.Config().V1()
		rows := Rotations(cfg.Networks().Lister(), cfg.Infrastructures().Lister())
		for _, c := range upstreamSNICerts {
			for _, r := range rows {
				if r.Target.Name == c.secret && r.Target.Namespace == TargetNamespace {
					if in.SNINames[c.secret], err = r.Hostnames(); err != nil {
						return err
					}
				}
			}
		}
		args, err := UpstreamArgs(observed, in)
		if err != nil {
			return err
		}
		d := upstreamPodData{Image: k.In.Images.Image(UpstreamImage), Args: args, ProbeHost: in.NodeIP.String(), GracefulTerminationDuration: 135}
		if d.GracefulTerminationDuration, err = gracefulTerminationDuration(observed, d.GracefulTerminationDuration); err != nil {
			return err
		}
		bind, _, _ := unstructured.NestedString(observed, bindAddressPath...)
		if _, port, err := net.SplitHostPort(bind); err == nil {
			d.Port, _ = strconv.Atoi(port)
		}
		if d.Env, err = operator.ProxyEnv(observed, operator.ProxyPath...); err != nil {
			return err
		}
		pod, err := renderUpstreamPod(d)
		if err != nil {
			return err
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: "kube-apiserver-pod",
			Annotations: map[string]string{"openshift.io/owning-component": jira}},
			Data: map[string]string{"pod.yaml": pod, "forceRedeploymentReason": spec.ForceRedeploymentReason, "version": ""}}
		_, _, err = resourceapply.ApplyConfigMap(ctx, k.Cluster.Kube.CoreV1(), k.Recorder, cm)
		return err
	}}, etcdEndpoints)
}

// serviceAccountPublicKeyFiles are the in-pod files of every key of the revision's sa-token-signing-certs (the
// installer's legacy token key) and bound-sa-token-signing-certs (the bound token signer's keys), sorted. It
// fails while either configmap is missing or empty in the operand namespace (the resource sync and the signer
// loop make them).
func (k *Component) serviceAccountPublicKeyFiles() ([]string, error) {
	cms := k.Cluster.KubeInformers.InformersFor(TargetNamespace).Core().V1().ConfigMaps().Lister().ConfigMaps(TargetNamespace)
	var out []string
	for _, name := range []string{"sa-token-signing-certs", BoundSigningCertsCM} {
		cm, err := cms.Get(name)
		if err != nil {
			return nil, fmt.Errorf("service-account public keys: %w", err)
		}
		if len(cm.Data) == 0 {
			return nil, fmt.Errorf("service-account public keys: configmap %s/%s has no key yet", TargetNamespace, name)
		}
		for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
			out = append(out, resourceFile("configmaps", name, key))
		}
	}
	return out, nil
}

// renderUpstreamPod renders manifests/kube-apiserver/upstream/pod.yaml and returns it as the JSON a pod
// configmap carries.
func renderUpstreamPod(d upstreamPodData) (string, error) {
	pod, err := operator.RenderPod("kube-apiserver/upstream/pod.yaml", d)
	if err != nil {
		return "", err
	}
	return resourceread.WritePodV1OrDie(pod), nil
}
