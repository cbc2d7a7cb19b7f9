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
	return errors.Join(parallelEach(n, workers, func() struct{} { return struct{}{} }, func(_ struct{}, i int) error { return f(i) })...)
}

// parallelEach calls f(w, i) for i in 0 … n-1 on the given number of workers, each with its own state w made by
// newWorker (such as a reusable buffer), and returns the errors in index order.
func parallelEach[W any](n, workers int, newWorker func() W, f func(w W, i int) error) []error {
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			state := newWorker()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				errs[i] = f(state, i)
			}
		}()
	}
	wg.Wait()
	return errs
}

// parallelFirst is Parallel for work that fails as a whole: after the first failure no further call starts, and
// only the first error (in index order) is returned. A full disk makes every file of an output fail alike: one
// error says it.
func parallelFirst(n int, f func(i int) error) error {
	var failed atomic.Bool
	errs := parallelEach(n, max(1, min(runtime.GOMAXPROCS(0), n)), func() struct{} { return struct{}{} }, func(_ struct{}, i int) error {
		if failed.Load() {
			return nil
		}
		err := f(i)
		if err != nil {
			failed.Store(true)
		}
		return err
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
