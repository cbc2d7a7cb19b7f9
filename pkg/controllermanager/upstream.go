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
// The in-pod paths, the pod data and the TLS and bind flags are pkg/operator's, shared with kube-scheduler.

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/operator"
)

// UpstreamImage is the clusterconfig image the upstream kube-controller-manager pod runs.
const UpstreamImage = "kube-controller-manager"

// UpstreamSecurePort is kube-controller-manager's HTTPS port (healthz, metrics), as in the OpenShift pod.
const UpstreamSecurePort = 10257

// upstreamKubeconfig is controller-manager-kubeconfig (api-int, system:kube-controller-manager), the kubeconfig
// of all three client connections, as in the OpenShift pod.
var upstreamKubeconfig = operator.ResourceFile("configmaps", "controller-manager-kubeconfig", "kubeconfig")

// upstreamFixedArgs are the files of the revision and the cert directory, and the settings that do not depend on
// the cluster, besides operator.UpstreamServer's. Keep to flags kube-controller-manager v1.34 lists in --help
// (testdata/upstream).
var upstreamFixedArgs = [][2]string{
	{"client-ca-file", operator.CertFile("configmaps", "client-ca", "ca-bundle.crt")},
	{"requestheader-client-ca-file", operator.CertFile("configmaps", "aggregator-client-ca", "ca-bundle.crt")},
	// The token signer's key (sa-token-signer) and the CA every pod gets as the service-account ca.crt.
	{"service-account-private-key-file", operator.ResourceFile("secrets", "service-account-private-key", "service-account.key")},
	{"root-ca-file", operator.ResourceFile("configmaps", "serviceaccount-ca", "ca-bundle.crt")},
	// The intermediate kube-csr-signer: kubelet client and serving certificates.
	{"cluster-signing-cert-file", operator.CertFile("secrets", "csr-signer", "tls.crt")},
	{"cluster-signing-key-file", operator.CertFile("secrets", "csr-signer", "tls.key")},
	{"use-service-account-credentials", "true"},
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

// UpstreamInputs is what the upstream kube-controller-manager's flags are computed from: the extendedArguments
// of the revision's config.yaml (configmap config), and operator.UpstreamServer's inputs (the observed config's TLS
// profile, the node's IPs, whether the revision has serving-cert, the klog level).
type UpstreamInputs struct {
	ExtendedArguments map[string][]string
	Observed          map[string]interface{}
	NodeIPs           []netip.Addr
	ServingCert       bool
	Verbosity         int
}

// UpstreamArgs returns the upstream kube-controller-manager's arguments ("--name=value"), sorted by flag name.
func UpstreamArgs(in UpstreamInputs) ([]string, error) {
	var flags operator.Flags
	for _, a := range upstreamFixedArgs {
		flags.Add(a[0], a[1])
	}
	for _, name := range upstreamExtendedArgs {
		v := in.ExtendedArguments[name]
		if len(v) == 0 || strings.Join(v, "") == "" {
			return nil, fmt.Errorf("config.yaml has no extendedArguments.%s", name)
		}
		flags.Add(name, strings.Join(v, ","))
	}
	controllers, err := UpstreamControllers(in.ExtendedArguments["controllers"])
	if err != nil {
		return nil, err
	}
	flags.Add("controllers", strings.Join(controllers, ","))
	server := operator.UpstreamServer{Kubeconfig: upstreamKubeconfig, Lease: ComponentName, SecurePort: UpstreamSecurePort,
		NodeIPs: in.NodeIPs, Observed: in.Observed, ServingCert: in.ServingCert, Verbosity: in.Verbosity}
	if err := server.Flags(&flags); err != nil {
		return nil, err
	}
	return flags.Args(), nil
}

// upstreamControllers are the controllers of kube-controller-manager v1.34 (its --help lists them), each with the
// older name it still accepts (with a warning), as OpenShift's config.yaml spells some of them ("": none).
var upstreamControllers = map[string]string{
	"bootstrap-signer-controller":                                    "bootstrapsigner",
	"certificatesigningrequest-approving-controller":                 "csrapproving",
	"certificatesigningrequest-cleaner-controller":                   "csrcleaner",
	"certificatesigningrequest-signing-controller":                   "csrsigning",
	"cloud-node-lifecycle-controller":                                "cloud-node-lifecycle",
	"clusterrole-aggregation-controller":                             "clusterrole-aggregation",
	"cronjob-controller":                                             "cronjob",
	"daemonset-controller":                                           "daemonset",
	"deployment-controller":                                          "deployment",
	"device-taint-eviction-controller":                               "",
	"disruption-controller":                                          "disruption",
	"endpoints-controller":                                           "endpoint",
	"endpointslice-controller":                                       "endpointslice",
	"endpointslice-mirroring-controller":                             "endpointslicemirroring",
	"ephemeral-volume-controller":                                    "ephemeral-volume",
	"garbage-collector-controller":                                   "garbagecollector",
	"horizontal-pod-autoscaler-controller":                           "horizontalpodautoscaling",
	"job-controller":                                                 "job",
	"kube-apiserver-serving-clustertrustbundle-publisher-controller": "",
	"legacy-serviceaccount-token-cleaner-controller":                 "legacy-service-account-token-cleaner",
	"namespace-controller":                                           "namespace",
	"node-ipam-controller":                                           "nodeipam",
	"node-lifecycle-controller":                                      "nodelifecycle",
	"node-route-controller":                                          "route",
	"persistentvolume-attach-detach-controller":                      "attachdetach",
	"persistentvolume-binder-controller":                             "persistentvolume-binder",
	"persistentvolume-expander-controller":                           "persistentvolume-expander",
	"persistentvolume-protection-controller":                         "pv-protection",
	"persistentvolumeclaim-protection-controller":                    "pvc-protection",
	"pod-garbage-collector-controller":                               "podgc",
	"podcertificaterequest-cleaner-controller":                       "",
	"replicaset-controller":                                          "replicaset",
	"replicationcontroller-controller":                               "replicationcontroller",
	"resourceclaim-controller":                                       "resource-claim-controller",
	"resourcequota-controller":                                       "resourcequota",
	"root-ca-certificate-publisher-controller":                       "root-ca-cert-publisher",
	"selinux-warning-controller":                                     "",
	"service-cidr-controller":                                        "",
	"service-lb-controller":                                          "service",
	"serviceaccount-controller":                                      "serviceaccount",
	"serviceaccount-token-controller":                                "serviceaccount-token",
	"statefulset-controller":                                         "statefulset",
	"storage-version-migrator-controller":                            "svm",
	"storageversion-garbage-collector-controller":                    "storage-version-gc",
	"taint-eviction-controller":                                      "",
	"token-cleaner-controller":                                       "tokencleaner",
	"ttl-after-finished-controller":                                  "ttl-after-finished",
	"ttl-controller":                                                 "ttl",
	"validatingadmissionpolicy-status-controller":                    "",
	"volumeattributesclass-protection-controller":                    "",
}

// UpstreamControllerNames are the controllers of kube-controller-manager v1.34, sorted.
var UpstreamControllerNames = slices.Sorted(maps.Keys(upstreamControllers))

// UpstreamControllers translates config.yaml's --controllers list ("*", "name", "-name") into kube-controller-manager
// v1.34's current names; a name that is no upstream controller (an OpenShift-only one) is refused.
func UpstreamControllers(list []string) ([]string, error) {
	if len(list) == 0 {
		return nil, fmt.Errorf("config.yaml has no extendedArguments.controllers")
	}
	current := map[string]string{}
	for name, alias := range upstreamControllers {
		current[name] = name
		if alias != "" {
			current[alias] = name
		}
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
			name, ok := current[name]
			if !ok {
				return nil, fmt.Errorf("controller %q is not a controller of upstream kube-controller-manager", e)
			}
			out = append(out, sign+name)
		}
	}
	return out, nil
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
	obs, spec, err := k.ObservedConfig()
	if err != nil {
		return err
	}
	cfg, err := k.Cluster.KubeInformers.ConfigMapLister().ConfigMaps(TargetNamespace).Get("config")
	if err != nil {
		return fmt.Errorf("configmap %s/config: %w", TargetNamespace, err)
	}
	ext, err := configExtendedArguments(cfg.Data["config.yaml"])
	if err != nil {
		return err
	}
	in := UpstreamInputs{ExtendedArguments: ext, Observed: obs, NodeIPs: k.In.NodeIPs, Verbosity: verbosity(spec.LogLevel)}
	if in.ServingCert, err = operator.HasServingCert(k.Cluster, TargetNamespace); err != nil {
		return err
	}
	args, err := UpstreamArgs(in)
	if err != nil {
		return err
	}
	env, err := operator.ProxyEnv(obs, operator.ProxyPath...)
	if err != nil {
		return err
	}
	pod, err := operator.RenderPod(ComponentName+"/upstream/pod.yaml", operator.UpstreamPodData{
		Image: k.In.Images.Image(UpstreamImage), Args: args, Env: env, Port: UpstreamSecurePort, ProbeHost: k.In.NodeIP().String(),
	})
	if err != nil {
		return err
	}
	return k.ApplyPodConfigMap(ctx, TargetNamespace, "kube-controller-manager-pod", pod, spec)
}
