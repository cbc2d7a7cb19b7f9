package clusterconfig

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/api/features"
	configlisters "github.com/openshift/client-go/config/listers/config/v1"
	"github.com/openshift/library-go/pkg/operator/configobserver/featuregates"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/loops"
)

// The feature gates of a render have ONE source: featuregates.config.openshift.io/cluster, seeded by Objects with
// its status already written, and read by every component through FeatureGates (the way the operators read it
// through library-go's feature-gate accessor).
//
// Where each part comes from:
//
//	spec.featureSet, spec.customNoUpgrade   the installer's FeatureGate manifest from install-config featureSet and
//	                                        featureGates ("Name=true" → enabled, "Name=false" → disabled)
//	                                        (openshift/installer pkg/asset/manifests/featuregate.go)
//	status.featureGates[0]                  what the render step of the payload writes before any operator runs
//	                                        (openshift/api payload-command/render/render.go, which took this over from
//	                                        cluster-config-operator; its FeatureGateController
//	                                        pkg/operator/featuregates/featuregate_controller.go keeps the same
//	                                        result): for a named feature set the gates the pinned openshift/api
//	                                        declares for that set on the self-managed cluster profile; for
//	                                        CustomNoUpgrade the Default set's gates with the custom enabled and
//	                                        disabled lists applied on top. Both lists sorted by name. The pinned
//	                                        openshift/api has no gate with a minimum component version, so the
//	                                        minimum-kubelet-version step of that render changes nothing here.
//	include.release.openshift.io/...        the render marks a non-custom FeatureGate for the cluster profile.
//
// Who reads the gates: kube-apiserver's config observer (--feature-gates, the --runtime-config the gates imply,
// PodSecurity defaults; pkg/apiserver), kube-controller-manager's (--feature-gates, cluster-policy-controller's
// featureGates) and kube-scheduler's target config (--feature-gates). etcd reads none that change a render:
// cluster-etcd-operator uses EtcdBackendQuota only with an Etcd spec.backendQuotaGiB, which a render never sets
// (pkg/etcdenvvar/etcd_env.go: 8 GiB either way), and ShortCertRotation (pkg/operator/etcdcertsigner), which
// installconfig.Validate refuses; its pod's --feature-gates=InitialCorruptCheck=true is etcd's own and fixed.
const featureGateName = "cluster"

// ClusterProfile is the cluster profile of every render: single-node clusters are self-managed high availability
// for the payload render (openshift/api payload-command/render/render.go maps single-node-developer onto it).
var ClusterProfile = features.SelfManaged

// DefaultPayloadVersion is the version the FeatureGate status is written for when the operator image carries no
// tag (a digest pull spec): the payload render's own default (cluster-config-operator pkg/cmd/render/render.go).
const DefaultPayloadVersion = "0.0.1-snapshot"

// PayloadVersion is the release version of the render: the release input's version (the payload's
// release-metadata version, which the operators' OPERATOR_IMAGE_VERSION is in a real cluster), else the tag of the
// kube-apiserver operator image (where the operators take OPERATOR_IMAGE_VERSION from), or DefaultPayloadVersion.
func (in *Inputs) PayloadVersion() string {
	if in.Release != nil && in.Release.Version != "" {
		return in.Release.Version
	}
	if tag := imageTag(in.Images["cluster-kube-apiserver-operator"]); tag != "" {
		return tag
	}
	return DefaultPayloadVersion
}

// OperatorVersion is the OPERATOR_IMAGE_VERSION an operator gives its pods (operator.ImageTag of its image without a
// release input): with a release, the release's version, as in a cluster, where the cluster-version operator sets
// the operators' OPERATOR_IMAGE_VERSION to the release's version and each copies its own into its pods; the pods'
// feature-gate readers then find the FeatureGate status of that version (PayloadVersion).
func (in *Inputs) OperatorVersion(operatorImage string) string {
	if in.Release != nil && in.Release.Version != "" {
		return in.Release.Version
	}
	return imageTag(operatorImage)
}

func imageTag(pullSpec string) string {
	if pullSpec == "" || strings.Contains(pullSpec, "@") {
		return ""
	}
	slash := strings.LastIndex(pullSpec, "/")
	if i := strings.LastIndex(pullSpec, ":"); i > slash {
		return pullSpec[i+1:]
	}
	return ""
}

// CustomGates splits install-config featureGates ("Name=true|false", checked by installconfig.Validate) into the
// enabled and disabled lists of spec.customNoUpgrade, in the order given.
func CustomGates(ic *installconfig.InstallConfig) (enabled, disabled []configv1.FeatureGateName, err error) {
	for i, g := range ic.FeatureGates {
		name, value, ok := strings.Cut(g, "=")
		on, err := strconv.ParseBool(value) // the installer's reading of the value (True, 1, t... too)
		switch {
		case !ok || name == "" || err != nil:
			return nil, nil, fmt.Errorf("featureGates[%d]: %q is not Name=true or Name=false", i, g)
		case on:
			enabled = append(enabled, configv1.FeatureGateName(name))
		default:
			disabled = append(disabled, configv1.FeatureGateName(name))
		}
	}
	return enabled, disabled, nil
}

