package operator

import (
	configlisters "github.com/openshift/client-go/config/listers/config/v1"
	"github.com/openshift/library-go/pkg/operator/configobserver/featuregates"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Listers is what the config observers of every operator read, as one configobserver.Listers: library-go's
// observers assert the small interfaces they need (APIServerLister, ConfigMapLister, SecretLister, ProxyLister,
// InfrastructureLister), ours assert Listers and use the fields. A component fills the fields its observers read.
type Listers struct {
	Sync           resourcesynccontroller.ResourceSyncer
	APIServer      configlisters.APIServerLister
	Authentication configlisters.AuthenticationLister
	Infrastructure configlisters.InfrastructureLister
	Network        configlisters.NetworkLister
	Proxy          configlisters.ProxyLister
	Scheduler      configlisters.SchedulerLister
	ConfigMaps     corelisters.ConfigMapLister
	Secrets        corelisters.SecretLister
	FeatureGates   featuregates.FeatureGateAccess
}

func (l Listers) ResourceSyncer() resourcesynccontroller.ResourceSyncer    { return l.Sync }
func (l Listers) PreRunHasSynced() []cache.InformerSynced                  { return nil }
func (l Listers) APIServerLister() configlisters.APIServerLister           { return l.APIServer }
func (l Listers) ConfigMapLister() corelisters.ConfigMapLister             { return l.ConfigMaps }
func (l Listers) SecretLister() corelisters.SecretLister                   { return l.Secrets }
func (l Listers) ProxyLister() configlisters.ProxyLister                   { return l.Proxy }
func (l Listers) InfrastructureLister() configlisters.InfrastructureLister { return l.Infrastructure }
