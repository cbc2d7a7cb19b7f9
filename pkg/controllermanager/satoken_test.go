package controllermanager

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// TestSATokenSignerBootstrap: without default/kubernetes endpoints the signer waits for the installer's key,
// copies it once, and then settles; with endpoints (a running cluster) it leaves rotation to the operator.
func TestSATokenSignerBootstrap(t *testing.T) {
	ctx := context.Background()
	c, err := loops.NewCluster(Namespaces, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := New(c, &clusterconfig.Inputs{InstallConfig: &installconfig.InstallConfig{}})
	l := k.saTokenSigner()
	if err := l.Sync(ctx); err == nil {
		t.Fatalf("no error without %s", initialSAKey)
	}
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: initialSAKey.Namespace, Name: initialSAKey.Name},
		Data: map[string][]byte{"service-account.key": []byte("KEY")}}
	if _, err := c.Kube.CoreV1().Secrets(key.Namespace).Create(ctx, key, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := l.Sync(ctx); err != nil {
			t.Fatalf("sync %d: %v", i+1, err)
		}
	}
	got, err := c.Kube.CoreV1().Secrets(saKey.Namespace).Get(ctx, saKey.Name, metav1.GetOptions{})
	if err != nil || string(got.Data["service-account.key"]) != "KEY" {
		t.Fatalf("%s: %v %v", saKey, got, err)
	}
	writes := 0
	for _, w := range c.Journal() {
		if w.Namespace == saKey.Namespace && w.Name == saKey.Name {
			writes++
		}
	}
	if writes != 1 {
		t.Errorf("%s written %d times, want once", saKey, writes)
	}
	//lint:ignore SA1019 the controller under test reads the kubernetes Endpoints object
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}}
	if _, err := c.Kube.CoreV1().Endpoints("default").Create(ctx, ep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(ctx); err == nil {
		t.Errorf("no error once the kubernetes endpoints exist")
	}
}
