package emulate

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/loops"
)

// NamespacesLoopName stands in for the cluster-version operator, which creates the namespaces of the release
// payload before anything is put into them.
const NamespacesLoopName = "emulate/namespaces"

// APIServerNamespaces are the namespaces kube-apiserver creates itself.
var APIServerNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}

// Namespaces is the loop NamespacesLoopName: it creates a Namespace for every namespace an object of the render
// lives in that no component created, so that the first-boot apply (which creates namespaces first) never meets an
// object whose namespace is missing. A component that creates its namespace itself (with its labels) takes
// precedence: this loop only adds what is missing, and runs after every component's loops and the node side's
// (pkg/pipeline, settle.go).
//
// Every pass runs it again, mostly with nothing created or deleted since: what it decides depends only on which
// objects exist (their kind, namespace and name), so it is skipped while loops.Cluster.Membership is that of a
// run that succeeded and created nothing.
func Namespaces(c *loops.Cluster) loops.Loop {
	var memo loops.Memo
	return loops.Loop{Name: NamespacesLoopName, Sync: func(ctx context.Context) error {
		before := []int{c.Membership()}
		if memo.Same(before) {
			return nil
		}
		memo.Forget()
		if err := createMissingNamespaces(ctx, c); err != nil {
			return err
		}
		if c.Membership() == before[0] {
			memo.Keep(before)
		}
		return nil
	}}
}

// createMissingNamespaces creates the namespaces objects of the render live in that do not exist.
func createMissingNamespaces(ctx context.Context, c *loops.Cluster) error {
	ms, err := export.Identities(c)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	need := map[string]bool{}
	for _, m := range ms {
		if m.GVK.Group == "" && m.GVK.Kind == "Namespace" {
			have[m.Name] = true
		}
		if m.Namespace != "" && !APIServerNamespaces[m.Namespace] {
			need[m.Namespace] = true
		}
	}
	var missing []string
	for ns := range need {
		if !have[ns] {
			missing = append(missing, ns)
		}
	}
	sort.Strings(missing)
	for _, ns := range missing {
		_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns,
			Annotations: map[string]string{
				"render-static.io/created-by": NamespacesLoopName + ": objects of the render live here and no component creates it",
			},
		}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	return nil
}
