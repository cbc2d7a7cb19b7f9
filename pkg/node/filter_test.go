package node

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/emulate"
	"github.com/render-static/render-static/pkg/export"
)

func manifest(group, version, kind, ns, name string, obj map[string]any) export.Manifest {
	return export.Manifest{File: kind + "_" + ns + "_" + name, GVK: schema.GroupVersionKind{Group: group, Version: version, Kind: kind},
		Namespace: ns, Name: name, Object: obj}
}

// TestFilterExport: the objects that would act, that live components own, that intercept requests to servers
// that do not run, or that only record the render are dropped; configuration, operator resources and plain
// aggregated-API registrations stay.
func TestFilterExport(t *testing.T) {
	list := func(ms ...export.Manifest) []export.Manifest { return ms }
	// Each rule with the objects it drops; "" with the objects that stay.
	cases := []struct {
		rule string
		ms   []export.Manifest
	}{
		{"pods", list(manifest("", "v1", "Pod", "openshift-kube-apiserver", "installer-1-sno-0", nil))},
		{"nodes", list(manifest("", "v1", "Node", "", "sno-0", nil))},
		{"leases", list(manifest("coordination.k8s.io", "v1", "Lease", "kube-system", "kube-controller-manager", nil))},
		{"events", list(manifest("", "v1", "Event", "default", "e", nil), manifest("events.k8s.io", "v1", "Event", "default", "e2", nil))},
		{"certificate-signing-requests", list(
			manifest("certificates.k8s.io", "v1", "CertificateSigningRequest", "", "render-static-node-client-sno-0", nil))},
		{"admission-webhooks", list(
			manifest("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "", "v", nil),
			manifest("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "", "m", nil))},
		{"aggregated-apis", list(manifest("apiregistration.k8s.io", "v1", "APIService", "", "v1.apps.openshift.io",
			map[string]any{"spec": map[string]any{"service": map[string]any{"name": "api"}}}))},
		{"monitoring", list(
			manifest("monitoring.coreos.com", "v1", "ServiceMonitor", "openshift-kube-apiserver", "kube-apiserver", nil),
			manifest("monitoring.coreos.com", "v1", "PrometheusRule", "openshift-kube-apiserver", "rules", nil))},
		{"", list(
			manifest("apiregistration.k8s.io", "v1", "APIService", "", "v1.local", map[string]any{"spec": map[string]any{}}),
			manifest("", "v1", "ConfigMap", "openshift-config", "x", nil), manifest("", "v1", "Secret", "openshift-config", "pull-secret", nil),
			manifest("", "v1", "Namespace", "", "openshift-config", nil), manifest("operator.openshift.io", "v1", "KubeAPIServer", "", "cluster", nil),
			manifest("config.openshift.io", "v1", "Infrastructure", "", "cluster", nil), manifest("rbac.authorization.k8s.io", "v1", "ClusterRole", "", "r", nil))},
	}
	var in []export.Manifest
	var wantKept []string
	var wantDropped []Dropped
	for _, c := range cases {
		for _, m := range c.ms {
			in = append(in, m)
			if c.rule == "" {
				wantKept = append(wantKept, m.File)
			} else {
				wantDropped = append(wantDropped, Dropped{File: m.File, Rule: c.rule})
			}
		}
	}
	kept, dropped := FilterExport(in)
	var keptFiles []string
	for _, m := range kept {
		keptFiles = append(keptFiles, m.File)
	}
	if !slices.Equal(keptFiles, wantKept) {
		t.Errorf("kept %v, want %v", keptFiles, wantKept)
	}
	if !slices.Equal(dropped, wantDropped) {
		t.Errorf("dropped %v, want %v", dropped, wantDropped)
	}
	for _, r := range ExportRules {
		if r.Name == "" || r.Why == "" {
			t.Errorf("rule %+v has no name or reason", r)
		}
	}
}

// TestExportOfNodeSide: the node side's own records (the CSRs) are not exported, its RBAC is (created early,
// 02_), and every namespace an exported object lives in is exported too, but not kube-apiserver's own.
func TestExportOfNodeSide(t *testing.T) {
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	f.converge(t)
	files := map[string]bool{}
	namespaces := map[string]bool{}
	for _, m := range f.exported(t) {
		files[m.File] = true
		if m.GVK.Kind == "CertificateSigningRequest" {
			t.Errorf("%s is exported", m.File)
		}
		if m.GVK.Kind == "Namespace" {
			namespaces[m.Name] = true
		}
	}
	for _, want := range []string{
		"02_cluster_clusterrole.rbac.authorization.k8s.io_render-static:node-csr-approver.yaml",
		"02_cluster_clusterrolebinding.rbac.authorization.k8s.io_render-static:node-csr-approver.yaml",
		"00_cluster_namespace_openshift-config.yaml",
		"00_cluster_namespace_openshift-ingress-operator.yaml",
		"00_cluster_namespace_" + SignerNamespace + ".yaml",
	} {
		if !files[want] {
			t.Errorf("%s is not exported", want)
		}
	}
	for _, m := range f.exported(t) {
		if m.Namespace != "" && !namespaces[m.Namespace] && !emulate.APIServerNamespaces[m.Namespace] {
			t.Errorf("%s lives in namespace %s, which is not exported", m.File, m.Namespace)
		}
	}
	if namespaces["kube-system"] {
		t.Error("kube-system is exported; kube-apiserver creates it")
	}

	// A namespace a component created itself, with its labels, is left as it is.
	g := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-config", Labels: map[string]string{"openshift.io/run-level": "0"}}}
	if _, err := g.c.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.converge(t)
	got, err := g.c.Kube.CoreV1().Namespaces().Get(context.Background(), "openshift-config", metav1.GetOptions{})
	if err != nil || got.Labels["openshift.io/run-level"] != "0" || got.Annotations["render-static.io/created-by"] != "" {
		t.Errorf("a component's namespace was changed: %+v %v", got, err)
	}
}

// TestStatusPatches: custom resources with a status get a merge patch of what the render set, built-in objects
// and statuses nobody set get none.
func TestStatusPatches(t *testing.T) {
	f := newFixture(t, "testdata/installconfig/good/dualstack.yaml", "", true)
	f.converge(t)
	patches, err := StatusPatches(f.exported(t))
	if err != nil {
		t.Fatal(err)
	}
	infra := patches["05_cluster_infrastructure.config.openshift.io_cluster.yaml"]
	var p struct {
		Status configv1.InfrastructureStatus `json:"status"`
	}
	if err := json.Unmarshal(infra, &p); err != nil {
		t.Fatalf("infrastructure status patch: %v\n%s", err, infra)
	}
	if p.Status.ControlPlaneTopology != configv1.SingleReplicaTopologyMode || p.Status.InfrastructureTopology != configv1.SingleReplicaTopologyMode ||
		p.Status.APIServerInternalURL != "https://api-int.dual.example.com:6443" {
		t.Errorf("infrastructure status patch: %s", infra)
	}
	for file, patch := range patches {
		if strings.Contains(file, "_configmap_") || strings.Contains(file, "_secret_") || strings.Contains(file, "_namespace_") {
			t.Errorf("a built-in object gets a status patch: %s", file)
		}
		if strings.Contains(string(patch), `""`) || strings.Contains(string(patch), "null") {
			t.Errorf("%s: the patch carries unset values: %s", file, patch)
		}
	}
	if _, ok := patches["05_openshift-ingress-operator_ingresscontroller.operator.openshift.io_default.yaml"]; ok {
		t.Error("the IngressController's unset status gets a patch")
	}
}

// TestSelfDescription: the cluster describes itself as a single node (seeds 003 and 004): Infrastructure
// topologies SingleReplica, masters schedulable, and the default IngressController with one replica pinned to
// the master pool, unless the Ingress capability is off.
func TestSelfDescription(t *testing.T) {
	in := testInputs(t, "examples/sno/install-config.yaml", "192.168.126.10")
	objs, err := clusterconfig.Objects(in)
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	for _, o := range objs {
		switch x := o.(type) {
		case *configv1.Infrastructure:
			seen++
			if x.Status.ControlPlaneTopology != configv1.SingleReplicaTopologyMode || x.Status.InfrastructureTopology != configv1.SingleReplicaTopologyMode {
				t.Errorf("infrastructure topologies %s/%s", x.Status.ControlPlaneTopology, x.Status.InfrastructureTopology)
			}
		case *configv1.Scheduler:
			seen++
			if !x.Spec.MastersSchedulable {
				t.Error("masters are not schedulable")
			}
		case *operatorv1.IngressController:
			seen++
			if x.Namespace != "openshift-ingress-operator" || x.Name != "default" || x.Spec.Replicas == nil || *x.Spec.Replicas != 1 ||
				x.Spec.NodePlacement == nil || x.Spec.NodePlacement.NodeSelector == nil {
				t.Fatalf("ingress controller %+v", x)
			}
			if sel := x.Spec.NodePlacement.NodeSelector.MatchLabels; len(sel) != 1 || sel["node-role.kubernetes.io/master"] != "" {
				t.Errorf("ingress controller node selector %v", sel)
			}
			if _, ok := x.Spec.NodePlacement.NodeSelector.MatchLabels["node-role.kubernetes.io/master"]; !ok {
				t.Error("ingress controller not pinned to the master pool")
			}
		}
	}
	if seen != 3 {
		t.Errorf("found %d of Infrastructure, Scheduler, IngressController", seen)
	}
	// The node registers in the pool the IngressController is pinned to.
	if !slices.Contains(NodeLabels(in), "node-role.kubernetes.io/master") {
		t.Error("the kubelet does not register the node as master")
	}

	// dualstack.yaml has baseline None with Ingress added; without Ingress there is no IngressController.
	in = testInputs(t, "testdata/installconfig/good/dualstack.yaml", "")
	in.InstallConfig.Capabilities.AdditionalEnabledCapabilities = []string{"NodeTuning"}
	objs, err = clusterconfig.Objects(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if _, ok := o.(*operatorv1.IngressController); ok {
			t.Error("an IngressController without the Ingress capability")
		}
	}
}

// TestNoStatusPatchWithoutStatusSubresource: the Network CRD has no status subresource, so its status goes with
// the create and a /status patch would be NotFound on the live cluster; the Infrastructure's still gets one.
func TestNoStatusPatchWithoutStatusSubresource(t *testing.T) {
	f := newFixture(t, "testdata/installconfig/good/dualstack.yaml", "", true)
	f.converge(t)
	ms := f.exported(t)
	crds, err := export.CRDs(ms, "")
	if err != nil {
		t.Fatal(err)
	}
	patches, err := StatusPatches(append(crds, ms...))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := patches["05_cluster_network.config.openshift.io_cluster.yaml"]; ok {
		t.Error("the Network gets a status patch although its CRD has no status subresource")
	}
	if _, ok := patches["05_cluster_infrastructure.config.openshift.io_cluster.yaml"]; !ok {
		t.Error("the Infrastructure lost its status patch")
	}
}
