package pipeline

import (
	"context"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/node"
	"github.com/render-static/render-static/pkg/state"
)

// The node side (pkg/node) is the one step of a render after the registered components (pkg/components): it is
// built with them (its keys restored from a saved state), its loops run after every component's in the converge
// phase (it signs the kubelet's first client certificate with kube-controller-manager's CSR signer), and its
// files join the static pods in the node's tree.

// newNodeSide builds the node side, with its saved keys when the render continues from a state.
func newNodeSide(c *loops.Cluster, in *clusterconfig.Inputs, st *state.State) (*node.Node, error) {
	n := node.New(c, in)
	if st != nil {
		if err := n.RestoreKeys(st.NodeKeys); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// nodeTree is the node side's files: kubelet, CRI-O, /etc/hosts, the CSR approver and the first-boot apply of
// the exported manifests.
func nodeTree(ctx context.Context, n *node.Node, manifests []export.Manifest) (*export.Tree, error) {
	return n.Tree(ctx, node.Options{ManifestsDir: node.ManifestsDir, AdminKubeconfig: node.AdminKubeconfigPath, Manifests: manifests})
}
