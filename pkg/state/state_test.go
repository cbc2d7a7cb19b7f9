package state

import (
	"reflect"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TestSeedsKeepStatus: an installer-made object replacing its saved copy takes the saved UID and creation time,
// and the saved status only where the installer leaves status empty (an operator's); a status the installer sets
// stays the fresh one; the saved objects are not changed.
func TestSeedsKeepStatus(t *testing.T) {
	meta := func(uid string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "cluster", UID: types.UID("uid-" + uid), CreationTimestamp: metav1.Unix(1000, 0)}
	}
	gvk := func(o runtime.Object, kind string) runtime.Object {
		o.GetObjectKind().SetGroupVersionKind(configv1.GroupVersion.WithKind(kind))
		return o
	}
	savedStatus := configv1.NetworkStatus{ClusterNetwork: []configv1.ClusterNetworkEntry{{CIDR: "10.128.0.0/14", HostPrefix: 23}},
		ServiceNetwork: []string{"172.30.0.0/16"}, NetworkType: "OVNKubernetes", ClusterNetworkMTU: 1400}
	savedNet := gvk(&configv1.Network{ObjectMeta: meta("net"), Spec: configv1.NetworkSpec{NetworkType: "OVNKubernetes"}, Status: savedStatus}, "Network")
	savedInfra := gvk(&configv1.Infrastructure{ObjectMeta: meta("infra"), Status: configv1.InfrastructureStatus{InfrastructureName: "old"}}, "Infrastructure")
	s := &State{Objects: []runtime.Object{savedNet, savedInfra}}
	before := []runtime.Object{savedNet.DeepCopyObject(), savedInfra.DeepCopyObject()}

	freshNet := &configv1.Network{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.NetworkSpec{NetworkType: "OVNKubernetes", ServiceNetwork: []string{"172.31.0.0/16"}}}
	freshInfra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Status: configv1.InfrastructureStatus{InfrastructureName: "new"}}
	typed, dynamic, err := s.Seeds([]runtime.Object{freshNet, freshInfra})
	if err != nil {
		t.Fatal(err)
	}
	if len(typed) != 2 || len(dynamic) != 0 {
		t.Fatalf("%d typed and %d dynamic seeds, want 2 and 0", len(typed), len(dynamic))
	}
	net, ok := typed[0].(*configv1.Network)
	if !ok {
		t.Fatalf("first seed is %T", typed[0])
	}
	if net.UID != "uid-net" || !net.CreationTimestamp.Equal(&savedNet.(*configv1.Network).CreationTimestamp) {
		t.Errorf("network seed has UID %q, created %v: not the saved ones", net.UID, net.CreationTimestamp)
	}
	if !reflect.DeepEqual(net.Spec, freshNet.Spec) {
		t.Errorf("network seed's spec is %+v, want the fresh one %+v", net.Spec, freshNet.Spec)
	}
	if !reflect.DeepEqual(net.Status, savedStatus) {
		t.Errorf("network seed's status is %+v, want the saved one %+v", net.Status, savedStatus)
	}
	if len(net.Status.ServiceNetwork) > 0 {
		net.Status.ServiceNetwork[0] = "changed" // must not reach the saved object
	}
	if infra := typed[1].(*configv1.Infrastructure); infra.Status.InfrastructureName != "new" || infra.UID != "uid-infra" {
		t.Errorf("infrastructure seed has status.infrastructureName %q, UID %q: want the fresh status and the saved UID", infra.Status.InfrastructureName, infra.UID)
	}
	if freshNet.Status.NetworkType != "" {
		t.Errorf("Seeds changed the fresh object")
	}
	if !reflect.DeepEqual(s.Objects, before) {
		t.Errorf("Seeds changed the saved objects")
	}
}
