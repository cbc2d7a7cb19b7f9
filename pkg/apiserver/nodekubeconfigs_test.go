package apiserver

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

// TestNodeKubeconfigsLoopKeepsUpWithItsInputs: the loop's memo never keeps it from doing what a run afresh does:
// a run with nothing changed writes nothing, and a changed input or a changed secret is rendered again, exactly as
// a component that never ran renders it.
func TestNodeKubeconfigsLoopKeepsUpWithItsInputs(t *testing.T) {
	ctx := context.Background()
	seeds := func() []runtime.Object {
		return []runtime.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: "node-system-admin-client"},
				Data: map[string][]byte{"tls.crt": []byte("CERT"), "tls.key": []byte("KEY")}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: "kube-apiserver-server-ca"},
				Data: map[string]string{"ca-bundle.crt": "CA1"}},
			&configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
				Status: configv1.InfrastructureStatus{APIServerURL: "https://api.x:6443", APIServerInternalURL: "https://api-int.x:6443"}},
		}
	}
	c, err := loops.NewCluster([]string{OperatorNamespace, TargetNamespace}, nil, seeds()...)
	if err != nil {
		t.Fatal(err)
	}
	k := &Component{Base: operator.Base{Cluster: c, Recorder: c.Recorder}}
	loop := k.nodeKubeconfigsLoop()
	secret := func(c *loops.Cluster) *corev1.Secret {
		s, err := c.Kube.CoreV1().Secrets(TargetNamespace).Get(ctx, "node-kubeconfigs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// afresh runs the loop of a new component on a copy of c's inputs and returns the secret it makes.
	afresh := func() *corev1.Secret {
		var objs []runtime.Object
		s, _ := c.Kube.CoreV1().Secrets(OperatorNamespace).Get(ctx, "node-system-admin-client", metav1.GetOptions{})
		ca, _ := c.Kube.CoreV1().ConfigMaps(TargetNamespace).Get(ctx, "kube-apiserver-server-ca", metav1.GetOptions{})
		infra, _ := c.Config.ConfigV1().Infrastructures().Get(ctx, "cluster", metav1.GetOptions{})
		objs = append(objs, s, ca, infra)
		c2, err := loops.NewCluster([]string{OperatorNamespace, TargetNamespace}, nil, objs...)
		if err != nil {
			t.Fatal(err)
		}
		k2 := &Component{Base: operator.Base{Cluster: c2, Recorder: c2.Recorder}}
		if err := k2.nodeKubeconfigsLoop().Sync(ctx); err != nil {
			t.Fatal(err)
		}
		return secret(c2)
	}
	run := func(step string, wantWrite bool) {
		t.Helper()
		n := len(c.Journal())
		if err := loop.Sync(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if wrote := len(c.Journal()) > n; wrote != wantWrite {
			t.Fatalf("%s: wrote %v, want %v", step, wrote, wantWrite)
		}
		if got, want := secret(c), afresh(); !equality.Semantic.DeepEqual(got.Data, want.Data) || got.Type != want.Type ||
			!equality.Semantic.DeepEqual(got.Annotations, want.Annotations) {
			t.Fatalf("%s: the secret differs from a run afresh", step)
		}
		// The next run of the loop may skip its apply: a loop that keeps nothing must then write nothing either.
		n = len(c.Journal())
		fresh := &Component{Base: operator.Base{Cluster: c, Recorder: c.Recorder}}
		if err := fresh.nodeKubeconfigsLoop().Sync(ctx); err != nil {
			t.Fatalf("%s: a loop that keeps nothing: %v", step, err)
		}
		if len(c.Journal()) != n {
			t.Fatalf("%s: a loop that keeps nothing writes again", step)
		}
	}
	run("first", true)
	run("again", false)
	run("and again", false)

	ca, _ := c.Kube.CoreV1().ConfigMaps(TargetNamespace).Get(ctx, "kube-apiserver-server-ca", metav1.GetOptions{})
	ca.Data["ca-bundle.crt"] = "CA2"
	if _, err := c.Kube.CoreV1().ConfigMaps(TargetNamespace).Update(ctx, ca, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	run("new CA", true)
	if !strings.Contains(string(secret(c).Data["localhost.kubeconfig"]), "Q0Ey") { // base64 of CA2
		t.Fatalf("the kubeconfig does not hold the new CA")
	}
	run("after new CA", false)

	s := secret(c)
	s.Data["localhost.kubeconfig"] = []byte("changed")
	if _, err := c.Kube.CoreV1().Secrets(TargetNamespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	run("secret changed by another", true)

	infra, _ := c.Config.ConfigV1().Infrastructures().Get(ctx, "cluster", metav1.GetOptions{})
	infra.Status.APIServerInternalURL = ""
	if _, err := c.Config.ConfigV1().Infrastructures().UpdateStatus(ctx, infra, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := loop.Sync(ctx); err == nil || !strings.Contains(err.Error(), "no API server URLs") {
		t.Fatalf("with an input missing: err = %v", err)
	}
	if err := loop.Sync(ctx); err == nil {
		t.Fatalf("with an input missing, again: no error")
	}
	infra.Status.APIServerInternalURL = "https://api-int.y:6443"
	if _, err := c.Config.ConfigV1().Infrastructures().UpdateStatus(ctx, infra, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	run("input back", true)
	run("after input back", false)
}
