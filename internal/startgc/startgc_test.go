package startgc

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// TestInitHoldsCollectionUntilRelease: with neither GOGC nor GOMEMLIMIT set, init turned proportional collection
// off under the soft limit, and Release puts the runtime's defaults back, once.
func TestInitHoldsCollectionUntilRelease(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		if Held() {
			t.Fatal("init changed the collection although GOGC or GOMEMLIMIT is set")
		}
		t.Skip("GOGC or GOMEMLIMIT is set: init leaves the collection as the environment says")
	}
	if !Held() {
		t.Fatal("init did not turn collection off")
	}
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("GOGC after init = %d, want off", p)
	}
	if l := debug.SetMemoryLimit(-1); l != limit {
		t.Errorf("memory limit after init = %d, want %d", l, limit)
	}
	Release()
	if p := debug.SetGCPercent(-1); p != 100 {
		t.Errorf("GOGC after Release = %d, want 100", p)
	}
	debug.SetGCPercent(100)
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("memory limit after Release = %d, want none", l)
	}
	debug.SetGCPercent(50)
	Release() // a second Release changes nothing
	if p := debug.SetGCPercent(100); p != 50 || Held() {
		t.Errorf("a second Release changed GOGC to %d", p)
	}
}
