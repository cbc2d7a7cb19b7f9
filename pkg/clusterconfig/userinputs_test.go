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
