package etcd

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

// TestAllCertsLoopKeepsUpWithTheNodeSecrets: the loop's memo never keeps it from doing what a run afresh does: a
// run with nothing changed writes nothing; a changed node secret, or a changed etcd-all-certs, is applied again.
func TestAllCertsLoopKeepsUpWithTheNodeSecrets(t *testing.T) {
	ctx := context.Background()
	const node = "n0"
	var seeds []runtime.Object
	for _, name := range NodeSecrets(node) {
		seeds = append(seeds, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: name},
			Data: map[string][]byte{corev1.TLSCertKey: []byte(name + "-crt"), corev1.TLSPrivateKeyKey: []byte(name + "-key")}})
	}
	newComponent := func(objs ...runtime.Object) *Component {
		c, err := loops.NewCluster([]string{TargetNamespace}, nil, objs...)
		if err != nil {
			t.Fatal(err)
		}
		return &Component{Base: operator.Base{Cluster: c, Recorder: c.Recorder, In: &clusterconfig.Inputs{NodeName: node}}}
	}
	k := newComponent(seeds...)
	loop := k.allCertsLoop()
	secrets := k.Cluster.Kube.CoreV1().Secrets(TargetNamespace)
	allCerts := func(k *Component) *corev1.Secret {
		s, err := k.Cluster.Kube.CoreV1().Secrets(TargetNamespace).Get(ctx, AllCertsName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	run := func(step string, wantWrite bool) {
		t.Helper()
		n := len(k.Cluster.Journal())
		if err := loop.Sync(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if wrote := len(k.Cluster.Journal()) > n; wrote != wantWrite {
			t.Fatalf("%s: wrote %v, want %v", step, wrote, wantWrite)
		}
		var inputs []runtime.Object
		for _, name := range NodeSecrets(node) {
			s, err := secrets.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, s)
		}
		fresh := newComponent(inputs...)
		if err := fresh.allCertsLoop().Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := allCerts(k), allCerts(fresh); !equality.Semantic.DeepEqual(got.Data, want.Data) ||
			!equality.Semantic.DeepEqual(got.Annotations, want.Annotations) || got.Type != want.Type {
			t.Fatalf("%s: etcd-all-certs differs from a run afresh", step)
		}
		// The next run of the loop may be skipped: a loop that keeps nothing must then write nothing either.
		n = len(k.Cluster.Journal())
		if err := k.allCertsLoop().Sync(ctx); err != nil {
			t.Fatalf("%s: a loop that keeps nothing: %v", step, err)
		}
		if len(k.Cluster.Journal()) != n {
			t.Fatalf("%s: a loop that keeps nothing writes again", step)
		}
	}
	run("first", true)
	run("again", false)

	s, _ := secrets.Get(ctx, PeerSecret(node), metav1.GetOptions{})
	s.Data[corev1.TLSCertKey] = []byte("renewed")
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	run("renewed peer certificate", true)
	run("after renewal", false)

	all := allCerts(k)
	delete(all.Data, PeerSecret(node)+".key")
	if _, err := secrets.Update(ctx, all, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	run("etcd-all-certs changed by another", true)
	if err := secrets.Delete(ctx, AllCertsName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	run("etcd-all-certs deleted", true)
	run("after delete", false)
}
