package pipeline

import (
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/state"
)

// aheadManifests are the manifests of a loaded state's objects, made on a goroutine of their own while the loops
// run: on a re-render nearly every object comes out of the loops exactly as it was loaded (reflect.DeepEqual,
// state.LoadedIndex), and export.ToManifest, a function of the object alone, then gives what it gave for the
// loaded one. What is not ready when the export starts is made by the export itself.
type aheadManifests struct {
	from  *state.State
	ms    []export.Manifest
	ready []atomic.Bool // ms[i] is there
	stop  atomic.Bool
}

// manifestsAhead starts making the manifests of st's objects (nil for no state).
func manifestsAhead(st *state.State) *aheadManifests {
	if st == nil {
		return nil
	}
	a := &aheadManifests{from: st, ms: make([]export.Manifest, len(st.Objects)), ready: make([]atomic.Bool, len(st.Objects))}
	go func() {
		for i, o := range st.Objects { // only read: the cluster holds copies of them
			if a.stop.Load() {
				return
			}
			m, err := export.ToManifest(o)
			if err != nil {
				continue // made again by the export, which reports it
			}
			a.ms[i] = m
			a.ready[i].Store(true)
		}
	}()
	return a
}

// halt stops making manifests ahead: the export makes the rest itself.
func (a *aheadManifests) halt() {
	if a != nil {
		a.stop.Store(true)
	}
}

// reuse gives o's manifest made ahead, when o is exactly the loaded object it was made from and it is ready (for
// export.ManifestsReusing). Each object of a cluster is a different loaded object, so each manifest, whose Object
// the export may change (export.PruneToCRDs), is given once.
func (a *aheadManifests) reuse(o runtime.Object) (export.Manifest, bool) {
	if a == nil {
		return export.Manifest{}, false
	}
	i, ok := a.from.LoadedIndex(o)
	if !ok || !a.ready[i].Load() {
		return export.Manifest{}, false
	}
	return a.ms[i], true
}
