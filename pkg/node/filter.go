package node

import (
	"github.com/render-static/render-static/pkg/export"
)

// ExportRule is one kind of object that must not reach the live cluster, and why.
type ExportRule struct {
	Name  string
	Why   string
	Match func(m export.Manifest) bool
}

// Dropped is a manifest FilterExport kept out, with the rule that matched.
type Dropped struct {
	File string
	Rule string
}

func kind(group, kind string) func(export.Manifest) bool {
	return func(m export.Manifest) bool { return m.GVK.Group == group && m.GVK.Kind == kind }
}

// ExportRules decide what of the render's in-memory cluster is not exported. The render's cluster holds more than
// configuration: stand-ins for controllers that do not run offline, records of emulated steps, and objects the
// operators would keep in shape on a live cluster. The first-boot apply creates every exported object on a
// cluster where no operator runs, so what is exported must be harmless there:
//
//   - nothing that makes a component act: a Pod bound to the node is run by the kubelet (an installer or pruner
//     pod emulated offline would lay out a revision a second time);
//   - nothing a live component owns: the kubelet registers its own Node, processes hold their own Leases;
//   - nothing that intercepts requests to a server that does not run: no admission webhook server runs without
//     operators (a webhook that fails closed blocks every write it matches), and no aggregated API server does
//     (an unavailable APIService breaks discovery, namespace deletion and garbage collection);
//   - no records of the render: its Events, and the CertificateSigningRequests of the emulated approvals (a copy
//     created on the cluster would be a pending request from the admin, forever);
//   - nothing that can never be created: the monitoring stack's objects (ServiceMonitors, PrometheusRules) need
//     CRDs that only the monitoring operator installs, and it does not run on this cluster.
//
// Operator resources (operator.openshift.io) stay: with no operator running they are inert, and they describe
// the revisions laid out on the node. Objects whose kind the cluster does not serve yet are not dropped here:
// the first-boot apply retries them and reports them (docs/node.md).
var ExportRules = []ExportRule{
	{Name: "pods", Why: "the kubelet would run a Pod bound to the node (emulated installer pods would reinstall a revision)",
		Match: kind("", "Pod")},
	{Name: "nodes", Why: "the kubelet registers and owns its Node",
		Match: kind("", "Node")},
	{Name: "leases", Why: "leader-election and heartbeat leases belong to running processes",
		Match: kind("coordination.k8s.io", "Lease")},
	{Name: "events", Why: "events are the render's history, not state",
		Match: func(m export.Manifest) bool { return kind("", "Event")(m) || kind("events.k8s.io", "Event")(m) }},
	{Name: "certificate-signing-requests", Why: "records of approvals emulated at render time; created again they would stay pending",
		Match: kind("certificates.k8s.io", "CertificateSigningRequest")},
	{Name: "admission-webhooks", Why: "no webhook server runs without operators; a webhook failing closed blocks the writes it matches",
		Match: func(m export.Manifest) bool {
			return kind("admissionregistration.k8s.io", "ValidatingWebhookConfiguration")(m) ||
				kind("admissionregistration.k8s.io", "MutatingWebhookConfiguration")(m)
		}},
	{Name: "monitoring", Why: "the monitoring stack's kinds are CRDs its operator installs, and it does not run here: they could never be created",
		Match: func(m export.Manifest) bool { return m.GVK.Group == "monitoring.coreos.com" }},
	{Name: "aggregated-apis", Why: "no aggregated API server runs without operators; an unavailable APIService breaks discovery, namespace deletion and garbage collection",
		Match: func(m export.Manifest) bool {
			if !kind("apiregistration.k8s.io", "APIService")(m) {
				return false
			}
			spec, _ := m.Object["spec"].(map[string]any)
			return spec != nil && spec["service"] != nil
		}},
}

// FilterExport is the one place that decides which exported objects must not be created on the live cluster (see
// ExportRules), and in which shape the others are: a legacy service-account token secret (type
// kubernetes.io/service-account-token) is kept without the token, ca.crt and namespace the render's emulated token
// controller wrote and without its kubernetes.io/service-account.uid annotation (rule LegacyTokenRule), since both
// name the UID of the render's ServiceAccount; the live kube-controller-manager fills it for the live account, and
// aiokube copies the live token to the node (legacytokens.go). One that cannot be rewritten is dropped rather than
// exported with the render's token.
//
// The pipeline's export calls it on every manifest before anything is written; it returns the manifests to keep,
// in order, and the dropped ones with the rule that matched.
func FilterExport(ms []export.Manifest) (kept []export.Manifest, dropped []Dropped) {
	for _, m := range ms {
		rule := ""
		for _, r := range ExportRules {
			if r.Match(m) {
				rule = r.Name
				break
			}
		}
		if rule == "" && IsLegacyToken(m) {
			if req, err := asTokenRequest(m); err != nil {
				rule = LegacyTokenRule
			} else {
				m = req
			}
		}
		if rule != "" {
			dropped = append(dropped, Dropped{File: m.File, Rule: rule})
			continue
		}
		kept = append(kept, m)
	}
	return kept, dropped
}
