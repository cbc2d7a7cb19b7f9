package pipeline

import (
	"context"
	"os"
	"runtime/pprof"
	"testing"
	"time"
)

func TestZZRerenderProfile(t *testing.T) {
	defer SingleRenderGC()()
	f, _ := os.Create(os.Getenv("ZZ_PROF"))
	pprof.StartCPUProfile(f)
	c0, t0 := zzCPU(), time.Now()
	o := Options{Dir: "/dev/shm/rr"}
	if _, err := Render(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	c1 := zzCPU()
	pprof.StopCPUProfile()
	t.Logf("re-render: cpu %v wall %v", (c1 - c0).Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
}
