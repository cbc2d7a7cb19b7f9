// Package startgc keeps the garbage collector off while the program's packages initialize.
//
// Initializing the packages render-static links (the Kubernetes and OpenShift API schemes, library-go's
// manifests) allocates ~6 MB, and proportional collection (GOGC=100) collects three times on the way, from a 4 MB
// goal: ~8 ms of CPU before main. Go initializes the first package, in import-path order, whose imports are
// initialized (the Go specification, Package initialization), so this package, which imports only the runtime's
// own, initializes before those: its init turns proportional collection off under a soft memory limit, and the
// command then sets the collection it wants (pipeline.SingleRenderGC for one render, Release otherwise). An
// explicit GOGC or GOMEMLIMIT in the environment wins: then nothing is changed.
package startgc

import (
	"math"
	"runtime/debug"
	"syscall"
)

// limit bounds the heap while collection is off: far above what initialization allocates.
const limit = 64 << 20

var held bool

func init() {
	if _, ok := syscall.Getenv("GOGC"); ok {
		return
	}
	if _, ok := syscall.Getenv("GOMEMLIMIT"); ok {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(limit)
	held = true
}

// Held says whether init turned collection off (no GOGC or GOMEMLIMIT in the environment).
func Held() bool { return held }

// Release puts back the runtime's defaults (GOGC=100, no memory limit) if init changed them.
func Release() {
	if !held {
		return
	}
	held = false
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
}