// FeatureGate is featuregates.config.openshift.io/cluster as the installer creates it and the payload render
// completes it (see the table above).
func FeatureGate(in *Inputs) (*configv1.FeatureGate, error) {
	ic := in.InstallConfig
	fg := &configv1.FeatureGate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "config.openshift.io/v1", Kind: "FeatureGate"},
		ObjectMeta: metav1.ObjectMeta{Name: featureGateName},
		Spec: configv1.FeatureGateSpec{FeatureGateSelection: configv1.FeatureGateSelection{
			FeatureSet: configv1.FeatureSet(ic.FeatureSet),
		}},
	}
	details := configv1.FeatureGateDetails{Version: in.PayloadVersion()}
	if fg.Spec.FeatureSet == configv1.CustomNoUpgrade {
		enabled, disabled, err := CustomGates(ic)
		if err != nil {
			return nil, err
		}
		fg.Spec.CustomNoUpgrade = &configv1.CustomFeatureGates{Enabled: enabled, Disabled: disabled}
		def, err := features.FeatureSets(ClusterProfile, configv1.Default)
		if err != nil {
			return nil, err
		}
		custom := map[configv1.FeatureGateName]bool{}
		for _, n := range enabled {
			custom[n] = true
		}
		for _, n := range disabled {
			if custom[n] {
				return nil, fmt.Errorf("featureGates: %s is both enabled and disabled", n)
			}
		}
		for _, n := range enabled {
			details.Enabled = append(details.Enabled, configv1.FeatureGateAttributes{Name: n})
		}
		for _, n := range disabled {
			details.Disabled = append(details.Disabled, configv1.FeatureGateAttributes{Name: n})
		}
		for _, g := range def.Enabled {
			if !custom[g.FeatureGateAttributes.Name] && !contains(disabled, g.FeatureGateAttributes.Name) {
				details.Enabled = append(details.Enabled, configv1.FeatureGateAttributes{Name: g.FeatureGateAttributes.Name})
			}
		}
		for _, g := range def.Disabled {
			if !custom[g.FeatureGateAttributes.Name] && !contains(disabled, g.FeatureGateAttributes.Name) {
				details.Disabled = append(details.Disabled, configv1.FeatureGateAttributes{Name: g.FeatureGateAttributes.Name})
			}
		}
	} else {
		fg.Annotations = map[string]string{string(ClusterProfile): "true"}
		set := fg.Spec.FeatureSet
		if set == "" {
			set = configv1.Default
		}
		gates, err := features.FeatureSets(ClusterProfile, set)
		if err != nil {
			return nil, fmt.Errorf("featureSet: %w", err)
		}
		for _, g := range gates.Enabled {
			details.Enabled = append(details.Enabled, configv1.FeatureGateAttributes{Name: g.FeatureGateAttributes.Name})
		}
		for _, g := range gates.Disabled {
			details.Disabled = append(details.Disabled, configv1.FeatureGateAttributes{Name: g.FeatureGateAttributes.Name})
		}
	}
	byName := func(l []configv1.FeatureGateAttributes) func(i, j int) bool {
		return func(i, j int) bool { return l[i].Name < l[j].Name }
	}
	sort.Slice(details.Enabled, byName(details.Enabled))
	sort.Slice(details.Disabled, byName(details.Disabled))
	fg.Status.FeatureGates = []configv1.FeatureGateDetails{details}
	return fg, nil
}

func contains(l []configv1.FeatureGateName, n configv1.FeatureGateName) bool {
	for _, x := range l {
		if x == n {
			return true
		}
	}
	return false
}

// FeatureGates is the feature-gate access every component's loops read, in place of the accessor a running
// operator starts (library-go featuregates.NewFeatureGateAccess, which follows featuregates.config.openshift.io/
// cluster and exits the process when the gates change). Like that accessor it takes the status entry of the
// payload version, and fails when the FeatureGate or that entry is missing; it reads the cluster at every call,
// so it never goes stale within a render. There is no other source of gates.
func FeatureGates(c *loops.Cluster, in *Inputs) featuregates.FeatureGateAccess {
	return &featureGateAccess{lister: c.ConfigInformers.Config().V1().FeatureGates().Lister(), version: in.PayloadVersion()}
}

type featureGateAccess struct {
	lister  configlisters.FeatureGateLister
	version string
}

var observed = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

func (f *featureGateAccess) SetChangeHandler(featuregates.FeatureGateChangeHandlerFunc) {}
func (f *featureGateAccess) Run(context.Context)                                        {}
func (f *featureGateAccess) InitialFeatureGatesObserved() <-chan struct{}               { return observed }
func (f *featureGateAccess) AreInitialFeatureGatesObserved() bool                       { return true }

func (f *featureGateAccess) CurrentFeatureGates() (featuregates.FeatureGate, error) {
	fg, err := f.lister.Get(featureGateName)
	if err != nil {
		return nil, fmt.Errorf("featuregates.config.openshift.io/%s: %w", featureGateName, err)
	}
	access, err := featuregates.NewHardcodedFeatureGateAccessFromFeatureGate(fg, f.version)
	if err != nil {
		return nil, err
	}
	return access.CurrentFeatureGates()
}
