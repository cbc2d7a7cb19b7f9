package scheduler

import (
	"github.com/openshift/library-go/pkg/operator/configobserver"
	"github.com/openshift/library-go/pkg/operator/configobserver/apiserver"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resourcesynccontroller"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/operator"
)

// configObserver is library-go's config observer with kube-scheduler's observers: the scheduler policy configmap
// and the API server's TLS profile (which becomes --tls-cipher-suites/--tls-min-version).
func (s *Component) configObserver() loops.Loop {
	return s.ConfigObserverLoop(s.Listers(), observeSchedulerPolicy, apiserver.ObserveTLSSecurityProfile)
}

// observeSchedulerPolicy keeps policy-configmap in the operand namespace a copy of openshift-config/<Scheduler
// spec.policy.name>, or deletes it when no policy is named (through the resource syncer). Policies were removed
// upstream; the target config refuses a named one.
func observeSchedulerPolicy(generic configobserver.Listers, recorder events.Recorder, existing map[string]interface{}) (map[string]interface{}, []error) {
	l := generic.(operator.Listers)
	dest := resourcesynccontroller.ResourceLocation{Namespace: TargetNamespace, Name: "policy-configmap"}
	src := resourcesynccontroller.ResourceLocation{}
	sched, err := l.Scheduler.Get("cluster")
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return existing, []error{err}
	case sched.Spec.Policy.Name != "":
		src = resourcesynccontroller.ResourceLocation{Namespace: ConfigNamespace, Name: sched.Spec.Policy.Name}
	}
	if err := l.Sync.SyncConfigMap(dest, src); err != nil {
		return existing, []error{err}
	}
	return map[string]interface{}{}, nil
}
