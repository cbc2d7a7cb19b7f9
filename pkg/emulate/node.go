package emulate

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// NodeEmulation stands in for the kubelet registering the node (loop "emulate/kubelet-node-registration"): the
// Node the render is for, as the node's kubelet creates it on first boot: labelled as the control-plane (master)
// node, with its InternalIP addresses (both families for dual stack) and hostname, its kubelet version, and
// Ready.
//
// Why it is needed: every static-pod operator's node controller (library-go, run here by kube-controller-manager
// and kube-scheduler) lists the master nodes to keep status.nodeStatuses, the per-node record of which revision a
// node runs; the real etcd operator takes the member's name and IPs from the Node, and the real installer pod
// reads the kubelet version to decide how it writes the pod manifest. Offline no kubelet ever registers, so without
// this the operators would see a cluster without control-plane nodes. Ready is what the kubelet reports once it
// runs the static pods this render lays out; a node controller reports a master that is not Ready as degraded.
//
// The condition and heartbeat times are those of the first write and are kept afterwards, so a second pass writes
// nothing.
func NodeEmulation(c *loops.Cluster, in *clusterconfig.Inputs) loops.Loop {
	lister := c.KubeFactory().Core().V1().Nodes().Lister()
	return loops.Loop{Name: "emulate/kubelet-node-registration", Sync: func(ctx context.Context) error {
		want := desiredNode(in)
		cur, err := lister.Get(in.NodeName)
		if apierrors.IsNotFound(err) {
			now := metav1.NewTime(metav1.Now().Rfc3339Copy().Time)
			for i := range want.Status.Conditions {
				want.Status.Conditions[i].LastHeartbeatTime = now
				want.Status.Conditions[i].LastTransitionTime = now
			}
			_, err = c.Kube.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		next := cur.DeepCopy()
		if next.Labels == nil {
			next.Labels = map[string]string{}
		}
		for k, v := range want.Labels {
			next.Labels[k] = v
		}
		next.Status.Addresses = want.Status.Addresses
		next.Status.NodeInfo.KubeletVersion = want.Status.NodeInfo.KubeletVersion
		next.Status.NodeInfo.OperatingSystem = want.Status.NodeInfo.OperatingSystem
		next.Status.NodeInfo.Architecture = want.Status.NodeInfo.Architecture
		next.Status.Conditions = mergeNodeConditions(cur.Status.Conditions, want.Status.Conditions)
		if equality.Semantic.DeepEqual(cur, next) {
			return nil
		}
		_, err = c.Kube.CoreV1().Nodes().Update(ctx, next, metav1.UpdateOptions{})
		return err
	}}
}

// desiredNode is the node as its kubelet registers it, without condition times.
func desiredNode(in *clusterconfig.Inputs) *corev1.Node {
	addrs := make([]corev1.NodeAddress, 0, len(in.NodeIPs)+1)
	for _, ip := range in.NodeIPs {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
	}
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: in.NodeName})
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: in.NodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname":                in.NodeName,
				"kubernetes.io/os":                      "linux",
				"node-role.kubernetes.io/master":        "",
				"node-role.kubernetes.io/control-plane": "",
			},
		},
		Status: corev1.NodeStatus{
			Addresses: addrs,
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: clusterconfig.KubeletVersion(), OperatingSystem: "linux", Architecture: nodeArchitecture(in)},
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				Reason: "KubeletReady", Message: "kubelet is posting ready status",
			}},
		},
	}
}

// nodeArchitecture is the control plane's architecture from the install-config (amd64 by default).
func nodeArchitecture(in *clusterconfig.Inputs) string { return in.InstallConfig.Architecture() }

// mergeNodeConditions sets want's conditions over have's, keeping a condition's times while its status holds.
func mergeNodeConditions(have, want []corev1.NodeCondition) []corev1.NodeCondition {
	out := append([]corev1.NodeCondition(nil), have...)
	for _, w := range want {
		found := false
		for i := range out {
			if out[i].Type != w.Type {
				continue
			}
			found = true
			if out[i].Status != w.Status {
				now := metav1.NewTime(metav1.Now().Rfc3339Copy().Time)
				w.LastHeartbeatTime, w.LastTransitionTime = now, now
			} else {
				w.LastHeartbeatTime, w.LastTransitionTime = out[i].LastHeartbeatTime, out[i].LastTransitionTime
			}
			out[i] = w
		}
		if !found {
			now := metav1.NewTime(metav1.Now().Rfc3339Copy().Time)
			w.LastHeartbeatTime, w.LastTransitionTime = now, now
			out = append(out, w)
		}
	}
	return out
}
