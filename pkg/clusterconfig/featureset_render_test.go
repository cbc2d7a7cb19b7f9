package clusterconfig_test

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/pkg/node"
)

const (
	tpOnly    = "MutatingAdmissionPolicy"       // enabled in TechPreviewNoUpgrade only (pinned openshift/api)
	defaultOn = "OpenShiftPodSecurityAdmission" // enabled in Default; turned off by the custom render below
	runtimeGV = "admissionregistration.k8s.io/v1beta1=true"
)

// renderWith renders the conformance install-config with extra top-level lines.
func renderWith(t *testing.T, extra string) *rendertest.Render {
	t.Helper()
	if extra == "" {
		return rendertest.SNOFor(t)
	}
	base, err := os.ReadFile(rendertest.InstallConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "install-config.yaml")
	if err := os.WriteFile(p, append(base, []byte("\n"+extra)...), 0600); err != nil {
		t.Fatal(err)
	}
	r, err := rendertest.Get(p, rendertest.NodeIP)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

func yamlFile(t *testing.T, r *rendertest.Render, p string) map[string]interface{} {
	t.Helper()
	f, ok := r.File(p)
	if !ok {
		t.Fatalf("the render has no %s", p)
	}
	var v map[string]interface{}
	if err := yaml.Unmarshal(f.Contents, &v); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return v
}

func strList(v interface{}) []string {
	var out []string
	l, _ := v.([]interface{})
	for _, x := range l {
		out = append(out, x.(string))
	}
	return out
}

// exported is the FeatureGate manifest of the render, and the feature-set annotations of the exported
// CRDs of kube-apiserver's operator resource.
func exported(t *testing.T, r *rendertest.Render) (fg *configv1.FeatureGate, crdSets []string) {
	t.Helper()
	for _, f := range r.Tree.Files() {
		if !strings.HasPrefix(f.Path, node.ManifestsDir+"/") {
			continue
		}
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(f.Contents, &m); err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		switch {
		case m.Kind == "FeatureGate":
			fg = &configv1.FeatureGate{}
			if err := yaml.UnmarshalStrict(f.Contents, fg); err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
		case m.Kind == "CustomResourceDefinition" && m.Metadata.Name == "kubeapiservers.operator.openshift.io":
			crdSets = append(crdSets, m.Metadata.Annotations["release.openshift.io/feature-set"])
		}
	}
	if fg == nil || fg.Name != "cluster" {
		t.Fatalf("no FeatureGate cluster among the exported manifests")
	}
	return fg, crdSets
}

// gateArgs are the "Name=bool" gates of every component of a render: kube-apiserver's and kube-controller-
// manager's observed config, kube-controller-manager's and kube-scheduler's --feature-gates flags.
func gateArgs(t *testing.T, r *rendertest.Render) map[string][]string {
	t.Helper()
	kas := yamlFile(t, r, "/etc/kubernetes/static-pod-resources/kube-apiserver-pod-1/configmaps/config/config.yaml")
	kcm := yamlFile(t, r, "/etc/kubernetes/static-pod-resources/kube-controller-manager-pod-1/configmaps/config/config.yaml")
	out := map[string][]string{
		"kube-apiserver config":          strList(kas["apiServerArguments"].(map[string]interface{})["feature-gates"]),
		"kube-controller-manager config": strList(kcm["extendedArguments"].(map[string]interface{})["feature-gates"]),
	}
	pod, err := r.Pod("kube-controller-manager-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range strings.Fields(pod.Spec.Containers[0].Args[0]) {
		if g, ok := strings.CutPrefix(w, "--feature-gates="); ok {
			out["kube-controller-manager flags"] = append(out["kube-controller-manager flags"], g)
		}
	}
	pod, err = r.Pod("kube-scheduler-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range pod.Spec.Containers[0].Args {
		if g, ok := strings.CutPrefix(a, "--feature-gates="); ok {
			out["kube-scheduler flag"] = strings.Split(g, ",")
		}
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}

// TestFeatureSets renders Default, TechPreviewNoUpgrade and CustomNoUpgrade: the exported FeatureGate carries
// the set and its gates for the payload version, every component's gates are exactly that object's, a
// TechPreview-only gate (and the API versions it needs, in kube-apiserver's runtime-config) is on in
// TechPreviewNoUpgrade and off in Default, the custom list turns gates on and off, and the exported CRD variants
// follow the same feature set.
func TestFeatureSets(t *testing.T) {
	for _, c := range []struct {
		name, extra      string
		set              configv1.FeatureSet
		on, off          []string
		runtimeConfig    bool
		podSecurityLevel string
		crdSet           string
	}{
		{name: "Default", on: []string{defaultOn}, off: []string{tpOnly}, podSecurityLevel: "restricted", crdSet: "Default"},
		{name: "TechPreviewNoUpgrade", extra: "featureSet: TechPreviewNoUpgrade\n", set: configv1.TechPreviewNoUpgrade,
			on: []string{tpOnly, defaultOn}, runtimeConfig: true, podSecurityLevel: "restricted", crdSet: "TechPreviewNoUpgrade"},
		{name: "CustomNoUpgrade", set: configv1.CustomNoUpgrade,
			extra: "featureSet: CustomNoUpgrade\nfeatureGates:\n- " + tpOnly + "=true\n- " + defaultOn + "=false\n",
			on:    []string{tpOnly}, off: []string{defaultOn}, runtimeConfig: true, podSecurityLevel: "privileged", crdSet: "CustomNoUpgrade"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := renderWith(t, c.extra)
			fg, crdSets := exported(t, r)
			if fg.Spec.FeatureSet != c.set {
				t.Errorf("spec.featureSet %q, want %q", fg.Spec.FeatureSet, c.set)
			}
			if c.set == configv1.CustomNoUpgrade && (fg.Spec.CustomNoUpgrade == nil ||
				!slices.Equal(fg.Spec.CustomNoUpgrade.Enabled, []configv1.FeatureGateName{tpOnly}) ||
				!slices.Equal(fg.Spec.CustomNoUpgrade.Disabled, []configv1.FeatureGateName{defaultOn})) {
				t.Errorf("spec.customNoUpgrade %+v", fg.Spec.CustomNoUpgrade)
			}
			if len(fg.Status.FeatureGates) != 1 || fg.Status.FeatureGates[0].Version != r.Inputs.PayloadVersion() {
				t.Fatalf("status.featureGates %+v, want one entry for %s", fg.Status.FeatureGates, r.Inputs.PayloadVersion())
			}
			var want []string
			for _, a := range fg.Status.FeatureGates[0].Enabled {
				want = append(want, string(a.Name)+"=true")
			}
			for _, a := range fg.Status.FeatureGates[0].Disabled {
				want = append(want, string(a.Name)+"=false")
			}
			sort.Strings(want)
			for _, g := range c.on {
				if !slices.Contains(want, g+"=true") {
					t.Errorf("FeatureGate: %s is not enabled", g)
				}
			}
			for _, g := range c.off {
				if !slices.Contains(want, g+"=false") {
					t.Errorf("FeatureGate: %s is not disabled", g)
				}
			}
			for where, got := range gateArgs(t, r) {
				if !slices.Equal(got, want) {
					t.Errorf("%s: %d gates differ from the FeatureGate's %d", where, len(got), len(want))
				}
			}
			kas := yamlFile(t, r, "/etc/kubernetes/static-pod-resources/kube-apiserver-pod-1/configmaps/config/config.yaml")
			args := kas["apiServerArguments"].(map[string]interface{})
			if rc := strList(args["runtime-config"]); slices.Contains(rc, runtimeGV) != c.runtimeConfig {
				t.Errorf("runtime-config %v: %s wanted %v", rc, runtimeGV, c.runtimeConfig)
			}
			ps := kas["admission"].(map[string]interface{})["pluginConfig"].(map[string]interface{})["PodSecurity"].(map[string]interface{})
			if lvl := ps["configuration"].(map[string]interface{})["defaults"].(map[string]interface{})["enforce"]; lvl != c.podSecurityLevel {
				t.Errorf("PodSecurity enforce %v, want %s (gate %s)", lvl, c.podSecurityLevel, defaultOn)
			}
			if !slices.Equal(crdSets, []string{c.crdSet}) {
				t.Errorf("exported KubeAPIServer CRD for feature sets %v, want %s", crdSets, c.crdSet)
			}
		})
	}
}
