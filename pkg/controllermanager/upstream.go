package controllermanager

// The upstream flavor (--flavor upstream) of kube-controller-manager: the same loops, certificates, revision and
// installer layout as the OpenShift flavor; only the pod of configmap kube-controller-manager-pod differs. It runs
// the upstream kube-controller-manager image (clusterconfig image "kube-controller-manager") with flags only,
// every flag naming a file of the revision (/etc/kubernetes/static-pod-resources inside the pod) or of the cert
// directory (/etc/kubernetes/static-pod-certs): the very files the OpenShift pod's exec line and config.yaml name.
// The cluster's values (cluster name, networks, signing duration, controllers) come from the revision's
// config.yaml (defaults, observed config and overrides, as the operator merges them), the TLS profile and the
// proxy from the observed config.
//
// Left out on purpose: the OpenShift config file (--openshift-config) and what only OpenShift's kube-controller-
// manager reads from it (service CA injection), OpenShift feature gates (upstream's defaults apply), the bash
// wrapper (its wait for the port is --permit-address-sharing; the trusted CA bundle copy and the AWS CA bundle need
// a shell and a cloud), the cluster-policy-controller, cert syncer and recovery controller containers, the
// OpenShift tuning of API rates and leader election (upstream's defaults, as kubeadm runs it), the flex-volume
// directory of RHCOS's kubelet, and the recycler pod template (it names the OpenShift tools image; upstream's
// default recycler applies).
//
// pkg/scheduler renders its upstream pod with the helpers here (UpstreamPodData, RenderUpstreamPod,
// UpstreamBindAddress, the in-pod paths).

import (
	"context"
	"fmt"
	"net/netip"
	"path"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
)

// UpstreamImage is the clusterconfig image the upstream kube-controller-manager pod runs.
const UpstreamImage = "kube-controller-manager"

// Where the upstream pods of kube-controller-manager and kube-scheduler mount the revision and the cert directory
// (the OpenShift pods' mount points, so that the kubeconfigs of the revision resolve unchanged), and the writable
// directory (an emptyDir) in which they keep their self-signed serving certificate, as the OpenShift pods'
// --cert-dir.
const (
	ResourcesInPod  = "/etc/kubernetes/static-pod-resources"
	CertsInPod      = "/etc/kubernetes/static-pod-certs"
	UpstreamCertDir = "/var/run/kubernetes"
)

// UpstreamSecurePort is kube-controller-manager's HTTPS port (healthz, metrics), as in the OpenShift pod.
const UpstreamSecurePort = 10257

// ResourceFile is a file of the revision inside an upstream pod: <ResourcesInPod>/{configmaps,secrets}/<name>/<key>.
func ResourceFile(kind, name, key string) string { return path.Join(ResourcesInPod, kind, name, key) }

// CertFile is a file of the cert directory inside an upstream pod: <CertsInPod>/{configmaps,secrets}/<name>/<key>.
func CertFile(kind, name, key string) string { return path.Join(CertsInPod, kind, name, key) }

// upstreamKubeconfig is controller-manager-kubeconfig (api-int, system:kube-controller-manager), the kubeconfig
// of all three client connections, as in the OpenShift pod.
var upstreamKubeconfig = ResourceFile("configmaps", "controller-manager-kubeconfig", "kubeconfig")

// upstreamFixedArgs are the files of the revision and the cert directory, and the settings that do not depend on
// the cluster. Keep to flags kube-controller-manager v1.34 lists in --help (testdata/upstream).
var upstreamFixedArgs = [][2]string{
	{"kubeconfig", upstreamKubeconfig},
	{"authentication-kubeconfig", upstreamKubeconfig},
	{"authorization-kubeconfig", upstreamKubeconfig},
	{"client-ca-file", CertFile("configmaps", "client-ca", "ca-bundle.crt")},
	{"requestheader-client-ca-file", CertFile("configmaps", "aggregator-client-ca", "ca-bundle.crt")},
	// The token signer's key (sa-token-signer) and the CA every pod gets as the service-account ca.crt.
	{"service-account-private-key-file", ResourceFile("secrets", "service-account-private-key", "service-account.key")},
	{"root-ca-file", ResourceFile("configmaps", "serviceaccount-ca", "ca-bundle.crt")},
	// The intermediate kube-csr-signer: kubelet client and serving certificates.
	{"cluster-signing-cert-file", CertFile("secrets", "csr-signer", "tls.crt")},
	{"cluster-signing-key-file", CertFile("secrets", "csr-signer", "tls.key")},
	{"use-service-account-credentials", "true"},
	// The lease kubeadm's kube-controller-manager holds (the flags' defaults, spelled out).
	{"leader-elect", "true"},
	{"leader-elect-resource-namespace", "kube-system"},
	{"leader-elect-resource-name", "kube-controller-manager"},
	{"secure-port", strconv.Itoa(UpstreamSecurePort)},
	{"cert-dir", UpstreamCertDir},
	// A restarted instance binds at once (the OpenShift pod's shell waits for the port instead).
	{"permit-address-sharing", "true"},
}

