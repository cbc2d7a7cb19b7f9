package etcd

// The upstream flavor (--flavor upstream): the same loops, certificates, revision and installer layout as the
// OpenShift flavor; only the pod of configmap etcd-pod differs. It runs the upstream etcd image (clusterconfig image
// "etcd-upstream") with flags only. The certificates are the node's etcd-serving-<node> and etcd-peer-<node> from
// the cert directory (as the OpenShift pod uses them), tuning and TLS come from the environment the env-var loop
// computed for the OpenShift pod, and the addresses from the node. No shell, no environment variables, no
// operator sidecars (ensure-env, readyz, rev, metrics proxy); the scripts and restore pods in the cert directory
// stay as the operator lays them out.

import (
	"fmt"
	"net/netip"
	"path"
	"strings"

	"github.com/openshift/library-go/pkg/operator/resource/resourceread"

	"github.com/render-static/render-static/pkg/operator"
)

// UpstreamImage is the clusterconfig image the upstream pod runs.
const UpstreamImage = "etcd-upstream"

// UpstreamMetricsPort is the plain-HTTP loopback listener of metrics and of the /livez and /readyz probes.
const UpstreamMetricsPort = 2381

// The upstream pod's certificate files, in the cert directory; NODE_NAME is the installer's placeholder.
var (
	upstreamBundle     = path.Join(CertDirInPod, "configmaps", AllBundlesName, "server-ca-bundle.crt")
	upstreamCertPrefix = path.Join(CertDirInPod, "secrets", AllCertsName)
)

// upstreamEnvArgs are the variables of the operator's etcd environment etcd itself reads (ETCD_<FLAG>), passed
// as flags; required ones must be set. ETCD_INITIAL_CLUSTER_STATE is not among them (the upstream pod starts a
// new cluster, see UpstreamArgs) and neither is ETCD_ENABLE_PPROF (no profiling endpoints on a node nobody
// operates).
var upstreamEnvArgs = []struct {
	env      string
	required bool
}{
	{"ETCD_DATA_DIR", true},
	{"ETCD_QUOTA_BACKEND_BYTES", true},
	{"ETCD_HEARTBEAT_INTERVAL", true},
	{"ETCD_ELECTION_TIMEOUT", true},
	{"ETCD_TLS_MIN_VERSION", true},
	{"ETCD_CIPHER_SUITES", false}, // unset when only TLS 1.3 is allowed
	{"ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL", false},
	{"ETCD_SOCKET_REUSE_ADDRESS", false},
	{"ETCD_WARNING_APPLY_DURATION", false},
	{"ETCD_MAX_LEARNERS", false},
}

// loopback is the loopback address of an IP's family.
func loopback(ip netip.Addr) netip.Addr {
	if ip.Is6() {
		return netip.IPv6Loopback()
	}
	return netip.MustParseAddr("127.0.0.1")
}

// UpstreamArgs returns upstream etcd's arguments ("--name=value"), sorted by flag name: a single member named after
// the node (NODE_NAME) that serves clients on every node IP and on the loopback of the primary family, peers on the
// primary IP, and metrics and probes on plain HTTP on that loopback.
func UpstreamArgs(env EnvVars, nodeIPs []netip.Addr) ([]string, error) {
	if len(nodeIPs) == 0 {
		return nil, fmt.Errorf("no node IP")
	}
	primary := escapedIP(nodeIPs[0])
	lo := escapedIP(loopback(nodeIPs[0]))
	clientURLs := []string{"https://" + lo + ":2379"}
	for _, ip := range nodeIPs {
		clientURLs = append(clientURLs, "https://"+escapedIP(ip)+":2379")
	}
	flags := map[string]string{
		"name":                        "NODE_NAME",
		"initial-cluster-state":       "new",
		"initial-cluster":             "NODE_NAME=https://" + primary + ":2380",
		"initial-advertise-peer-urls": "https://" + primary + ":2380",
		"listen-peer-urls":            "https://" + primary + ":2380",
		"advertise-client-urls":       "https://" + primary + ":2379",
		"listen-client-urls":          strings.Join(clientURLs, ","),
		"listen-metrics-urls":         fmt.Sprintf("http://%s:%d", lo, UpstreamMetricsPort),
		"cert-file":                   upstreamCertPrefix + "/etcd-serving-NODE_NAME.crt",
		"key-file":                    upstreamCertPrefix + "/etcd-serving-NODE_NAME.key",
		"trusted-ca-file":             upstreamBundle,
		"client-cert-auth":            "true",
		"peer-cert-file":              upstreamCertPrefix + "/etcd-peer-NODE_NAME.crt",
		"peer-key-file":               upstreamCertPrefix + "/etcd-peer-NODE_NAME.key",
		"peer-trusted-ca-file":        upstreamBundle,
		"peer-client-cert-auth":       "true",
		// etcd 3.6's name of what 3.5 called --experimental-initial-corrupt-check (kubeadm 1.34 sets it too).
		"feature-gates": "InitialCorruptCheck=true",
		"logger":        "zap",
		"log-level":     "info",
	}
	for _, a := range upstreamEnvArgs {
		v, ok := env.Get(a.env)
		if !ok || v == "" {
			if a.required {
				return nil, fmt.Errorf("etcd environment has no %s", a.env)
			}
			continue
		}
		flags[strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(a.env, "ETCD_")), "_", "-")] = v
	}
	return operator.SortedArgs(flags), nil
}

// upstreamPodData is what manifests/etcd/upstream/pod.yaml is rendered with.
type upstreamPodData struct {
	Image       string
	Args        []string
	ProbeHost   string
	MetricsPort int
}

// upstreamPod renders the upstream pod for the etcd-pod configmap (JSON, like every pod the installer reads).
func (k *Component) upstreamPod() (string, error) {
	env, err := k.envVars()
	if err != nil {
		return "", err
	}
	args, err := UpstreamArgs(env, k.In.NodeIPs)
	if err != nil {
		return "", err
	}
	d := upstreamPodData{Image: k.In.Images.Image(UpstreamImage), Args: args,
		ProbeHost: loopback(k.In.NodeIP()).String(), MetricsPort: UpstreamMetricsPort}
	pod, err := operator.RenderPod("etcd/upstream/pod.yaml", d)
	if err != nil {
		return "", err
	}
	return resourceread.WritePodV1OrDie(pod), nil
}
