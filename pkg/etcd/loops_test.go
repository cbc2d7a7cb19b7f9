package etcd_test

import (
	"context"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/etcd"
)

// TestLoopsConvergeToRevision1: the loops run in the operator's order, settle with a pass that writes nothing, and
// the revision phase makes exactly revision 1 of the declared resources.
func TestLoopsConvergeToRevision1(t *testing.T) {
	r := render(t, ipv4)
	var names []string
	for _, l := range r.comp.Converge() {
		names = append(names, l.Name)
		l.Close()
	}
	want := []string{
		"cert-rotation/EtcdClient", "cert-rotation/EtcdMetricClient", "cert-rotation/EtcdPeer-sno-0",
		"cert-rotation/EtcdServing-sno-0", "cert-rotation/EtcdServingMetrics-sno-0",
		"cert-signer/etcd-all-bundles", "cert-signer/etcd-all-certs",
		"static-resources/etcd", "config-observer/etcd", "resource-sync/etcd", "endpoints/etcd-endpoints", "env-var/etcd",
		"target-config/etcd-scripts", "target-config/restore-etcd-pod", "target-config/etcd-pod",
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("loops:\n got %v\nwant %v", names, want)
	}

	res := r.runner.Result()
	last := map[string]int{}
	for _, p := range res.Passes {
		last[p.Phase] = p.Pass
		if p.Pass > 4 {
			t.Errorf("%s took %d passes", p.Phase, p.Pass)
		}
	}
	for _, p := range res.Passes {
		if p.Pass == last[p.Phase] && (p.Writes != 0 || p.Errors != 0) {
			t.Errorf("%s did not end with a pass without writes and errors: %+v\n%s", p.Phase, p, res.Trace())
		}
	}
	if r.rev != 1 {
		t.Fatalf("latest revision %d, want 1", r.rev)
	}
	ctx := context.Background()
	for _, name := range []string{"etcd-pod-1", "etcd-endpoints-1", "etcd-all-bundles-1", "revision-status-1"} {
		if _, err := r.cluster.Kube.CoreV1().ConfigMaps(etcd.TargetNamespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("revision 1: %v", err)
		}
	}
	if _, err := r.cluster.Kube.CoreV1().Secrets(etcd.TargetNamespace).Get(ctx, "etcd-all-certs-1", metav1.GetOptions{}); err != nil {
		t.Errorf("revision 1: %v", err)
	}
	if _, err := r.cluster.Kube.CoreV1().ConfigMaps(etcd.TargetNamespace).Get(ctx, "revision-status-2", metav1.GetOptions{}); err == nil {
		t.Errorf("a revision 2 was made")
	}
	// Every write of the converge phase is attributed to one of etcd's loops.
	for _, w := range res.Writes {
		if w.Phase == "converge" && !slices.Contains(want, w.Loop) {
			t.Errorf("write by unknown loop %q: %v", w.Loop, w)
		}
	}
	// Operator status: conditions of the loops, none degraded; the node kept.
	_, st, _, _ := r.comp.Operator().GetStaticPodOperatorState()
	if len(st.NodeStatuses) != 1 || st.NodeStatuses[0].NodeName != node {
		t.Errorf("nodeStatuses = %+v", st.NodeStatuses)
	}
	conds := map[string]string{}
	for _, c := range st.Conditions {
		conds[c.Type] = string(c.Status)
	}
	for _, c := range []string{"CertRotation_EtcdClient_Degraded", "ResourceSyncControllerDegraded", "ConfigObservationDegraded", "EtcdStaticResourcesDegraded"} {
		if conds[c] != "False" {
			t.Errorf("condition %s = %q, want False (all: %v)", c, conds[c], conds)
		}
	}
}

