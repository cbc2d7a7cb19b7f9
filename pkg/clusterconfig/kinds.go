package clusterconfig

import "k8s.io/apimachinery/pkg/runtime/schema"

// Namespaces are the namespaces the installer's seeds and the stand-ins (pkg/emulate) use.
var Namespaces = []string{"openshift-config", "openshift-config-managed", "kube-system"}

// DynamicKinds are the kinds static resources create through the dynamic client (custom resources without
// typed clients), with their list kinds.
var DynamicKinds = map[schema.GroupVersionResource]string{
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}:                                 "ServiceMonitorList",
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"}:                                 "PrometheusRuleList",
	{Group: "controlplane.operator.openshift.io", Version: "v1alpha1", Resource: "podnetworkconnectivitychecks"}: "PodNetworkConnectivityCheckList",
}