// upstreamExtendedArgs are the extendedArguments of config.yaml carried over as they are (several values joined
// with commas: one flag for both families of a dual-stack cluster). All are required.
var upstreamExtendedArgs = []string{
	"allocate-node-cidrs",
	"cluster-name",
	"cluster-cidr",
	"service-cluster-ip-range",
	"cluster-signing-duration",
}

// UpstreamInputs is what the upstream kube-controller-manager's flags are computed from.
type UpstreamInputs struct {
	// ExtendedArguments are those of the revision's config.yaml (configmap config).
	ExtendedArguments map[string][]string
	// Observed is the operator's observed config (servingInfo: the TLS profile).
	Observed map[string]interface{}
	// NodeIPs are the node's IPs, primary first.
	NodeIPs []netip.Addr
	// ServingCert says the revision holds secret serving-cert (service-ca-operator's certificate for the
	// kube-controller-manager service); without it kube-controller-manager serves a self-signed certificate.
	ServingCert bool
	// Verbosity is the klog level.
	Verbosity int
}

// UpstreamArgs returns the upstream kube-controller-manager's arguments ("--name=value"), sorted by flag name.
func UpstreamArgs(in UpstreamInputs) ([]string, error) {
	flags := map[string]string{}
	for _, a := range upstreamFixedArgs {
		flags[a[0]] = a[1]
	}
	for _, name := range upstreamExtendedArgs {
		v := in.ExtendedArguments[name]
		if len(v) == 0 || strings.Join(v, "") == "" {
			return nil, fmt.Errorf("config.yaml has no extendedArguments.%s", name)
		}
		flags[name] = strings.Join(v, ",")
	}
	controllers, err := UpstreamControllers(in.ExtendedArguments["controllers"])
	if err != nil {
		return nil, err
	}
	flags["controllers"] = strings.Join(controllers, ",")
	bind, err := UpstreamBindAddress(in.NodeIPs)
	if err != nil {
		return nil, err
	}
	flags["bind-address"] = bind
	tls, err := UpstreamTLSArgs(in.Observed)
	if err != nil {
		return nil, err
	}
	for k, v := range tls {
		flags[k] = v
	}
	if in.ServingCert {
		flags["tls-cert-file"] = ResourceFile("secrets", "serving-cert", "tls.crt")
		flags["tls-private-key-file"] = ResourceFile("secrets", "serving-cert", "tls.key")
	}
	flags["v"] = strconv.Itoa(in.Verbosity)
	return SortedArgs(flags), nil
}

// SortedArgs turns flags into "--name=value" arguments sorted by name.
func SortedArgs(flags map[string]string) []string {
	names := make([]string, 0, len(flags))
	for n := range flags {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, "--"+n+"="+flags[n])
	}
	return out
}

// UpstreamBindAddress is where the upstream kube-controller-manager and kube-scheduler listen: every address of
// the node, as in the OpenShift pods (the metrics services reach them on the node IP). Written as kube-apiserver's
// observed bind address is: 0.0.0.0 on an IPv4 node, :: when the node has an IPv6 address.
func UpstreamBindAddress(nodeIPs []netip.Addr) (string, error) {
	if len(nodeIPs) == 0 {
		return "", fmt.Errorf("no node IP")
	}
	for _, ip := range nodeIPs {
		if ip.Is6() && !ip.Is4In6() {
			return "::", nil
		}
	}
	return "0.0.0.0", nil
}

