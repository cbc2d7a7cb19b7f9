package node

import (
	"fmt"
	"regexp"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/export"
)

// Legacy service-account tokens minted offline.
//
// The render's stand-in for kube-controller-manager's token controller (emulate.LegacyServiceAccountTokens)
// fills every secret of type kubernetes.io/service-account-token with a JWT naming the UID its ServiceAccount has
// in the render's cluster, and the installer layout copies the token into every revision directory that uses the
// secret (<ResourceDir>/<pod>-<N>/secrets/<secret>/token), where the static pods' kubeconfigs read it (tokenFile).
// On the live cluster aiokube creates the ServiceAccount anew, with a new UID. Then kube-apiserver (service-account
// lookup) rejects the render's token, and kube-controller-manager's token controller (k8s.io/kubernetes v1.34.3,
// pkg/controller/serviceaccount/tokens_controller.go) deletes a token secret whose
// kubernetes.io/service-account.uid names no existing account, and never replaces a token that is present.
//
// So the fix has two halves:
//   - export (FilterExport, rule LegacyTokenRule): the secret is exported as one asks for a token: type and
//     kubernetes.io/service-account.name, without the keys the controller owns (token, ca.crt, namespace) and
//     without the uid annotation; the live controller then fills it for the live account;
//   - first boot (aiokube.sh, sync_legacy_tokens): once the live secret carries a token and the live account's UID,
//     aiokube writes that token (and ca.crt when it differs) into every revision directory the installer wrote
//     for the secret. The revision files aio.ign lays down keep the render's token (what conformance compares).

// LegacyTokenRule names the export rewrite of legacy service-account token secrets.
const LegacyTokenRule = "legacy-service-account-tokens"

// TokenWaitSeconds bounds aiokube's wait, for all token secrets together, until kube-controller-manager filled them.
const TokenWaitSeconds = 600

// legacyTokenKeys are the keys of a token secret that kube-controller-manager's token controller writes.
var legacyTokenKeys = []string{corev1.ServiceAccountTokenKey, corev1.ServiceAccountRootCAKey, corev1.ServiceAccountNamespaceKey}

// IsLegacyToken says whether a manifest is a secret of type kubernetes.io/service-account-token.
func IsLegacyToken(m export.Manifest) bool {
	t, _ := m.Object["type"].(string)
	return kind("", "Secret")(m) && t == string(corev1.SecretTypeServiceAccountToken)
}

// asTokenRequest returns a legacy token secret as one asks the token controller for a token: the keys the
// controller writes and the uid annotation removed, everything else (type, the service-account name) as it is.
// The manifest passed in is not changed.
func asTokenRequest(m export.Manifest) (export.Manifest, error) {
	obj := make(map[string]any, len(m.Object))
	for k, v := range m.Object {
		obj[k] = v
	}
	if data, ok := m.Object["data"].(map[string]any); ok {
		kept := map[string]any{}
		for k, v := range data {
			kept[k] = v
		}
		for _, k := range legacyTokenKeys {
			delete(kept, k)
		}
		delete(obj, "data")
		if len(kept) > 0 {
			obj["data"] = kept
		}
	}
	if md, ok := m.Object["metadata"].(map[string]any); ok {
		md2 := make(map[string]any, len(md))
		for k, v := range md {
			md2[k] = v
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			ann2 := map[string]any{}
			for k, v := range ann {
				if k != corev1.ServiceAccountUIDKey {
					ann2[k] = v
				}
			}
			md2["annotations"] = ann2
		}
		obj["metadata"] = md2
	}
	b, err := yaml.Marshal(obj)
	if err != nil {
		return export.Manifest{}, fmt.Errorf("%s: %w", m.File, err)
	}
	m.Object, m.YAML = obj, b
	return m, nil
}

// kubeName is what a namespace, secret or service-account name may be (DNS subdomain characters): nothing aiokube
// splits its list on ('/', spaces) or that a file name cannot hold.
var kubeName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)

// legacyTokens are the exported token secrets aiokube waits for, as namespace/secret/serviceaccount, sorted.
func legacyTokens(ms []export.Manifest) ([]string, error) {
	var out []string
	for _, m := range ms {
		if !IsLegacyToken(m) {
			continue
		}
		md, _ := m.Object["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		sa, _ := ann[corev1.ServiceAccountNameKey].(string)
		for _, n := range []string{m.Namespace, m.Name, sa} {
			if !kubeName.MatchString(n) {
				return nil, fmt.Errorf("%s: token secret %s/%s of service account %q: not a valid name: %q", m.File, m.Namespace, m.Name, sa, n)
			}
		}
		out = append(out, m.Namespace+"/"+m.Name+"/"+sa)
	}
	sort.Strings(out)
	return out, nil
}
