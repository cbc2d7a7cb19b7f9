package pipeline

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Garbage collection of a process that makes one render (render-static, renew).
//
// A render's live heap stays under ~30 MB (the fakes' objects, the scheme, the Ignition config being built), but
// with proportional collection (GOGC) the heap goal starts at 4 MB and the runtime collects ~10 times as it grows,
// each time marking everything live: ~0.1 s of CPU. A heap floor instead (GOGC off and a soft memory limit,
// runtime/debug.SetMemoryLimit) lets the heap grow to singleRenderHeapFloor before the first collection: one
// collection during a render of the bundled example instead of ~6 with GOGC=150, for a peak RSS of ~135 MB instead
// of ~110-120 MB (a 70 MiB floor: three collections and ~110 MB; 90 MiB: two, ~10 ms more CPU, and ~128 MB;
// 100 MiB: one and ~138 MB; issue 13's bound is 150 MB). The limit also bounds the peak for larger inputs: the
// heap is collected once it reaches the floor.
//
// A memory limit with GOGC off collects more and more often as the live heap nears the limit. So that no input can
// bring a render there, a check after every collection (a finalizer re-armed each cycle) goes back to proportional
// collection (GOGC=150, no limit) as soon as a collection leaves more than singleRenderLiveHeapMax live: the floor
// is kept only while the live heap is well under it.
const (
	singleRenderHeapFloor   = 96 << 20
	singleRenderLiveHeapMax = singleRenderHeapFloor / 2
	singleRenderGCPercent   = 150
)

// SingleRenderGC sets the collection of a process that makes one render (above). An explicit GOGC or GOMEMLIMIT
// in the environment wins. fleet keeps the default: it runs several renders at once in one process. The
// benchmarks of one render use it too, so that they measure what the command does. It returns a function that
// puts back the settings it replaced.
func SingleRenderGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	g := &heapFloor{oldPercent: debug.SetGCPercent(-1), oldLimit: debug.SetMemoryLimit(singleRenderHeapFloor)}
	g.arm()
	return g.restore
}

type heapFloor struct {
	mu         sync.Mutex
	done       bool // restored, or back to proportional collection
	oldPercent int
	oldLimit   int64
	sample     []metrics.Sample
}

// arm sets a finalizer on a new object: it runs after the next collection that finds the object unreachable.
func (g *heapFloor) arm() {
	sentinel := new([16]byte)
	runtime.SetFinalizer(sentinel, func(*[16]byte) { g.afterGC() })
}

// afterGC leaves the heap floor for proportional collection when the last collection left too much live, and
// re-arms otherwise.
func (g *heapFloor) afterGC() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return
	}
	if g.sample == nil {
		g.sample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	}
	metrics.Read(g.sample)
	if v := g.sample[0].Value; v.Kind() == metrics.KindUint64 && v.Uint64() > singleRenderLiveHeapMax {
		debug.SetGCPercent(singleRenderGCPercent)
		debug.SetMemoryLimit(math.MaxInt64)
		g.done = true
		return
	}
	g.arm()
}

func (g *heapFloor) restore() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	debug.SetGCPercent(g.oldPercent)
	debug.SetMemoryLimit(g.oldLimit)
}
