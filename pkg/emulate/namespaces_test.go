package emulate

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/loops"
)

// TestNamespacesRunsWhenObjectsComeOrGo: the loop, which skips a run while no object was created or deleted
// since a run that created nothing, creates a missing namespace whenever an object of a new namespace is
// created or a namespace objects live in is deleted, and writes nothing while only contents change.
func TestNamespacesRunsWhenObjectsComeOrGo(t *testing.T) {
	ctx := context.Background()
	c, err := loops.NewCluster([]string{"ns-a", "ns-b"}, nil,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: "a"}, Data: map[string]string{"k": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	loop := Namespaces(c)
	run := func(step string, wantCreated ...string) {
		t.Helper()
		n := len(c.Journal())
		if err := loop.Sync(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		var created []string
		for _, w := range c.Journal()[n:] {
			if w.Verb != "create" || w.Resource != "namespaces" {
				t.Fatalf("%s: unexpected write %v", step, w)
			}
			created = append(created, w.Name)
		}
		if len(created) != len(wantCreated) || (len(created) > 0 && created[0] != wantCreated[0]) {
			t.Fatalf("%s: created %v, want %v", step, created, wantCreated)
		}
	}
	run("first run", "ns-a")
	run("nothing changed")

	cms := c.Kube.CoreV1().ConfigMaps("ns-a")
	o, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.Data["k"] = "2"
	if _, err := cms.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	run("contents changed")

	if _, err := c.Kube.CoreV1().Secrets("ns-b").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-b", Name: "s"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run("object in a new namespace", "ns-b")
	run("nothing changed after ns-b")

	if err := c.Kube.CoreV1().Namespaces().Delete(ctx, "ns-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	run("namespace deleted", "ns-a")
	run("nothing changed at the end")
}
