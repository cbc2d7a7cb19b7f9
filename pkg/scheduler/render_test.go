package scheduler_test

import (
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/pkg/scheduler"
)

const (
	component = "kube-scheduler"
	podFile   = "kube-scheduler-pod.yaml"
	revDir    = "/etc/kubernetes/static-pod-resources/kube-scheduler-pod-1"
	kasCerts  = "/etc/kubernetes/static-pod-resources/kube-apiserver-certs"
)

func sno(t *testing.T) *rendertest.Render {
	t.Helper()
	return rendertest.SNOFor(t)
}

// TestRevisionOne: exactly revision 1 of the kube-scheduler pod.
func TestRevisionOne(t *testing.T) {
	r := sno(t)
	if rev := r.Revisions[component]; rev != 1 {
		t.Errorf("latestAvailableRevision %d, want 1", rev)
	}
	statuses, err := r.RevisionStatuses(scheduler.TargetNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 1 || statuses[0] != "revision-status-1" {
		t.Errorf("revision status configmaps %v, want [revision-status-1]", statuses)
	}
	pod, err := r.Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "openshift-kube-scheduler" || pod.Labels["revision"] != "1" {
		t.Errorf("pod %s revision %q, want openshift-kube-scheduler at revision 1", pod.Name, pod.Labels["revision"])
	}
}

// TestConformance compares the pod, the config files and the file list (paths and modes) with the operator's
// reference output; only documented adaptations may differ, and every adaptation must still be needed.
func TestConformance(t *testing.T) {
	rendertest.CheckConformance(t, sno(t), component)
}

// TestFeatureGatesArgument: the scheduler's fifth argument is --feature-gates with every gate of the Default
// feature set of the pinned openshift/api, sorted by name, as in the reference (whose gates differ by version).
func TestFeatureGatesArgument(t *testing.T) {
	r := sno(t)
	var want struct {
		Spec struct {
			Containers []struct {
				Args []string `json:"args"`
			} `json:"containers"`
		} `json:"spec"`
	}
	pod := r.PodAndExpected(t, podFile, &want)
	const i = 4
	if !strings.HasPrefix(want.Spec.Containers[0].Args[i], "--feature-gates=") {
		t.Fatalf("the reference's argument %d is %q", i, want.Spec.Containers[0].Args[i])
	}
	got := pod.Spec.Containers[0].Args[i]
	enabled, disabled := rendertest.FeatureGates(t, r)
	gates := strings.Split(strings.TrimPrefix(got, "--feature-gates="), ",")
	if !sort.StringsAreSorted(gates) || len(gates) != len(enabled)+len(disabled) {
		t.Errorf("argument %d is not the %d gates of the cluster sorted by name: %s", i, len(enabled)+len(disabled), got)
	}
	for value, names := range map[string][]configv1.FeatureGateName{"true": enabled, "false": disabled} {
		for _, g := range names {
			if !slices.Contains(gates, string(g)+"="+value) {
				t.Errorf("argument %d lacks %s=%s: %s", i, g, value, got)
			}
		}
	}
	if got != scheduler.FeatureGatesArg(enabled, disabled) {
		t.Errorf("FeatureGatesArg disagrees with the pod")
	}
}

// TestKubeconfig: scheduler-kubeconfig reaches https://api-int.<domain>:6443, verifies kube-apiserver's internal
// load-balancer certificate with serviceaccount-ca, and authenticates as system:kube-scheduler with a certificate
// kube-apiserver's client CA accepts.
func TestKubeconfig(t *testing.T) {
	r := sno(t)
	domain := r.Inputs.InstallConfig.ClusterDomain()
	err := r.CheckKubeconfig(rendertest.KubeconfigCheck{
		PodFile: podFile, Container: "kube-scheduler",
		Path:   "/etc/kubernetes/static-pod-resources/configmaps/scheduler-kubeconfig/kubeconfig",
		Server: "https://api-int." + domain + ":6443", User: "system:kube-scheduler",
		ServerName: "api-int." + domain, ServingCertFile: kasCerts + "/secrets/internal-loadbalancer-serving-certkey/tls.crt",
		ClientCAFile: kasCerts + "/configmaps/client-ca/ca-bundle.crt",
	})
	if err != nil {
		t.Error(err)
	}
	// config.yaml's clientConnection uses the same kubeconfig.
	f, ok := r.File(revDir + "/configmaps/config/config.yaml")
	if !ok {
		t.Fatal("no config.yaml")
	}
	if !strings.Contains(string(f.Contents), `"kubeconfig":"/etc/kubernetes/static-pod-resources/configmaps/scheduler-kubeconfig/kubeconfig"`) {
		t.Errorf("config.yaml does not use scheduler-kubeconfig: %s", f.Contents)
	}
}

// TestConfigProfiles: config.yaml for each Scheduler profile. The default profile is byte for byte the reference;
// the others change scoring as documented; a policy or an unknown profile is refused.
func TestConfigProfiles(t *testing.T) {
	want, err := os.ReadFile(path.Join(rendertest.ExpectedDir(), "rootfs", revDir, "configmaps/config/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []configv1.SchedulerProfile{"", configv1.LowNodeUtilization} {
		got, err := scheduler.Config(configv1.SchedulerSpec{Profile: p, MastersSchedulable: true})
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(got)) != strings.TrimSpace(string(want)) {
			t.Errorf("profile %q:\n got %s\nwant %s", p, got, want)
		}
	}
	cases := []struct {
		spec configv1.SchedulerSpec
		want []string // substrings of config.yaml
	}{
		{configv1.SchedulerSpec{Profile: configv1.HighNodeUtilization}, []string{`"type":"MostAllocated"`, `"disabled":[{"name":"NodeResourcesBalancedAllocation"}]`, `"leaseDuration":"137s"`}},
		{configv1.SchedulerSpec{Profile: configv1.NoScoring}, []string{`"score":{"disabled":[{"name":"*"}]}`, `"resourceNamespace":"openshift-kube-scheduler"`}},
		{configv1.SchedulerSpec{ProfileCustomizations: configv1.ProfileCustomizations{DynamicResourceAllocation: configv1.DRAEnablementEnabled}},
			[]string{`"multiPoint":{"enabled":[{"name":"DynamicResources"}]}`}},
	}
	for _, c := range cases {
		got, err := scheduler.Config(c.spec)
		if err != nil {
			t.Errorf("%+v: %v", c.spec, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(string(got), w) {
				t.Errorf("%+v: config.yaml lacks %s:\n%s", c.spec, w, got)
			}
		}
	}
	for _, spec := range []configv1.SchedulerSpec{
		{Policy: configv1.ConfigMapNameReference{Name: "my-policy"}},
		{Profile: "Spread"},
		{ProfileCustomizations: configv1.ProfileCustomizations{DynamicResourceAllocation: "Maybe"}},
	} {
		if _, err := scheduler.Config(spec); err == nil {
			t.Errorf("%+v: no error", spec)
		}
	}
}

// TestSchedulerSpec: a single node must run workloads, so the cluster's Scheduler makes the control-plane node
// schedulable; the profile is the default one, whose config.yaml the reference has.
func TestSchedulerSpec(t *testing.T) {
	r := sno(t)
	s, err := r.Cluster.ConfigInformers.Config().V1().Schedulers().Lister().Get("cluster")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Spec.MastersSchedulable || s.Spec.Profile != "" || s.Spec.Policy.Name != "" {
		t.Errorf("Scheduler spec %+v, want mastersSchedulable and the default profile", s.Spec)
	}
}

// TestLoopOrder: the loops run in the operator's order, as the package documents it.
func TestLoopOrder(t *testing.T) {
	r := sno(t)
	got := r.LoopOrder(component)
	want := []string{"static-resources/" + component, "node/" + component, "config-observer/" + component, "target-config", "resource-sync/" + component}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("loops %v, want %v", got, want)
	}
}
