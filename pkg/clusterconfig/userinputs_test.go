package clusterconfig

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/openshift/api/annotations"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/render-static/render-static/pkg/installconfig"
)

func loadConfig(t *testing.T, name string) *installconfig.InstallConfig {
	t.Helper()
	ic, err := installconfig.Load(filepath.Join("..", "..", name), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ic
}

// TestUserInputObjects: the seeds carry the installer's objects for mirrors and the trust bundle: an
// ImageDigestMirrorSet (with sourcePolicy) for imageDigestSources, an ImageContentSourcePolicy for
// imageContentSources, user-ca-bundle re-encoded and owned by the End User, and Proxy trustedCA only with a
// proxy or policy Always (installer pkg/asset/manifests/proxy.go).
func TestUserInputObjects(t *testing.T) {
	cases := []struct {
		config      string
		trustedCA   bool
		idms, icsp  int
		bundleCerts int
	}{
		{"testdata/installconfig/nodeinputs/disconnected.yaml", false, 3, 0, 1}, // Proxyonly, no proxy
		{"testdata/installconfig/nodeinputs/icsp-always.yaml", true, 0, 2, 1},   // Always, no proxy
		{"testdata/installconfig/good/proxy.yaml", true, 0, 0, 1},               // a proxy
		{"examples/sno/install-config.yaml", false, 0, 0, 0},                    // nothing
	}
	for _, c := range cases {
		in := &Inputs{InstallConfig: loadConfig(t, c.config)}
		objs, err := Objects(in)
		if err != nil {
			t.Fatal(err)
		}
		var idms, icsp int
		var bundle *corev1.ConfigMap
		for _, o := range objs {
			switch x := o.(type) {
			case *configv1.Proxy:
				if got := x.Spec.TrustedCA.Name == UserCABundleName; got != c.trustedCA {
					t.Errorf("%s: proxy trustedCA %q, want user-ca-bundle: %v", c.config, x.Spec.TrustedCA.Name, c.trustedCA)
				}
			case *configv1.ImageDigestMirrorSet:
				if x.Name != ImageDigestMirrorSetName {
					t.Errorf("%s: IDMS name %s", c.config, x.Name)
				}
				idms = len(x.Spec.ImageDigestMirrors)
				if p := x.Spec.ImageDigestMirrors[0].MirrorSourcePolicy; p != configv1.NeverContactSource {
					t.Errorf("%s: first entry's policy %q", c.config, p)
				}
			case *operatorv1alpha1.ImageContentSourcePolicy:
				icsp = len(x.Spec.RepositoryDigestMirrors)
			case *corev1.ConfigMap:
				if x.Namespace == "openshift-config" && x.Name == UserCABundleName {
					bundle = x
				}
			}
		}
		if idms != c.idms || icsp != c.icsp {
			t.Errorf("%s: %d IDMS entries, %d ICSP entries; want %d, %d", c.config, idms, icsp, c.idms, c.icsp)
		}
		if c.bundleCerts == 0 {
			if bundle != nil {
				t.Errorf("%s: user-ca-bundle without a trust bundle", c.config)
			}
			continue
		}
		if bundle == nil {
			t.Fatalf("%s: no user-ca-bundle", c.config)
		}
		data := bundle.Data[UserCABundleKey]
		if strings.Contains(data, "#") || strings.Count(data, "-----BEGIN CERTIFICATE-----") != c.bundleCerts || !strings.HasPrefix(data, "-----BEGIN") {
			t.Errorf("%s: user-ca-bundle is not the re-encoded PEM blocks:\n%s", c.config, data)
		}
		if bundle.Annotations[annotations.OpenShiftComponent] != "End User" {
			t.Errorf("%s: user-ca-bundle annotations %v", c.config, bundle.Annotations)
		}
	}
}

// TestCapabilitiesIngress: the default IngressController is exported unless capabilities disable Ingress
// (baselineCapabilitySet None without Ingress among additionalEnabledCapabilities).
func TestCapabilitiesIngress(t *testing.T) {
	for _, c := range []struct {
		caps *installconfig.Capabilities
		want bool
	}{
		{nil, true},
		{&installconfig.Capabilities{BaselineCapabilitySet: "vCurrent"}, true},
		{&installconfig.Capabilities{BaselineCapabilitySet: "None"}, false},
		{&installconfig.Capabilities{BaselineCapabilitySet: "None", AdditionalEnabledCapabilities: []string{"Ingress"}}, true},
	} {
		ic := loadConfig(t, "examples/sno/install-config.yaml")
		ic.Capabilities = c.caps
		objs, err := Objects(&Inputs{InstallConfig: ic})
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for _, o := range objs {
			if x, ok := o.(*operatorv1.IngressController); ok && x.Name == "default" {
				got = true
			}
		}
		if got != c.want {
			t.Errorf("capabilities %+v: default IngressController exported %v, want %v", c.caps, got, c.want)
		}
	}
}

// TestTopologiesByWorkers: the Infrastructure's topologies, the Scheduler and the Ingress placement as the
// installer makes them for one control-plane node on platform none (pkg/asset/manifests topologies.go,
// scheduler.go, ingress.go, and the installer's own cases "none-platform single node with 0 or 1 day-1 workers" and
// "none-platform single-node with multiple day-1 workers"): the infrastructure follows the control plane with no
// worker, is SingleReplica with one and HighlyAvailable with more; the control plane runs workloads only without
// workers; ingress is placed on the control plane either way, with the default IngressController pinned there.
func TestTopologiesByWorkers(t *testing.T) {
	for _, c := range []struct {
		replicas       *int64
		infrastructure configv1.TopologyMode
		schedulable    bool
	}{
		{new(int64), configv1.SingleReplicaTopologyMode, true},
		{replicas(1), configv1.SingleReplicaTopologyMode, false},
		{replicas(2), configv1.HighlyAvailableTopologyMode, false},
		{nil, configv1.HighlyAvailableTopologyMode, false}, // the installer's default pool of 3
	} {
		in := &Inputs{InstallConfig: loadConfig(t, "examples/sno/install-config.yaml")}
		in.InstallConfig.Compute[0].Replicas = c.replicas
		objs, err := Objects(in)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, o := range objs {
			switch x := o.(type) {
			case *configv1.Infrastructure:
				seen++
				if x.Status.ControlPlaneTopology != configv1.SingleReplicaTopologyMode || x.Status.InfrastructureTopology != c.infrastructure {
					t.Errorf("replicas %v: topologies %s/%s, want SingleReplica/%s", c.replicas, x.Status.ControlPlaneTopology, x.Status.InfrastructureTopology, c.infrastructure)
				}
			case *configv1.Scheduler:
				seen++
				if x.Spec.MastersSchedulable != c.schedulable {
					t.Errorf("replicas %v: mastersSchedulable %v", c.replicas, x.Spec.MastersSchedulable)
				}
			case *configv1.Ingress:
				seen++
				if x.Status.DefaultPlacement != configv1.DefaultPlacementControlPlane {
					t.Errorf("replicas %v: ingress defaultPlacement %q", c.replicas, x.Status.DefaultPlacement)
				}
			case *operatorv1.IngressController:
				seen++
				if *x.Spec.Replicas != 1 || x.Spec.NodePlacement.NodeSelector.MatchLabels["node-role.kubernetes.io/master"] != "" {
					t.Errorf("replicas %v: default IngressController %+v", c.replicas, x.Spec)
				}
			}
		}
		if seen != 4 {
			t.Errorf("replicas %v: %d of Infrastructure, Scheduler, Ingress, IngressController", c.replicas, seen)
		}
	}
}

func replicas(n int64) *int64 { return &n }
