package procstat

import (
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// TestFields reads the fields the project uses from this process: its umask as syscall.Umask gives it, and a peak
// RSS no smaller than the current one.
func TestFields(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/status is Linux's")
	}
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	v, ok := Field("Umask")
	if !ok {
		t.Fatal("no Umask field")
	}
	if n, err := strconv.ParseUint(v, 8, 32); err != nil || n != 0o027 {
		t.Fatalf("Umask %q, want 0027", v)
	}
	now := MB("VmRSS")
	peak := MB("VmHWM") // read after: the peak holds every RSS before it
	if now <= 0 || peak < now {
		t.Fatalf("VmHWM %.1f MB, VmRSS %.1f MB", peak, now)
	}
	if _, ok := Field("NoSuchField"); ok {
		t.Fatal("a field that does not exist was found")
	}
}
