// Package staticpod describes a component's static pod the way a static-pod operator hands it to library-go's
// revision controller and installer pod, and builds the revision loop from that description.
package staticpod

import (
	"fmt"
	"strings"

	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/revisioncontroller"

	"github.com/render-static/render-static/pkg/loops"
)

// Resource names a configmap or secret a static pod needs, and whether it may be missing.
type Resource struct {
	Name     string
	Optional bool
}

// Names declares resources by name, in order; a name ending in "?" is optional ("cloud-config?").
func Names(names ...string) []Resource {
	out := make([]Resource, 0, len(names))
	for _, n := range names {
		name, optional := strings.CutSuffix(n, "?")
		out = append(out, Resource{Name: name, Optional: optional})
	}
	return out
}

// StaticPod is what a static-pod operator hands its revision controller and installer: the operand namespace,
// the pod configmap, the revisioned configmaps and secrets (copied as <name>-<revision> by the revision
// controller), and the unrevisioned ones kept live in the cert directory.
type StaticPod struct {
	Namespace string
	// PodConfigMap is the pod configmap's name without revision ("kube-apiserver-pod"); it is also the
	// manifest's file name.
	PodConfigMap string
	// ConfigMaps and Secrets are revisioned; ConfigMaps[0] must be PodConfigMap.
	ConfigMaps, Secrets []Resource
	// CertDir is the directory under the resource dir for the unrevisioned resources ("kube-apiserver-certs").
	CertDir                     string
	CertConfigMaps, CertSecrets []Resource
}

func revisionResources(in []Resource) []revisioncontroller.RevisionResource {
	out := make([]revisioncontroller.RevisionResource, 0, len(in))
	for _, r := range in {
		out = append(out, revisioncontroller.RevisionResource{Name: r.Name, Optional: r.Optional})
	}
	return out
}

// RevisionLoop is library-go's revision controller for the static pod, as a loop named "revision/<component>".
// It belongs in the revision phase, after every converge loop settled: run earlier, a later change of an input
// would make a revision 2.
func RevisionLoop(c *loops.Cluster, component string, sp StaticPod, operator loops.StaticPodOperator, recorder events.Recorder) (loops.Loop, error) {
	if len(sp.ConfigMaps) == 0 || sp.ConfigMaps[0].Name != sp.PodConfigMap {
		return loops.Loop{}, fmt.Errorf("%s: the first revisioned configmap must be the pod configmap %s", component, sp.PodConfigMap)
	}
	ctrl := revisioncontroller.NewRevisionController(component, sp.Namespace,
		revisionResources(sp.ConfigMaps), revisionResources(sp.Secrets),
		c.KubeInformers.InformersFor(sp.Namespace), operator, c.Kube.CoreV1(), c.Kube.CoreV1(), recorder, nil)
	return loops.ControllerLoop("revision/"+component, ctrl, recorder), nil
}

// RevisionLoops is the revision phase of a component: its RevisionLoop alone.
func RevisionLoops(c *loops.Cluster, component string, sp StaticPod, operator loops.StaticPodOperator, recorder events.Recorder) ([]loops.Loop, error) {
	l, err := RevisionLoop(c, component, sp, operator, recorder)
	if err != nil {
		return nil, err
	}
	return []loops.Loop{l}, nil
}

// LatestRevision is the operator's latestAvailableRevision.
func LatestRevision(operator loops.StaticPodOperator) (int, error) {
	_, status, _, err := operator.GetStaticPodOperatorState()
	if err != nil {
		return 0, err
	}
	return int(status.LatestAvailableRevision), nil
}
