package export

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// Parallel calls f(0) … f(n-1), spread over one worker per core, and returns their errors joined in index order.
// The calls must be independent: a render's exports (marshalling, compressing, writing files) are, and run after
// the loops, so every core is free for them.
func Parallel(n int, f func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		var errs []error
		for i := 0; i < n; i++ {
			errs = append(errs, f(i))
		}
		return errors.Join(errs...)
	}
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				errs[i] = f(i)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