// UpstreamTLSArgs are tls-min-version (required) and tls-cipher-suites (when the profile lists suites) from the
// observed servingInfo, the API server's TLS profile.
func UpstreamTLSArgs(observed map[string]interface{}) (map[string]string, error) {
	out := map[string]string{}
	min, _, err := unstructured.NestedString(observed, "servingInfo", "minTLSVersion")
	if err != nil || min == "" {
		return nil, fmt.Errorf("observedConfig has no servingInfo.minTLSVersion")
	}
	out["tls-min-version"] = min
	suites, _, err := unstructured.NestedStringSlice(observed, "servingInfo", "cipherSuites")
	if err != nil {
		return nil, fmt.Errorf("observedConfig servingInfo.cipherSuites: %w", err)
	}
	if len(suites) > 0 {
		out["tls-cipher-suites"] = strings.Join(suites, ",")
	}
	return out, nil
}

// UpstreamControllerNames are the controllers of kube-controller-manager v1.34 (its --help lists them).
var UpstreamControllerNames = []string{
	"bootstrap-signer-controller", "certificatesigningrequest-approving-controller",
	"certificatesigningrequest-cleaner-controller", "certificatesigningrequest-signing-controller",
	"cloud-node-lifecycle-controller", "clusterrole-aggregation-controller", "cronjob-controller",
	"daemonset-controller", "deployment-controller", "device-taint-eviction-controller", "disruption-controller",
	"endpoints-controller", "endpointslice-controller", "endpointslice-mirroring-controller",
	"ephemeral-volume-controller", "garbage-collector-controller", "horizontal-pod-autoscaler-controller",
	"job-controller", "kube-apiserver-serving-clustertrustbundle-publisher-controller",
	"legacy-serviceaccount-token-cleaner-controller", "namespace-controller", "node-ipam-controller",
	"node-lifecycle-controller", "node-route-controller", "persistentvolume-attach-detach-controller",
	"persistentvolume-binder-controller", "persistentvolume-expander-controller",
	"persistentvolume-protection-controller", "persistentvolumeclaim-protection-controller",
	"pod-garbage-collector-controller", "podcertificaterequest-cleaner-controller", "replicaset-controller",
	"replicationcontroller-controller", "resourceclaim-controller", "resourcequota-controller",
	"root-ca-certificate-publisher-controller", "selinux-warning-controller", "service-cidr-controller",
	"service-lb-controller", "serviceaccount-controller", "serviceaccount-token-controller",
	"statefulset-controller", "storage-version-migrator-controller", "storageversion-garbage-collector-controller",
	"taint-eviction-controller", "token-cleaner-controller", "ttl-after-finished-controller", "ttl-controller",
	"validatingadmissionpolicy-status-controller", "volumeattributesclass-protection-controller",
}

// upstreamControllerAliases are the older controller names kube-controller-manager v1.34 still accepts (with a
// warning), as OpenShift's config.yaml spells some of them, with their current names.
var upstreamControllerAliases = map[string]string{
	"attachdetach": "persistentvolume-attach-detach-controller", "bootstrapsigner": "bootstrap-signer-controller",
	"cloud-node-lifecycle": "cloud-node-lifecycle-controller", "clusterrole-aggregation": "clusterrole-aggregation-controller",
	"cronjob": "cronjob-controller", "csrapproving": "certificatesigningrequest-approving-controller",
	"csrcleaner": "certificatesigningrequest-cleaner-controller", "csrsigning": "certificatesigningrequest-signing-controller",
	"daemonset": "daemonset-controller", "deployment": "deployment-controller", "disruption": "disruption-controller",
	"endpoint": "endpoints-controller", "endpointslice": "endpointslice-controller",
	"endpointslicemirroring": "endpointslice-mirroring-controller", "ephemeral-volume": "ephemeral-volume-controller",
	"garbagecollector": "garbage-collector-controller", "horizontalpodautoscaling": "horizontal-pod-autoscaler-controller",
	"job": "job-controller", "legacy-service-account-token-cleaner": "legacy-serviceaccount-token-cleaner-controller",
	"namespace": "namespace-controller", "nodeipam": "node-ipam-controller", "nodelifecycle": "node-lifecycle-controller",
	"persistentvolume-binder": "persistentvolume-binder-controller", "persistentvolume-expander": "persistentvolume-expander-controller",
	"podgc": "pod-garbage-collector-controller", "pv-protection": "persistentvolume-protection-controller",
	"pvc-protection": "persistentvolumeclaim-protection-controller", "replicaset": "replicaset-controller",
	"replicationcontroller": "replicationcontroller-controller", "resource-claim-controller": "resourceclaim-controller",
	"resourcequota": "resourcequota-controller", "root-ca-cert-publisher": "root-ca-certificate-publisher-controller",
	"route": "node-route-controller", "service": "service-lb-controller", "serviceaccount": "serviceaccount-controller",
	"serviceaccount-token": "serviceaccount-token-controller", "statefulset": "statefulset-controller",
	"storage-version-gc": "storageversion-garbage-collector-controller", "svm": "storage-version-migrator-controller",
	"tokencleaner": "token-cleaner-controller", "ttl": "ttl-controller", "ttl-after-finished": "ttl-after-finished-controller",
}