// TestResourceSync: what other components read exists where they read it.
func TestResourceSync(t *testing.T) {
	r := render(t, ipv4)
	for _, rule := range etcd.SyncRules {
		if rule.Secret {
			src, dst := r.secret(t, rule.Source.Namespace, rule.Source.Name), r.secret(t, rule.Dest.Namespace, rule.Dest.Name)
			if string(src.Data["tls.crt"]) != string(dst.Data["tls.crt"]) {
				t.Errorf("%s/%s is not a copy of %s/%s", rule.Dest.Namespace, rule.Dest.Name, rule.Source.Namespace, rule.Source.Name)
			}
			continue
		}
		src, dst := r.configMap(t, rule.Source.Namespace, rule.Source.Name), r.configMap(t, rule.Dest.Namespace, rule.Dest.Name)
		if len(src.Data) == 0 || strings.Join(sortedValues(src.Data), "") != strings.Join(sortedValues(dst.Data), "") {
			t.Errorf("%s/%s is not a copy of %s/%s", rule.Dest.Namespace, rule.Dest.Name, rule.Source.Namespace, rule.Source.Name)
		}
	}
	if _, err := r.cluster.Kube.CoreV1().Namespaces().Get(context.Background(), etcd.TargetNamespace, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace: %v", err)
	}
}

func sortedValues(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// TestScriptsAndRestorePods: the scripts survive the installer's substitution (they contain none of its tokens),
// are valid bash, are installed with the operator's modes; the restore pods are pods of this node's etcd.
func TestScriptsAndRestorePods(t *testing.T) {
	r := render(t, ipv4)
	bash := testtools.Tool(t, "bash")
	for _, s := range etcd.Scripts {
		raw, err := manifests.Read("etcd/scripts/" + s)
		if err != nil {
			t.Fatal(err)
		}
		for _, token := range []string{"REVISION", "NODE_NAME", "NODE_ENVVAR_NAME"} {
			if strings.Contains(string(raw), token) {
				t.Errorf("%s contains %s, which the installer would replace", s, token)
			}
		}
		f := r.files[certDir+"configmaps/etcd-scripts/"+s]
		if string(f.Contents) != string(raw) {
			t.Errorf("%s on the node differs from manifests/etcd/scripts/%s", s, s)
		}
		if want := map[bool]uint32{true: 0755, false: 0600}[strings.HasSuffix(s, ".sh")]; uint32(f.Mode.Perm()) != want {
			t.Errorf("%s has mode %o, want %o", s, f.Mode.Perm(), want)
		}
		if out, err := exec.Command(bash, "-n", "-c", string(raw)).CombinedOutput(); err != nil {
			t.Errorf("%s is not valid bash: %v\n%s", s, err, out)
		}
		if strings.HasSuffix(s, ".sh") && !strings.Contains(string(raw), "\n### etcd-scripts: ") {
			t.Errorf("%s lacks the marker line the etcd-resources-copy container removes old scripts by", s)
		}
	}
	env := string(r.file(t, certDir+"configmaps/etcd-scripts/etcd.env"))
	lines := strings.Split(strings.TrimSuffix(env, "\n"), "\n")
	if !sort.StringsAreSorted(lines) || len(lines) != len(envOf(container(t, r.pod(t), "etcd-readyz"))) {
		t.Errorf("etcd.env is not the sorted pod environment:\n%s", env)
	}

	for _, key := range []string{"pod.yaml", "quorum-restore-pod.yaml"} {
		pod, err := resourceread.ReadPodV1(r.file(t, certDir+"configmaps/restore-etcd-pod/"+key))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		c := container(t, pod, "etcd")
		script := c.Command[2]
		if pod.Name != "etcd" || pod.Namespace != etcd.TargetNamespace || pod.Labels["revision"] != "1" || c.Image != r.in.Images.Image("etcd") {
			t.Errorf("%s: %s/%s revision %q image %s", key, pod.Namespace, pod.Name, pod.Labels["revision"], c.Image)
		}
		if strings.Contains(script, "NODE_NODE_ENVVAR_NAME") || strings.Contains(script, "NODE_NAME") || !strings.Contains(script, "${NODE_sno_0_ETCD_URL_HOST}") {
			t.Errorf("%s: the installer did not make the script this node's:\n%s", key, script)
		}
		if envOf(c)["NODE_sno_0_IP"] != "192.168.126.10" {
			t.Errorf("%s lacks the etcd environment", key)
		}
		if out, err := exec.Command(bash, "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%s script is not valid shell: %v\n%s", key, err, out)
		}
	}
	if !strings.Contains(string(r.file(t, certDir+"configmaps/restore-etcd-pod/quorum-restore-pod.yaml")), "--force-new-cluster") {
		t.Errorf("the quorum-restore pod does not force a new cluster")
	}
}
