package etcd

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/tlsutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/loops"
)

// EnvVar is one variable of the etcd containers' environment.
type EnvVar struct{ Name, Value string }

// EnvVars is the etcd environment, sorted by name.
type EnvVars []EnvVar

// Get returns a variable's value and whether it is set.
func (e EnvVars) Get(name string) (string, bool) {
	for _, v := range e {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// fixedEnv are the variables every etcd gets whatever the cluster.
var fixedEnv = map[string]string{
	"ETCD_DATA_DIR":                       "/var/lib/etcd",
	"ETCD_INITIAL_CLUSTER_STATE":          "existing",
	"ETCD_ENABLE_PPROF":                   "true",
	"ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL": "5s",
	"ETCD_SOCKET_REUSE_ADDRESS":           "true",
	"ETCD_WARNING_APPLY_DURATION":         "200ms",
}

// QuotaGiB is the backend quota (the operator's default).
const QuotaGiB = 8

// CertDirInPod is where the etcd containers mount the cert directory.
const CertDirInPod = "/etc/kubernetes/static-pod-certs"

// EnvSafe is a node name as part of a variable name: '-' and '.' become '_' (the installer's NODE_ENVVAR_NAME).
func EnvSafe(node string) string { return strings.NewReplacer("-", "_", ".", "_").Replace(node) }

// escapedIP is an IP as the host of a URL: IPv6 in brackets.
func escapedIP(ip netip.Addr) string {
	if ip.Is6() {
		return "[" + ip.String() + "]"
	}
	return ip.String()
}

// envVarLoop computes the environment of the etcd containers the way the operator's env-var controller does, from
// the endpoints configmap, the observed config (cipher suites, TLS version), the install-config's control-plane
// replicas and architecture (openshift-etcd/cluster-config-v1), the infrastructure, and the node. It writes
// nothing: the scripts, restore-pod and pod loops read what it computed.
//
// Every pass runs it again, mostly with nothing changed: what it computed is kept (loops.Memo) while the versions
// of everything computeEnv reads are those of a run that succeeded: etcd-endpoints and cluster-config-v1, the
// infrastructure, and the operator resource (its resourceVersion, which changes with every write of its spec or
// status); the rest are the render's inputs, which do not change, and it reads no clock.
func (k *Component) envVarLoop() loops.Loop {
	reads := []loops.Object{loops.ConfigMap(TargetNamespace, EndpointsName), loops.ConfigMap(TargetNamespace, "cluster-config-v1"),
		{Resource: "infrastructures.config.openshift.io", Name: "cluster"}}
	var memo loops.Memo
	return loops.Loop{Name: "env-var/etcd", Sync: func(ctx context.Context) error {
		versions, ok := k.envVersions(reads)
		if ok && memo.Same(versions) {
			return nil
		}
		memo.Forget()
		env, err := k.computeEnv()
		k.mu.Lock()
		defer k.mu.Unlock()
		if err != nil {
			k.env = nil
			return err
		}
		k.env = env
		if ok {
			memo.Keep(versions)
		}
		return nil
	}}
}

// envVersions are the versions of what computeEnv reads: reads, then the operator resource's resourceVersion;
// false when that is not a number (nothing is kept then).
func (k *Component) envVersions(reads []loops.Object) ([]int, bool) {
	_, _, rv, err := k.Op.GetStaticPodOperatorState()
	if err != nil {
		return nil, false
	}
	n, err := strconv.Atoi(rv)
	if err != nil {
		return nil, false
	}
	return append(k.Cluster.Versions(reads...), n), true
}

func (k *Component) computeEnv() (EnvVars, error) {
	vars := map[string]string{}
	for n, v := range fixedEnv {
		vars[n] = v
	}
	vars["ETCD_QUOTA_BACKEND_BYTES"] = strconv.FormatInt(QuotaGiB<<30, 10)

	// Endpoints: every member of etcd-endpoints.
	kube := k.Cluster.KubeInformers.InformersFor(TargetNamespace).Core().V1()
	ep, err := kube.ConfigMaps().Lister().ConfigMaps(TargetNamespace).Get(EndpointsName)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", TargetNamespace, EndpointsName, err)
	}
	var urls []string
	for key, v := range ep.Data {
		ip, err := netip.ParseAddr(v)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %s: %q is not an IP address", TargetNamespace, EndpointsName, key, v)
		}
		urls = append(urls, "https://"+net.JoinHostPort(ip.String(), "2379"))
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("%s/%s lists no member", TargetNamespace, EndpointsName)
	}
	sort.Strings(urls)
	vars["ALL_ETCD_ENDPOINTS"] = strings.Join(urls, ",")
	vars["ETCDCTL_ENDPOINTS"] = strings.Join(urls, ",")
	vars["ETCDCTL_CACERT"] = CertDirInPod + "/configmaps/" + AllBundlesName + "/server-ca-bundle.crt"
	vars["ETCDCTL_CERT"] = CertDirInPod + "/secrets/" + AllCertsName + "/etcd-peer-NODE_NAME.crt"
	vars["ETCDCTL_KEY"] = CertDirInPod + "/secrets/" + AllCertsName + "/etcd-peer-NODE_NAME.key"
	vars["ETCD_IMAGE"] = k.In.Images.Image("etcd")

	// Heartbeat and election timeout: slower on the platforms whose disks are known to be slow.
	infra, err := k.Cluster.ConfigInformers.Config().V1().Infrastructures().Lister().Get("cluster")
	if err != nil {
		return nil, fmt.Errorf("infrastructure.config.openshift.io/cluster: %w", err)
	}
	vars["ETCD_HEARTBEAT_INTERVAL"], vars["ETCD_ELECTION_TIMEOUT"] = "100", "1000"
	if ps := infra.Status.PlatformStatus; ps != nil && (ps.Azure != nil || (ps.IBMCloud != nil && ps.IBMCloud.ProviderType == "VPC")) {
		vars["ETCD_HEARTBEAT_INTERVAL"], vars["ETCD_ELECTION_TIMEOUT"] = "500", "2500"
	}

	// TLS: the observed profile, its cipher suites filtered to those etcd knows.
	suites, minVersion, err := k.observedTLS()
	if err != nil {
		return nil, err
	}
	vars["ETCD_TLS_MIN_VERSION"] = minVersion
	if minVersion != "TLS1.3" { // etcd refuses cipher suites when only TLS 1.3 is allowed
		if len(suites) == 0 {
			return nil, fmt.Errorf("observed config: no cipher suite etcd supports")
		}
		vars["ETCD_CIPHER_SUITES"] = strings.Join(suites, ",")
	}

	// The install-config, as the operator reads it from its own namespace.
	cms := kube.ConfigMaps().Lister().ConfigMaps(TargetNamespace)
	replicas, err := controlPlaneReplicas(cms)
	if err != nil {
		return nil, err
	}
	vars["ETCD_MAX_LEARNERS"] = strconv.Itoa(replicas)
	ic, err := installConfig(cms)
	if err != nil {
		return nil, err
	}
	if arch, _, _ := unstructured.NestedString(ic, "controlPlane", "architecture"); arch == "arm64" || arch == "s390x" {
		vars["ETCD_UNSUPPORTED_ARCH"] = arch
	}

	// The node: its preferred IP (the primary one), as URL host.
	_, status, _, err := k.Op.GetStaticPodOperatorState()
	if err != nil {
		return nil, err
	}
	if len(status.NodeStatuses) == 0 {
		return nil, fmt.Errorf("etcds.operator.openshift.io/cluster has no nodeStatuses")
	}
	for _, ns := range status.NodeStatuses {
		if ns.NodeName != k.In.NodeName {
			return nil, fmt.Errorf("node %s has no known IP", ns.NodeName)
		}
		safe := EnvSafe(ns.NodeName)
		host := escapedIP(k.In.NodeIP())
		vars["NODE_"+safe+"_IP"] = host
		vars["NODE_"+safe+"_ETCD_URL_HOST"] = host
		vars["NODE_"+safe+"_ETCD_NAME"] = ns.NodeName
	}

	out := make(EnvVars, 0, len(vars))
	for n, v := range vars {
		out = append(out, EnvVar{Name: n, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// observedTLS reads servingInfo.cipherSuites (keeping the ones etcd supports, in order, as etcd's own
// tlsutil.GetCipherSuite decides) and servingInfo.minTLSVersion (as etcd spells it) from the operator's observed
// config.
func (k *Component) observedTLS() ([]string, string, error) {
	spec, _, _, err := k.Op.GetOperatorState()
	if err != nil {
		return nil, "", err
	}
	if len(spec.ObservedConfig.Raw) == 0 {
		return nil, "", fmt.Errorf("no observed config yet (config-observer/etcd)")
	}
	var observed map[string]interface{}
	if err := yaml.Unmarshal(spec.ObservedConfig.Raw, &observed); err != nil {
		return nil, "", fmt.Errorf("observed config: %w", err)
	}
	all, found, err := unstructured.NestedStringSlice(observed, "servingInfo", "cipherSuites")
	if err != nil || !found {
		return nil, "", fmt.Errorf("observed config has no servingInfo.cipherSuites yet")
	}
	var suites []string
	for _, s := range all {
		if _, ok := tlsutil.GetCipherSuite(s); ok {
			suites = append(suites, s)
		}
	}
	v, found, err := unstructured.NestedString(observed, "servingInfo", "minTLSVersion")
	if err != nil || !found {
		return nil, "", fmt.Errorf("observed config has no servingInfo.minTLSVersion yet")
	}
	// etcd knows TLS1.2 and TLS1.3 only: an older minimum (the Old profile) is raised to TLS1.2, the oldest etcd
	// speaks, rather than making etcd refuse to start.
	min, ok := map[string]string{"VersionTLS10": "TLS1.2", "VersionTLS11": "TLS1.2", "VersionTLS12": "TLS1.2", "VersionTLS13": "TLS1.3"}[v]
	if !ok {
		return nil, "", fmt.Errorf("observed config: unknown minTLSVersion %q", v)
	}
	return suites, min, nil
}
