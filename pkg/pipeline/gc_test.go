package pipeline

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcSettings reads the collector's percent and memory limit without changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// TestSingleRenderGCHeapFloor: SingleRenderGC sets the heap floor (GOGC off, the soft limit), goes back to
// proportional collection once a collection leaves more than singleRenderLiveHeapMax live, and its restore puts
// back what it found.
func TestSingleRenderGCHeapFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent0, limit0 := gcSettings()

	restore := SingleRenderGC()
	if p, l := gcSettings(); p != -1 || l != singleRenderHeapFloor {
		t.Fatalf("after SingleRenderGC: GOGC %d, memory limit %d; want off and %d", p, l, singleRenderHeapFloor)
	}
	// A collection with little live keeps the floor.
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if p, l := gcSettings(); p != -1 || l != singleRenderHeapFloor {
		t.Fatalf("after collections with little live: GOGC %d, memory limit %d; want the floor kept", p, l)
	}
	// More than singleRenderLiveHeapMax live: the next collections switch to GOGC=150 without a limit.
	big := make([]byte, singleRenderLiveHeapMax+(8<<20))
	for i := range big {
		big[i] = byte(i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(5 * time.Millisecond) // the finalizer runs on its own goroutine
		if p, l := gcSettings(); p == singleRenderGCPercent && l == math.MaxInt64 {
			break
		}
		if time.Now().After(deadline) {
			p, l := gcSettings()
			t.Fatalf("with %d MB live: GOGC %d, memory limit %d; want %d and no limit", len(big)>>20, p, l, singleRenderGCPercent)
		}
	}
	runtime.KeepAlive(big)

	restore()
	if p, l := gcSettings(); p != percent0 || l != limit0 {
		t.Fatalf("after restore: GOGC %d, memory limit %d; want %d and %d", p, l, percent0, limit0)
	}
}

// TestSingleRenderGCEnvironmentWins: an explicit GOGC or GOMEMLIMIT leaves the collector as the runtime set it.
func TestSingleRenderGCEnvironmentWins(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(env, "200")
			p0, l0 := gcSettings()
			restore := SingleRenderGC()
			if p, l := gcSettings(); p != p0 || l != l0 {
				t.Errorf("with %s set: GOGC %d, memory limit %d; want %d and %d unchanged", env, p, l, p0, l0)
			}
			restore()
		})
	}
}
