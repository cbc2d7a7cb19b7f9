package pipeline

// A render does what does not depend on the loops while they run (the CRDs, the earlier aio.ign, the admin
// certificate) and, in its export, builds Ignition, captures the state and finds the earliest expiry at once:
// every such piece of work is a future, started where the step that needs it is written, awaited where its
// result is used. It is the one place a render's concurrency lives (the loops' own is pkg/loops').

// future is a result computed on a goroutine of its own from the moment it is made (goFuture); Get waits for it.
type future[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// goFuture starts f on a goroutine of its own.
func goFuture[T any](f func() (T, error)) *future[T] {
	fu := &future[T]{done: make(chan struct{})}
	go func() {
		defer close(fu.done)
		fu.v, fu.err = f()
	}()
	return fu
}

// ready is a future whose result is there already.
func ready[T any](v T, err error) *future[T] {
	fu := &future[T]{done: make(chan struct{}), v: v, err: err}
	close(fu.done)
	return fu
}

// Get waits for the result.
func (fu *future[T]) Get() (T, error) {
	<-fu.done
	return fu.v, fu.err
}

// Wait waits for the work to end, result unused (a settle that fails early still waits for what it started).
func (fu *future[T]) Wait() {
	if fu != nil {
		<-fu.done
	}
}
