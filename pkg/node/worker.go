package node

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
)

// A worker node (seed 004) is a kubelet and CRI-O beside the control-plane node: worker.ign lays down its kubelet,
// configured as the control-plane node's (the same kubelet.conf but for the address it listens on, which follows
// its own IPs), with the worker role and no static pods; its client certificate for system:node:<name>, signed at
// render time by kube-controller-manager's CSR signer exactly as the control-plane node's (CSRApprovalLoop), so
// it registers with no CSR to approve; the CSR approver of the control-plane node approves its serving
// certificate and its client renewals (ApproverNodesFile lists it, with its own IPs); /etc/hosts sends api and
// api-int to the control-plane node; CRI-O with the pull secret, and every user input the install-config gives
// the nodes (mirrors, trust bundle, workload pinning, fips of the worker pool). docs/node.md, "Workers".

// WorkerTree is a worker's files and units: what its worker.ign lays down.
func (n *Node) WorkerTree(ctx context.Context, w clusterconfig.Worker) (*export.Tree, error) {
	if n == nil {
		return nil, fmt.Errorf("node: no node side in this render (node.New was not called)")
	}
	if !n.isWorker(w.Name) {
		return nil, fmt.Errorf("node: %s is not a worker of this render", w.Name)
	}
	t := export.NewTree()
	if _, err := n.addKubelet(ctx, t, kubeletNode{name: w.Name, ips: w.IPs, what: "worker node " + w.Name, role: "worker",
		labels: registrationLabels(WorkerLabels, n.in.Flavor), hosts: WorkerHosts(n.in), declared: declaredNodes(n.in)}); err != nil {
		return nil, fmt.Errorf("worker %s: %w", w.Name, err)
	}
	if err := t.AddFile("/etc/hostname", 0644, []byte(w.Name+"\n")); err != nil {
		return nil, err
	}
	return t, nil
}

func (n *Node) isWorker(name string) bool {
	for _, w := range n.in.Workers {
		if w.Name == name {
			return true
		}
	}
	return false
}

// declaredNodes says whether the control plane declares the workers' Nodes (WorkerNodes) rather than their
// kubelets registering them: when a worker's kubelet may not set its role label itself (an upstream kubelet:
// apiLabels; NodeRestriction forbids a kubelet to change its own role labels later too).
func declaredNodes(in *clusterconfig.Inputs) bool { return len(apiLabels(WorkerLabels, in.Flavor)) > 0 }

// WorkerNodes are the workers' Nodes as the control plane declares them when their kubelets may not register them
// with their role (declaredNodes: an upstream kubelet): name and labels, the role's and those the kubelet sets on
// a Node it registers (hostname, os, arch: pkg/kubelet kubelet_node_status.go initialNode). They are created by
// the first-boot apply with the other manifests on day 1, and by aio-update from the update of `render-static
// worker` on day 2 (server-side apply). Such a worker's kubelet runs with registerNode false: it registers no Node
// of its own, and heartbeats into its declared Node once it exists (status only), so there is no race between a
// kubelet registering without the role and the declaration. None for OpenShift's kubelet, which registers with
// its role (WorkerLabels).
func WorkerNodes(in *clusterconfig.Inputs) ([]export.Manifest, error) {
	if !declaredNodes(in) {
		return nil, nil
	}
	var out []export.Manifest
	for _, w := range in.Workers {
		labels := map[string]any{"kubernetes.io/hostname": w.Name, "kubernetes.io/os": "linux", "kubernetes.io/arch": in.InstallConfig.Architecture()}
		for _, l := range WorkerLabels {
			k, v, _ := cutLabel(l)
			labels[k] = v
		}
		// Name, labels and the pod capacity: the kubelet writes the rest of the status. The capacity is the
		// kubelet's own maxPods, what it will report: without it, a kubelet that admits its static pods against
		// this Node before writing its status once finds room for no pod and refuses them for good (its admission,
		// pkg/kubelet/lifecycle/predicate.go, counts pods against status.allocatable). A Node takes its status on
		// create (pkg/registry/core/node/strategy.go: "Nodes allow *all* fields, including status, to be set on
		// create"); later applies leave the kubelet's status alone.
		pods := strconv.Itoa(MaxPods)
		m, err := export.ToManifest(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": w.Name, "labels": labels},
			"status": map[string]any{"capacity": map[string]any{"pods": pods}, "allocatable": map[string]any{"pods": pods}}}})
		if err != nil {
			return nil, fmt.Errorf("worker %s: Node: %w", w.Name, err)
		}
		out = append(out, m)
	}
	return out, nil
}
