package node

import (
	"context"
	"fmt"

	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// StaticResourcesLoopName is the loop that creates the node side's own cluster objects.
const StaticResourcesLoopName = "static-resources/node"

// approverRBAC are the embedded RBAC objects of the CSR approver (manifests/node/).
var approverRBAC = []string{"node/csr-approver-clusterrole.yaml", "node/csr-approver-clusterrolebinding.yaml"}

// StaticResourcesLoop applies the node side's cluster objects (the CSR approver's ClusterRole and binding; for the
// upstream flavor, kube-apiserver's access to the kubelet API) into the
// render's cluster, so they are exported and created by the first-boot apply like every other object.
func (n *Node) StaticResourcesLoop() loops.Loop {
	return loops.Loop{Name: StaticResourcesLoopName, Sync: func(ctx context.Context) error {
		role, binding, err := readApproverRBAC()
		if err != nil {
			return err
		}
		if _, _, err := resourceapply.ApplyClusterRole(ctx, n.cluster.Kube.RbacV1(), n.cluster.Recorder, role); err != nil {
			return err
		}
		if _, _, err = resourceapply.ApplyClusterRoleBinding(ctx, n.cluster.Kube.RbacV1(), n.cluster.Recorder, binding); err != nil {
			return err
		}
		if n.in.Flavor != clusterconfig.FlavorUpstream {
			return nil
		}
		kubeletAPI := &rbacv1.ClusterRoleBinding{}
		raw, err := manifests.Read(kubeletAPIRBAC)
		if err != nil {
			return err
		}
		if err := yaml.UnmarshalStrict(raw, kubeletAPI); err != nil {
			return fmt.Errorf("manifests/%s: %w", kubeletAPIRBAC, err)
		}
		_, _, err = resourceapply.ApplyClusterRoleBinding(ctx, n.cluster.Kube.RbacV1(), n.cluster.Recorder, kubeletAPI)
		return err
	}}
}

// kubeletAPIRBAC lets the upstream flavor's kube-apiserver use the kubelet API (the file says why).
const kubeletAPIRBAC = "node/kubelet-api-clusterrolebinding.yaml"

func readApproverRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, error) {
	role, binding := &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}
	for i, obj := range []any{role, binding} {
		raw, err := manifests.Read(approverRBAC[i])
		if err != nil {
			return nil, nil, err
		}
		if err := yaml.UnmarshalStrict(raw, obj); err != nil {
			return nil, nil, fmt.Errorf("manifests/%s: %w", approverRBAC[i], err)
		}
	}
	return role, binding, nil
}
