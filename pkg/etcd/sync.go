package etcd

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/openshift/library-go/pkg/operator/configobserver"
	libgoapiserver "github.com/openshift/library-go/pkg/operator/configobserver/apiserver"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
	"github.com/render-static/render-static/pkg/resourcesync"
)

// StaticResources are the manifests under manifests/etcd/ the static-resources loop applies.
var StaticResources = []string{"etcd/ns.yaml", "etcd/operator-ns.yaml", "etcd/svc.yaml"}

// staticResourcesLoop applies the namespaces and the etcd service with library-go's static resource controller.
func (k *Component) staticResourcesLoop() loops.Loop {
	return k.StaticResourcesLoop("EtcdStaticResources", StaticResources)
}

// configObserverLoop observes what the operator observes: the APIServer's TLS profile into
// servingInfo.{minTLSVersion,cipherSuites} (library-go's observer) and the control-plane replicas of the
// install-config into controlPlane.replicas.
func (k *Component) configObserverLoop() loops.Loop {
	l := k.Listers()
	l.ConfigMaps = k.Cluster.KubeInformers.InformersFor(KubeSystem).Core().V1().ConfigMaps().Lister()
	return k.ConfigObserverLoop(l, libgoapiserver.ObserveTLSSecurityProfile, observeControlPlaneReplicas)
}

var controlPlaneReplicasPath = []string{"controlPlane", "replicas"}

// observeControlPlaneReplicas observes controlPlane.replicas (plus arbiter.replicas, when the install-config has
// arbiters) of kube-system/cluster-config-v1 into the observed config's controlPlane.replicas.
func observeControlPlaneReplicas(genericListers configobserver.Listers, _ events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
	l := genericListers.(operator.Listers)
	n, err := controlPlaneReplicas(l.ConfigMaps.ConfigMaps(KubeSystem))
	if err != nil {
		return configobserver.Pruned(existing, controlPlaneReplicasPath), []error{err}
	}
	out := map[string]interface{}{}
	if err := unstructured.SetNestedField(out, float64(n), controlPlaneReplicasPath...); err != nil {
		return configobserver.Pruned(existing, controlPlaneReplicasPath), []error{err}
	}
	return out, nil
}

// controlPlaneReplicas reads the desired control-plane size from a cluster-config-v1 configmap.
func controlPlaneReplicas(cms corev1listers.ConfigMapNamespaceLister) (int, error) {
	ic, err := installConfig(cms)
	if err != nil {
		return 0, err
	}
	replicas, found, err := unstructured.NestedFloat64(ic, "controlPlane", "replicas")
	if err != nil || !found {
		return 0, fmt.Errorf("cluster-config-v1: install-config has no controlPlane.replicas (%v)", err)
	}
	if arbiters, found, err := unstructured.NestedFloat64(ic, "arbiter", "replicas"); err == nil && found {
		replicas += arbiters
	}
	return int(replicas), nil
}

// installConfig is the install-config a cluster-config-v1 configmap carries, as a generic map.
func installConfig(cms corev1listers.ConfigMapNamespaceLister) (map[string]interface{}, error) {
	cm, err := cms.Get("cluster-config-v1")
	if err != nil {
		return nil, err
	}
	raw, ok := cm.Data["install-config"]
	if !ok {
		return nil, fmt.Errorf("%s/cluster-config-v1 has no install-config", cm.Namespace)
	}
	var ic map[string]interface{}
	if err := yaml.Unmarshal([]byte(raw), &ic); err != nil {
		return nil, fmt.Errorf("%s/cluster-config-v1: install-config: %w", cm.Namespace, err)
	}
	return ic, nil
}

// rl is a conditional rule (copy only while the source exists), as the etcd operator declares all of its rules.
func rl(secret bool, dest, source certs.Location) resourcesync.Rule {
	return resourcesync.Rule{Secret: secret, Dest: dest, Source: source, Conditional: true}
}

func at(ns, name string) certs.Location { return certs.Location{Namespace: ns, Name: name} }

// SyncRules are the operator's resource-sync rules. openshift-config/etcd-serving-ca and
// openshift-config/etcd-client are what kube-apiserver reads.
var SyncRules = []resourcesync.Rule{
	rl(false, at(TargetNamespace, "cluster-config-v1"), at(KubeSystem, "cluster-config-v1")),
	rl(false, at(OperatorNamespace, CABundleName), at(TargetNamespace, CABundleName)),
	rl(false, at(ConfigNamespace, CABundleName), at(TargetNamespace, CABundleName)),
	rl(false, at(ConfigNamespace, ServingCAName), at(TargetNamespace, CABundleName)),
	rl(false, at(OperatorNamespace, "etcd-metric-serving-ca"), at(TargetNamespace, MetricsBundleName)),
	rl(true, at(OperatorNamespace, MetricClientName), at(TargetNamespace, MetricClientName)),
	rl(true, at(OperatorNamespace, ClientName), at(TargetNamespace, ClientName)),
	rl(true, at(ConfigNamespace, ClientName), at(TargetNamespace, ClientName)),
}

// EndpointKey is the key of an IP in openshift-etcd/etcd-endpoints: its text, base64 without padding.
func EndpointKey(ip string) string { return base64.RawStdEncoding.EncodeToString([]byte(ip)) }

// endpointsLoop writes openshift-etcd/etcd-endpoints the way a bootstrap-in-place install seeds it: the one member's
// IP (the node's primary IP), keyed by its base64 text, and no bootstrap annotation. kube-apiserver's etcd-servers
// and the etcd environment's ALL_ETCD_ENDPOINTS come from it.
func (k *Component) endpointsLoop() loops.Loop {
	return loops.Loop{Name: "endpoints/" + EndpointsName, Sync: func(ctx context.Context) error {
		ip := k.In.NodeIP().String()
		_, _, err := resourceapply.ApplyConfigMap(ctx, k.Cluster.Kube.CoreV1(), k.Recorder, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: TargetNamespace, Name: EndpointsName, Annotations: ownedBy()},
			Data:       map[string]string{EndpointKey(ip): ip},
		})
		return err
	}}
}
