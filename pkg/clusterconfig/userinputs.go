package clusterconfig

import (
	"encoding/pem"
	"strings"

	"github.com/openshift/api/annotations"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/installconfig"
)

// Names of the objects the installer makes from the install-config's mirrors and trust bundle.
const (
	// ImageDigestMirrorSetName: openshift/installer pkg/asset/manifests/imagedigestmirrorset.go
	// (ConvertImageDigestMirrorSet), from imageDigestSources.
	ImageDigestMirrorSetName = "image-digest-mirror"
	// ImageContentSourcePolicyName: the ImageContentSourcePolicy the installer writes from the deprecated
	// imageContentSources (the name installer-made clusters carry).
	ImageContentSourcePolicyName = "image-policy"
	// UserCABundleName is openshift-config/user-ca-bundle: openshift/installer
	// pkg/asset/manifests/additionaltrustbundleconfig.go.
	UserCABundleName = "user-ca-bundle"
	// UserCABundleKey is its key.
	UserCABundleKey = "ca-bundle.crt"
)

// mirrorSets are the installer's mirror-set object for the install-config: an ImageDigestMirrorSet for
// imageDigestSources (with each entry's sourcePolicy), an ImageContentSourcePolicy for the deprecated
// imageContentSources (validation refuses both at once). Nothing without mirrors.
func mirrorSets(ic *installconfig.InstallConfig) []runtime.Object {
	var out []runtime.Object
	if len(ic.ImageDigestSources) > 0 {
		idms := &configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: ImageDigestMirrorSetName}}
		for _, s := range ic.ImageDigestSources {
			e := configv1.ImageDigestMirrors{Source: s.Source, MirrorSourcePolicy: configv1.MirrorSourcePolicy(s.SourcePolicy)}
			for _, m := range s.Mirrors {
				e.Mirrors = append(e.Mirrors, configv1.ImageMirror(m))
			}
			idms.Spec.ImageDigestMirrors = append(idms.Spec.ImageDigestMirrors, e)
		}
		out = append(out, idms)
	}
	if len(ic.ImageContentSources) > 0 {
		icsp := &operatorv1alpha1.ImageContentSourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: ImageContentSourcePolicyName}}
		for _, s := range ic.ImageContentSources {
			icsp.Spec.RepositoryDigestMirrors = append(icsp.Spec.RepositoryDigestMirrors,
				operatorv1alpha1.RepositoryDigestMirrors{Source: s.Source, Mirrors: append([]string(nil), s.Mirrors...)})
		}
		out = append(out, icsp)
	}
	return out
}

// UserCABundle is the additional trust bundle as the installer stores it (additionaltrustbundleconfig.go): every
// PEM block re-encoded and concatenated, nothing between them. Empty without a trust bundle. The node's trust
// anchor (pkg/node) carries the same bytes.
func UserCABundle(ic *installconfig.InstallConfig) string {
	var b strings.Builder
	rest := []byte(ic.AdditionalTrustBundle)
	for {
		block, r := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = r
		b.Write(pem.EncodeToMemory(block))
	}
	return b.String()
}

// userCABundle is openshift-config/user-ca-bundle, owned by the "End User" as the installer marks it.
func userCABundle(ic *installconfig.InstallConfig) *corev1.ConfigMap {
	bundle := UserCABundle(ic)
	if bundle == "" {
		return nil
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-config", Name: UserCABundleName,
			Annotations: map[string]string{annotations.OpenShiftComponent: "End User"}},
		Data: map[string]string{UserCABundleKey: bundle},
	}
}

// proxyTrustsUserCA says whether Proxy spec.trustedCA names user-ca-bundle: openshift/installer
// pkg/asset/manifests/proxy.go sets it when there is a trust bundle and either a proxy section or
// additionalTrustBundlePolicy Always (the default Proxyonly leaves it out without a proxy).
func proxyTrustsUserCA(ic *installconfig.InstallConfig) bool {
	if UserCABundle(ic) == "" {
		return false
	}
	return ic.AdditionalTrustBundlePolicy == installconfig.PolicyAlways || ic.Proxy != nil
}
