package controllermanager

import (
	"strings"

	configlistersv1 "github.com/openshift/client-go/config/listers/config/v1"
	"github.com/openshift/library-go/pkg/operator/configobserver"
	"github.com/openshift/library-go/pkg/operator/configobserver/apiserver"
	"github.com/openshift/library-go/pkg/operator/configobserver/network"
	"github.com/openshift/library-go/pkg/operator/configobserver/proxy"
	"github.com/openshift/library-go/pkg/operator/events"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

// Paths of the observed config the target config reads.
var (
	clusterNamePath    = []string{"extendedArguments", "cluster-name"}
	clusterCIDRPath    = []string{"extendedArguments", "cluster-cidr"}
	serviceIPRangePath = []string{"extendedArguments", "service-cluster-ip-range"}
	featureGatesArg    = []string{"extendedArguments", "feature-gates"}
	featureGatesPath   = []string{"featureGates"}
	serviceCAPath      = []string{"serviceServingCert", "certFile"}
)

// serviceCAFile is where the installer lays out the service-ca configmap of a revision.
const serviceCAFile = "/etc/kubernetes/static-pod-resources/configmaps/service-ca/ca-bundle.crt"

// configObserver is library-go's config observer with kube-controller-manager's observers: the cluster name
// (infrastructure name), cluster and service networks, feature gates (as the --feature-gates argument and as the
// featureGates list cluster-policy-controller reads), the cluster-wide proxy (environment of the pod), the service
// CA file once the service-ca configmap was synced, and the API server's TLS profile.
func (k *Component) configObserver() loops.Loop {
	l := k.Listers()
	l.ConfigMaps = k.Cluster.KubeInformers.InformersFor(TargetNamespace).Core().V1().ConfigMaps().Lister()
	return k.ConfigObserverLoop(l,
		observeClusterName,
		observeNetworks(clusterCIDRPath, network.GetClusterCIDRs, true),
		observeNetworks(serviceIPRangePath, network.GetServiceCIDRs, false),
		operator.ObserveFeatureGates(k.Features, featureGatesArg...),
		operator.ObserveFeatureGates(k.Features, featureGatesPath...),
		proxy.NewProxyObserveFunc(operator.ProxyPath),
		observeServiceCA,
		apiserver.ObserveTLSSecurityProfile,
	)
}

// previous returns existing's value at path as a config of its own, what an observer keeps when it cannot read
// its input.
func previous(existing map[string]interface{}, path []string) map[string]interface{} {
	out := map[string]interface{}{}
	if v, found, _ := unstructured.NestedFieldCopy(existing, path...); found {
		_ = unstructured.SetNestedField(out, v, path...)
	}
	return out
}

// observeClusterName: --cluster-name is the infrastructure name (which names cloud resources), read from
// Infrastructure status.infrastructureName; it never changes for the life of a cluster.
func observeClusterName(generic configobserver.Listers, recorder events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
	l := generic.(operator.Listers)
	infra, err := l.Infrastructure.Get("cluster")
	if err != nil {
		if apierrors.IsNotFound(err) {
			recorder.Warningf("ObserveInfraID", "infrastructures.config.openshift.io/cluster not found")
			return previous(existing, clusterNamePath), nil
		}
		return previous(existing, clusterNamePath), []error{err}
	}
	if infra.Status.InfrastructureName == "" {
		recorder.Warningf("ObserveInfraID", "infrastructures.config.openshift.io/cluster has no status.infrastructureName")
		return previous(existing, clusterNamePath), nil
	}
	out := map[string]interface{}{}
	err = unstructured.SetNestedStringSlice(out, []string{infra.Status.InfrastructureName}, clusterNamePath...)
	return out, errs(err)
}

// observeNetworks is the observer of path, the networks of Network status that get reads (cluster or service
// networks), joined by commas into one value (one flag for dual stack), as cluster-kube-controller-manager-operator
// pkg/operator/configobservation/network/observe_network.go (ObserveClusterCIDRs, ObserveServiceClusterIPRanges)
// does. Without a Network, the cluster networks' observer sets nothing (omitEmpty), the service networks' one an
// empty value.
func observeNetworks(path []string, get func(configlistersv1.NetworkLister, events.Recorder) ([]string, error), omitEmpty bool) configobserver.ObserveConfigFunc {
	return func(generic configobserver.Listers, recorder events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
		cidrs, err := get(generic.(operator.Listers).Network, recorder)
		if err != nil {
			return previous(existing, path), []error{err}
		}
		out := map[string]interface{}{}
		if len(cidrs) > 0 || !omitEmpty {
			err = unstructured.SetNestedStringSlice(out, []string{strings.Join(cidrs, ",")}, path...)
		}
		return out, errs(err)
	}
}

// observeServiceCA points serviceServingCert.certFile at the service CA bundle, once resource sync copied a
// non-empty openshift-config-managed/service-ca into the operand namespace (kube-controller-manager publishes it
// as service-ca.crt in every namespace's openshift-service-ca.crt configmap).
func observeServiceCA(generic configobserver.Listers, recorder events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
	l := generic.(operator.Listers)
	out := map[string]interface{}{}
	cm, err := l.ConfigMaps.ConfigMaps(TargetNamespace).Get("service-ca")
	if apierrors.IsNotFound(err) {
		return out, nil
	}
	if err != nil {
		return previous(existing, serviceCAPath), []error{err}
	}
	if cm.Data["ca-bundle.crt"] == "" {
		return out, nil
	}
	err = unstructured.SetNestedField(out, serviceCAFile, serviceCAPath...)
	return out, errs(err)
}

func errs(err error) []error {
	if err == nil {
		return nil
	}
	return []error{err}
}
