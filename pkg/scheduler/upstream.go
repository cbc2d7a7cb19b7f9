package scheduler

// The upstream flavor (--flavor upstream) of kube-scheduler: the same loops, revision and installer layout as the
// OpenShift flavor; only the pod of configmap kube-scheduler-pod differs. It runs the upstream kube-scheduler image
// (clusterconfig image "kube-scheduler") with flags only, kubeadm style: the revision's scheduler-kubeconfig for
// the client connection and for delegated authentication and authorization, leader election on kubeadm's lease
// kube-system/kube-scheduler, the TLS profile of the observed config.
//
// Flags rather than --config with the revision's config.yaml: that file is upstream KubeSchedulerConfiguration v1,
// but it holds its lease in openshift-kube-scheduler with OpenShift's lease timings and names its kubeconfig inside
// the file; with flags every path is a flag. Flags cannot select plugins, so the flag-only scheduler runs upstream's
// default plugins, which is the LowNodeUtilization profile (the only one a render has: the installer names none);
// any other Scheduler profile or profile customization is refused instead of being silently dropped.
//
// --kubeconfig is the one deprecated flag: kube-scheduler v1.34 has no other flag for its client connection (its
// replacement is --config), and kubeadm v1.34 passes it the same way.
//
// Left out on purpose: OpenShift's feature gates (upstream's defaults apply), unsupportedConfigOverrides arguments
// (free-form operator overrides, not part of a render), the wait-for-port init container (its job is
// --permit-address-sharing), the cert syncer and recovery controller containers.

import (
	"context"
	"fmt"
	"net/netip"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/render-static/render-static/pkg/operator"
)

// UpstreamImage is the clusterconfig image the upstream kube-scheduler pod runs.
const UpstreamImage = "kube-scheduler"

// UpstreamSecurePort is kube-scheduler's HTTPS port (healthz, metrics), as in the OpenShift pod.
const UpstreamSecurePort = 10259

// upstreamKubeconfig is scheduler-kubeconfig (api-int, system:kube-scheduler), as config.yaml of the OpenShift pod
// names it.
var upstreamKubeconfig = operator.ResourceFile("configmaps", "scheduler-kubeconfig", "kubeconfig")

// UpstreamInputs is what the upstream kube-scheduler's flags are computed from: the Scheduler "cluster" spec (the
// flags select no plugins, so only the default profile goes) and operator.UpstreamServer's inputs (the observed
// config's TLS profile, the node's IPs, whether the revision has serving-cert, the klog level).
type UpstreamInputs struct {
	Scheduler   configv1.SchedulerSpec
	Observed    map[string]interface{}
	NodeIPs     []netip.Addr
	ServingCert bool
	Verbosity   int
}

// UpstreamArgs returns the upstream kube-scheduler's arguments ("--name=value"), sorted by flag name.
func UpstreamArgs(in UpstreamInputs) ([]string, error) {
	if err := upstreamProfile(in.Scheduler); err != nil {
		return nil, err
	}
	// Only operator.UpstreamServer's flags: kube-scheduler v1.34 lists them in --help (testdata/upstream).
	var flags operator.Flags
	server := operator.UpstreamServer{Kubeconfig: upstreamKubeconfig, Lease: ComponentName, SecurePort: UpstreamSecurePort,
		NodeIPs: in.NodeIPs, Observed: in.Observed, ServingCert: in.ServingCert, Verbosity: in.Verbosity}
	if err := server.Flags(&flags); err != nil {
		return nil, err
	}
	return flags.Args(), nil
}

// upstreamProfile refuses what the flag-only scheduler cannot run: a policy (refused by both flavors), a profile
// other than LowNodeUtilization (upstream's default plugins) or a profile customization.
func upstreamProfile(spec configv1.SchedulerSpec) error {
	if _, err := Config(spec); err != nil {
		return err
	}
	switch spec.Profile {
	case "", configv1.LowNodeUtilization:
	default:
		return fmt.Errorf("scheduler profile %s: the upstream flavor's kube-scheduler runs upstream's default plugins (LowNodeUtilization) only", spec.Profile)
	}
	switch spec.ProfileCustomizations.DynamicResourceAllocation {
	case "", configv1.DRAEnablementDisabled:
	default:
		return fmt.Errorf("scheduler profile customization dynamicResourceAllocation %s: the upstream flavor's kube-scheduler runs upstream's default plugins only", spec.ProfileCustomizations.DynamicResourceAllocation)
	}
	return nil
}

// manageUpstreamPod is target-config/kube-scheduler/kube-scheduler-pod of the upstream flavor: configmap
// kube-scheduler-pod with the upstream pod.yaml, forceRedeploymentReason and version.
func (s *Component) manageUpstreamPod(ctx context.Context) error {
	obs, spec, err := s.ObservedConfig()
	if err != nil {
		return err
	}
	sched, err := s.schedulerConfig()
	if err != nil {
		return err
	}
	in := UpstreamInputs{Scheduler: sched.Spec, Observed: obs, NodeIPs: s.In.NodeIPs, Verbosity: schedulerLogLevel(spec.LogLevel)}
	if in.ServingCert, err = operator.HasServingCert(s.Cluster, TargetNamespace); err != nil {
		return err
	}
	args, err := UpstreamArgs(in)
	if err != nil {
		return err
	}
	pod, err := operator.RenderPod(ComponentName+"/upstream/pod.yaml", operator.UpstreamPodData{
		Image: s.In.Images.Image(UpstreamImage), Args: args, Port: UpstreamSecurePort, ProbeHost: s.In.NodeIP().String(),
	})
	if err != nil {
		return err
	}
	return s.ApplyPodConfigMap(ctx, TargetNamespace, "kube-scheduler-pod", pod, spec)
}
