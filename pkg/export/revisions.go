package export

import (
	"strconv"
	"strings"

	"github.com/render-static/render-static/pkg/staticpod"
)

// RevisionStatusPrefix names library-go's revision status configmaps, revision-status-<N>, one per revision of a
// static pod's namespace (revisioncontroller/revision_controller.go, createRevisionStatus), which own that
// revision's copies.
const RevisionStatusPrefix = "revision-status-"

// SucceededRevisionLimit and FailedRevisionLimit are the revisions the operators' prune controller keeps: library-go
// pkg/operator/staticpod/controller/prune/prune_controller.go (defaultRevisionLimit, defaultedLimits) takes
// spec.succeededRevisionLimit and spec.failedRevisionLimit, 0 meaning 5 (openshift/api operator/v1 types.go,
// StaticPodOperatorSpec: "the number of successful [failed] static pod installer revisions to keep on disk and in
// the api"), and no operator sets them (cluster-kube-apiserver-operator
// manifests/0000_20_kube-apiserver-operator_01_operator.cr.yaml has a spec of managementState only; the render's
// operator resources set none either).
const (
	SucceededRevisionLimit = 5
	FailedRevisionLimit    = 5
)

// Revisioned is a static pod and the revision its node runs.
type Revisioned struct {
	Pod      staticpod.StaticPod
	Revision int
}

// PruneRevisions keeps, of the revision controller's copies (a revisioned configmap or secret <name>-<N> of the
// pod's namespace, and revision-status-<N>), those of the revision each static pod runs; it returns the kept
// manifests in order and the file names of the dropped ones.
//
// Which revisions the prune controller keeps (revisionsToKeep, prune_controller.go): for every node its
// currentRevision and the succeededRevisionLimit-1 revisions installed before it, its targetRevision and
// lastFailedRevision and the failedRevisionLimit-1 before them, and the latest revision with its predecessors
// while a node has not reached it; it deletes the other revision-status-<N> configmaps, and with them (their owner)
// the copies, and the other revision directories on disk. revisionsToKeep counts revisions by number, as on a live
// cluster, where every revision up to the latest is installed in turn. A node installed from aio.ign has installed
// exactly one: the revision it boots at, which is every component's latest (its currentRevision, with no target
// or failed revision). Revisions a re-render rolled before any install (a correction of --node-ip makes one)
// never ran on any node, so none of them counts against the limits; what the limits keep of a node installed from
// aio.ign is its current revision, and that is what aio.ign carries (the installer layout has only that revision's
// directory already, Install). The render's state keeps every revision (pkg/state): renew and the worker command
// continue from it, and the update for a running node carries the revisions it does not have (pkg/renew).
func PruneRevisions(ms []Manifest, pods []Revisioned) (kept []Manifest, dropped []string) {
	current := map[string]int{}        // namespace → the revision its static pod runs
	bases := map[revisionedName]bool{} // the names of what the revision controller copies, by namespace
	for _, p := range pods {
		sp := p.Pod
		current[sp.Namespace] = p.Revision
		for _, r := range sp.ConfigMaps {
			bases[revisionedName{sp.Namespace, "ConfigMap", r.Name}] = true
		}
		for _, r := range sp.Secrets {
			bases[revisionedName{sp.Namespace, "Secret", r.Name}] = true
		}
		bases[revisionedName{sp.Namespace, "ConfigMap", strings.TrimSuffix(RevisionStatusPrefix, "-")}] = true
	}
	for _, m := range ms {
		if n, ok := revisionOf(m, bases); ok {
			if cur, has := current[m.Namespace]; has && n != cur {
				dropped = append(dropped, m.File)
				continue
			}
		}
		kept = append(kept, m)
	}
	return kept, dropped
}

// revisionOf is the revision a manifest is a revision copy of: a core ConfigMap or Secret named <base>-<N>, where
// <base> is one of bases in its namespace and N > 0.
func revisionOf(m Manifest, bases map[revisionedName]bool) (int, bool) {
	if m.GVK.Group != "" || (m.GVK.Kind != "ConfigMap" && m.GVK.Kind != "Secret") {
		return 0, false
	}
	i := strings.LastIndexByte(m.Name, '-')
	if i <= 0 {
		return 0, false
	}
	n, err := strconv.Atoi(m.Name[i+1:])
	if err != nil || n <= 0 || strconv.Itoa(n) != m.Name[i+1:] {
		return 0, false
	}
	if !bases[revisionedName{m.Namespace, m.GVK.Kind, m.Name[:i]}] {
		return 0, false
	}
	return n, true
}

// revisionedName is a configmap or secret the revision controller copies: its namespace, kind and name.
type revisionedName struct{ namespace, kind, name string }