// UpstreamControllers translates config.yaml's --controllers list ("*", "name", "-name") into kube-controller-manager
// v1.34's current names; a name that is no upstream controller (an OpenShift-only one) is refused.
func UpstreamControllers(list []string) ([]string, error) {
	if len(list) == 0 {
		return nil, fmt.Errorf("config.yaml has no extendedArguments.controllers")
	}
	known := map[string]bool{}
	for _, n := range UpstreamControllerNames {
		known[n] = true
	}
	var out []string
	for _, entry := range list {
		for _, e := range strings.Split(entry, ",") {
			if e == "*" {
				out = append(out, e)
				continue
			}
			sign, name := "", e
			if strings.HasPrefix(e, "-") {
				sign, name = "-", e[1:]
			}
			if n, ok := upstreamControllerAliases[name]; ok {
				name = n
			}
			if !known[name] {
				return nil, fmt.Errorf("controller %q is not a controller of upstream kube-controller-manager", e)
			}
			out = append(out, sign+name)
		}
	}
	return out, nil
}

// UpstreamPodData is what manifests/<component>/upstream/pod.yaml is rendered with.
type UpstreamPodData struct {
	Image     string
	Args      []string
	Env       []corev1.EnvVar
	Port      int
	ProbeHost string
}

var upstreamTemplateFuncs = template.FuncMap{"quote": strconv.Quote}

// RenderUpstreamPod renders an upstream pod template (a path below manifests/) into a pod.
func RenderUpstreamPod(name string, d UpstreamPodData) (*corev1.Pod, error) {
	pod, _, err := manifests.Pod(name, upstreamTemplateFuncs, d)
	return pod, err
}

// configExtendedArguments reads the extendedArguments of a KubeControllerManagerConfig config.yaml.
func configExtendedArguments(configYAML string) (map[string][]string, error) {
	var cfg struct {
		ExtendedArguments map[string][]string `json:"extendedArguments"`
	}
	if err := yaml.Unmarshal([]byte(configYAML), &cfg); err != nil {
		return nil, fmt.Errorf("config.yaml: %w", err)
	}
	return cfg.ExtendedArguments, nil
}

// manageUpstreamPod is target-config/kube-controller-manager/kube-controller-manager-pod of the upstream flavor:
// configmap kube-controller-manager-pod with the upstream pod.yaml, forceRedeploymentReason and version. It waits
// (fails, to be retried) until the config configmap is there.
func (k *Component) manageUpstreamPod(ctx context.Context) error {
	obs, spec, err := k.observedConfig()
	if err != nil {
		return err
	}
	cfg, err := k.cluster.KubeInformers.ConfigMapLister().ConfigMaps(TargetNamespace).Get("config")
	if err != nil {
		return fmt.Errorf("configmap %s/config: %w", TargetNamespace, err)
	}
	ext, err := configExtendedArguments(cfg.Data["config.yaml"])
	if err != nil {
		return err
	}
	in := UpstreamInputs{ExtendedArguments: ext, Observed: obs, NodeIPs: k.in.NodeIPs, Verbosity: LogLevel(spec.LogLevel)}
	switch _, err := k.cluster.KubeInformers.SecretLister().Secrets(TargetNamespace).Get("serving-cert"); {
	case err == nil:
		in.ServingCert = true
	case !apierrors.IsNotFound(err):
		return err
	}
	args, err := UpstreamArgs(in)
	if err != nil {
		return err
	}
	env, err := ProxyEnv(obs, proxyPath...)
	if err != nil {
		return err
	}
	pod, err := RenderUpstreamPod(ComponentName+"/upstream/pod.yaml", UpstreamPodData{
		Image: k.in.Images.Image(UpstreamImage), Args: args, Env: env, Port: UpstreamSecurePort, ProbeHost: k.in.NodeIP().String(),
	})
	if err != nil {
		return err
	}
	_, _, err = resourceapply.ApplyConfigMap(ctx, k.cluster.Kube.CoreV1(), k.recorder, PodConfigMap(TargetNamespace, "kube-controller-manager-pod", pod, spec))
	return err
}
