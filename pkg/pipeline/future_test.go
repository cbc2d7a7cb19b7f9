package pipeline

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestFuture(t *testing.T) {
	release := make(chan struct{})
	var ran atomic.Int32
	fu := goFuture(func() (int, error) { ran.Add(1); <-release; return 42, nil })
	select {
	case <-fu.done:
		t.Fatal("the future ended before its work did")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	for range 3 {
		if v, err := fu.Get(); v != 42 || err != nil {
			t.Fatalf("Get = %d, %v", v, err)
		}
	}
	if ran.Load() != 1 {
		t.Errorf("the work ran %d times", ran.Load())
	}
	boom := errors.New("boom")
	if _, err := goFuture(func() (string, error) { return "", boom }).Get(); !errors.Is(err, boom) {
		t.Errorf("error %v", err)
	}
	if v, err := ready("x", nil).Get(); v != "x" || err != nil {
		t.Errorf("ready: %q %v", v, err)
	}
	var none *future[int]
	none.Wait() // a future never started: nothing to wait for
}
