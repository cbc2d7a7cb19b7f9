package etcd_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/etcd"
	"github.com/render-static/render-static/pkg/loops"
)

// TestEnvVarLoopKeepsUpWithItsInputs: one env-var loop, which keeps what it computed while the versions of what
// it reads are unchanged, computes again after each of its inputs changed (the endpoints, the infrastructure,
// the install-config, the operator's observed config), exactly what a new loop computes.
func TestEnvVarLoopKeepsUpWithItsInputs(t *testing.T) {
	ctx := context.Background()
	r, err := doRender(ipv4, clusterconfig.FlavorOpenShift) // its own cluster: the test changes it
	if err != nil {
		t.Fatal(err)
	}
	envLoop := func() loops.Loop {
		for _, l := range r.comp.Converge() {
			if l.Name == "env-var/etcd" {
				return l
			}
			l.Close()
		}
		t.Fatal("no env-var/etcd loop")
		return loops.Loop{}
	}
	loop := envLoop()
	env := func() string {
		e, err := r.comp.EnvVarsForTest()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(e)
		return string(b)
	}
	// check runs the loop, then a new loop (nothing kept) on the same cluster, and compares what they computed.
	check := func(step, wantVar, wantValue string) {
		t.Helper()
		if err := loop.Sync(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		kept := env()
		if err := envLoop().Sync(ctx); err != nil {
			t.Fatalf("%s: a new loop: %v", step, err)
		}
		if fresh := env(); kept != fresh {
			t.Fatalf("%s: the loop computed\n%s\na new loop computes\n%s", step, kept, fresh)
		}
		e, _ := r.comp.EnvVarsForTest()
		if v, _ := e.Get(wantVar); wantVar != "" && !strings.Contains(v, wantValue) {
			t.Fatalf("%s: %s = %q, want it to hold %q", step, wantVar, v, wantValue)
		}
	}
	check("first", "", "")
	check("nothing changed", "", "")

	cms := r.cluster.Kube.CoreV1().ConfigMaps(etcd.TargetNamespace)
	ep, err := cms.Get(ctx, etcd.EndpointsName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep.Data["other"] = "192.168.126.99"
	if _, err := cms.Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("new endpoint", "ALL_ETCD_ENDPOINTS", "192.168.126.99")

	infra, err := r.cluster.Config.ConfigV1().Infrastructures().Get(ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	infra.Status.PlatformStatus = &configv1.PlatformStatus{Type: configv1.AzurePlatformType, Azure: &configv1.AzurePlatformStatus{}}
	if _, err := r.cluster.Config.ConfigV1().Infrastructures().UpdateStatus(ctx, infra, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("Azure", "ETCD_HEARTBEAT_INTERVAL", "500")

	ic, err := cms.Get(ctx, "cluster-config-v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ic.Data["install-config"] = strings.Replace(ic.Data["install-config"], "controlPlane:", "controlPlane:\n  architecture: arm64", 1)
	if _, err := cms.Update(ctx, ic, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("arm64", "ETCD_UNSUPPORTED_ARCH", "arm64")

	op := r.comp.Operator()
	spec, _, rv, err := op.GetStaticPodOperatorState()
	if err != nil {
		t.Fatal(err)
	}
	var observed map[string]interface{}
	if err := json.Unmarshal(spec.ObservedConfig.Raw, &observed); err != nil {
		t.Fatal(err)
	}
	observed["servingInfo"].(map[string]interface{})["minTLSVersion"] = "VersionTLS13"
	spec.ObservedConfig.Raw, _ = json.Marshal(observed)
	spec.ObservedConfig.Object = nil
	if _, _, err := op.UpdateStaticPodOperatorSpec(ctx, rv, spec); err != nil {
		t.Fatal(err)
	}
	check("TLS 1.3", "ETCD_TLS_MIN_VERSION", "TLS1.3")
	check("nothing changed at the end", "ETCD_TLS_MIN_VERSION", "TLS1.3")
}
