package loops

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/events"
	"k8s.io/client-go/util/workqueue"
)

// Loop is one control loop of a render: a name (as it appears in the trace) and a sync that reads through
// listers and writes through the fake clients.
type Loop struct {
	Name   string
	Sync   func(ctx context.Context) error
	closer func()
	// turn, footprint, watch, settles and keys are set by Concurrent, Reads, Settles and MakesKeys (turn.go).
	turn                            *Turn
	footprint, watch, settles, keys map[Object]bool
	// unordered is set by Settling: the order of the loop's writes within one step carries no meaning.
	unordered bool
	// lastRun is set by Unchanged (unchanged.go): the runner skips the loop while nothing it watches changed.
	lastRun *lastRun
}

// Syncer is what library-go controllers expose for running one sync synchronously.
type Syncer interface {
	Sync(ctx context.Context, syncCtx factory.SyncContext) error
}

// ControllerLoop wraps a library-go controller as a Loop. It owns one SyncContext, reused for every pass; Close
// releases it (see Runner.Close).
func ControllerLoop(name string, ctrl Syncer, recorder events.Recorder) Loop {
	syncCtx := &syncContext{name: name, recorder: recorder.WithComponentSuffix(strings.ToLower(name))}
	return Loop{Name: name, Sync: func(ctx context.Context) error {
		return ctrl.Sync(ctx, syncCtx)
	}, closer: syncCtx.close}
}

// syncContext is factory.NewSyncContext's (controller/factory/controller_context.go: the recorder with the
// controller's name as suffix, an empty queue key) with its queue made on first use: a queue starts a goroutine,
// and no controller of a render asks for its queue (its sync is called directly, and requeues nothing it reads).
type syncContext struct {
	name     string
	recorder events.Recorder
	once     sync.Once
	//lint:ignore SA1019 the type factory.SyncContext's Queue returns
	queue workqueue.RateLimitingInterface
}

var _ factory.SyncContext = (*syncContext)(nil)

//lint:ignore SA1019 factory.SyncContext's Queue returns the deprecated type
func (s *syncContext) Queue() workqueue.RateLimitingInterface {
	s.once.Do(func() {
		//lint:ignore SA1019 what factory.NewSyncContext makes
		s.queue = workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), s.name)
	})
	return s.queue
}

func (s *syncContext) QueueKey() string { return "" }

func (s *syncContext) Recorder() events.Recorder { return s.recorder }

// close shuts the queue down, if it was made.
func (s *syncContext) close() {
	made := true
	s.once.Do(func() { made = false })
	if made {
		s.queue.ShutDown()
	}
}

// Before returns the loop with a check run before each sync: when check fails, the sync is skipped and the
// check's error is the loop's error for that pass (an input another loop makes is not there yet).
func (l Loop) Before(check func(ctx context.Context) error) Loop {
	inner := l.Sync
	l.Sync = func(ctx context.Context) error {
		if err := check(ctx); err != nil {
			return err
		}
		return inner(ctx)
	}
	return l
}

// Settling returns the loop run again within its step while its last run wrote something, at most max runs in
// all, and marks its writes as unordered within a step (Result.Trace lists them by object). It is for a controller
// that visits what it manages in an order of no meaning, such as library-go's ResourceSyncController, which
// ranges over its rules as a Go map (resourcesynccontroller/resourcesync_controller.go, Sync: "for destination,
// source := range c.configMapSyncRules"): run once, a copy of a copy lands in the same pass as its source or in
// the next one depending on that order, so two renders of the same inputs would differ in the passes their
// writes land in and in the trace. Run until it writes nothing, every copy lands in the pass its source appears
// in, as on a cluster, where the controller's own writes requeue it at once. Beyond max runs the runner's next
// pass carries on. Not for concurrent loops: the runs read the writes of the runs before them.
func (l Loop) Settling(c *Cluster, max int) Loop {
	inner := l.Sync
	l.Sync = func(ctx context.Context) error {
		for run := 0; run < max; run++ {
			before := c.writeCount()
			if err := inner(ctx); err != nil {
				return err
			}
			if c.writeCount() == before {
				return nil
			}
		}
		return nil
	}
	l.unordered = true
	return l
}

// Close releases what a Loop holds (a controller's workqueue goroutine).
func (l Loop) Close() {
	if l.closer != nil {
		l.closer()
	}
}

// Phase is a set of loops the runner drives to a fixpoint together, in order.
type Phase struct {
	Name  string
	Loops []Loop
}

// PassStat is what one pass of one phase did.
type PassStat struct {
	Phase  string
	Pass   int
	Writes int
	Errors int
	// Skipped counts the loops skipped because nothing they watch changed since their last run (Loop.Unchanged).
	Skipped int
	Took    time.Duration
}

// Result is what a run did.
type Result struct {
	Passes   []PassStat
	Writes   []Write
	LoopTime map[string]time.Duration
	// Abandoned names a concurrent loop once for every run of it abandoned because it was stale (turn.go); the
	// loop ran again in its turn. It costs time, never output.
	Abandoned []string
	// Deferred counts the writes concurrent loops made before their turn that were kept and made at their turn
	// (Turn.DeferWrites).
	Deferred int
	// Unordered names the loops whose writes within one step the trace lists by object (Loop.Settling).
	Unordered map[string]bool
	// Skipped names a loop once for every pass that skipped it (Loop.Unchanged).
	Skipped []string
}

// TotalPasses counts the passes of every phase.
func (r *Result) TotalPasses() int { return len(r.Passes) }

// Trace renders the journal as text: every write with its phase, pass and loop, and one line per pass saying how
// many writes it made, so a final pass with no writes is visible. Writes are in the order they were made, except
// that the consecutive writes of one step of an unordered loop (Loop.Settling), whose order reflects nothing but
// Go's map iteration, are listed by object (resource, namespace, name; one object's writes in their order): two
// renders of the same inputs give the same trace apart from its timings.
func (r *Result) Trace() string {
	var b strings.Builder
	b.WriteString("# phase   pass  loop                                                       verb    resource namespace/name\n")
	byPass := map[string][]Write{}
	for _, w := range r.Writes {
		k := fmt.Sprintf("%s/%d", w.Phase, w.Pass)
		byPass[k] = append(byPass[k], w)
	}
	for _, w := range byPass["seed/0"] {
		b.WriteString(w.String() + "\n")
	}
	for _, p := range r.Passes {
		for _, w := range r.listed(byPass[fmt.Sprintf("%s/%d", p.Phase, p.Pass)]) {
			b.WriteString(w.String() + "\n")
		}
		verdict := ""
		if p.Writes == 0 && p.Errors == 0 {
			verdict = " (fixpoint)"
		}
		skipped := ""
		if p.Skipped > 0 {
			skipped = fmt.Sprintf("%d skipped (unchanged), ", p.Skipped)
		}
		fmt.Fprintf(&b, "# %s pass %d: %d writes, %d loop errors, %s%s%s\n", p.Phase, p.Pass, p.Writes, p.Errors, skipped, p.Took.Round(time.Millisecond), verdict)
	}
	return b.String()
}

// listed is one pass's writes as Trace lists them: each run of consecutive writes by an unordered loop sorted
// by object, stably.
func (r *Result) listed(writes []Write) []Write {
	out := append([]Write(nil), writes...)
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[j].Loop == out[i].Loop {
			j++
		}
		if r.Unordered[out[i].Loop] {
			sort.SliceStable(out[i:j], func(a, b int) bool {
				x, y := out[i+a], out[i+b]
				if x.Resource != y.Resource {
					return x.Resource < y.Resource
				}
				if x.Namespace != y.Namespace {
					return x.Namespace < y.Namespace
				}
				return x.Name < y.Name
			})
		}
		i = j
	}
	return out
}

// Runner drives phases against one cluster.
type Runner struct {
	Cluster *Cluster
	// MaxPasses bounds every phase; 0 means 10.
	MaxPasses int
	// Parallelism bounds how many concurrent loops of a pass compute before their turn at once: 0 or 1 runs
	// every loop after the one ahead of it; more lets loops marked Concurrent start before the loops ahead of them
	// finish (turn.go). Either way the cluster sees the same writes in the same order.
	Parallelism int
	// RunUnchanged runs the loops marked Unchanged even while nothing they watch changed: every loop in every
	// pass, the definition the skipping stands for (the tests' reference).
	RunUnchanged bool
	result       Result
}

// NotConvergedError says a phase hit its pass bound, or stopped making progress while loops still failed.
type NotConvergedError struct {
	Phase   string
	Passes  int
	Writing []string          // loops that still wrote in the last pass
	Errors  map[string]string // last error of each failing loop
}

func (e *NotConvergedError) Error() string {
	var b strings.Builder
	if len(e.Writing) > 0 {
		fmt.Fprintf(&b, "phase %s did not reach a fixpoint in %d passes; loops still writing: %s", e.Phase, e.Passes, strings.Join(e.Writing, ", "))
	} else {
		fmt.Fprintf(&b, "phase %s stopped after %d passes with failing loops", e.Phase, e.Passes)
	}
	names := make([]string, 0, len(e.Errors))
	for n := range e.Errors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "\n  %s: %s", n, e.Errors[n])
	}
	return b.String()
}

// Run drives one phase: the loops in order, pass after pass, until a pass writes nothing and no loop fails.
// Errors of a loop are retried in the next pass (a loop may wait for another's output); a pass with no write but
// failing loops cannot make progress and ends the run with those errors.
//
// Loop names must be unique and non-empty within a phase: the trace, the errors and the time spent are keyed on
// them, so Run rejects a phase that repeats one before running anything.
func (r *Runner) Run(ctx context.Context, phase Phase) error {
	if err := CheckNames(phase); err != nil {
		return err
	}
	max := r.MaxPasses
	if max <= 0 {
		max = 10
	}
	if r.result.LoopTime == nil {
		r.result.LoopTime = map[string]time.Duration{}
	}
	for _, l := range phase.Loops {
		l.lastRun.forget()
		if l.unordered {
			if r.result.Unordered == nil {
				r.result.Unordered = map[string]bool{}
			}
			r.result.Unordered[l.Name] = true
		}
	}
	c := r.Cluster
	for pass := 1; pass <= max; pass++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		before := c.writeCount()
		skippedBefore := len(r.result.Skipped)
		var errs map[string]string
		var writing []string
		pprof.Do(ctx, pprof.Labels("phase", phase.Name, "pass", strconv.Itoa(pass)), func(ctx context.Context) {
			errs, writing = r.runPass(ctx, phase, pass)
		})
		c.setCurrent("", 0, "")
		c.clearActions()
		writes := c.writeCount() - before
		r.result.Passes = append(r.result.Passes, PassStat{Phase: phase.Name, Pass: pass, Writes: writes, Errors: len(errs),
			Skipped: len(r.result.Skipped) - skippedBefore, Took: time.Since(start)})
		if writes == 0 && len(errs) == 0 {
			return nil
		}
		if writes == 0 || pass == max {
			return &NotConvergedError{Phase: phase.Name, Passes: pass, Writing: writing, Errors: errs}
		}
	}
	return nil
}

// step is one loop of a pass run by runOverlapped; its results are read once done is closed.
type step struct {
	loop      Loop
	done      chan struct{} // closed when the loop finished in its turn: the next loop's turn
	settled   chan struct{} // closed when the loop settled what it settles (Turn.Settle), at the latest when done
	settle    func()
	err       error
	wrote     bool
	skipped   bool // nothing the loop watches changed since its last run (Loop.Unchanged): it did not run
	abandoned bool // a run before its turn was abandoned (stale) and the loop ran again in its turn
	deferred  int  // writes deferred to the turn
	took      time.Duration
}

// runPass runs the loops of one pass in order and returns the errors of the failing loops and the names of the
// loops that wrote, in loop order.
func (r *Runner) runPass(ctx context.Context, phase Phase, pass int) (map[string]string, []string) {
	errs := map[string]string{}
	var writing []string
	finish := func(name string, err error, wrote bool, took time.Duration) {
		r.result.LoopTime[name] += took
		if err != nil {
			errs[name] = err.Error()
		}
		if wrote {
			writing = append(writing, name)
		}
	}
	if r.Parallelism <= 1 {
		c := r.Cluster
		for _, l := range phase.Loops {
			if r.skips(l) {
				r.result.Skipped = append(r.result.Skipped, l.Name)
				continue
			}
			l.turn.disarm()
			c.setCurrent(phase.Name, pass, l.Name)
			c.declare(l)
			n := c.writeCount()
			t := time.Now()
			var err error
			withLoopLabel(ctx, l.Name, func(ctx context.Context) { err = safeSync(ctx, l) })
			finish(l.Name, err, c.writeCount() > n, time.Since(t))
			l.lastRun.ran(c, err)
		}
		return errs, writing
	}
	for _, s := range r.runOverlapped(ctx, phase, pass) {
		if s.skipped {
			r.result.Skipped = append(r.result.Skipped, s.loop.Name)
			continue
		}
		finish(s.loop.Name, s.err, s.wrote, s.took)
		if s.abandoned {
			r.result.Abandoned = append(r.result.Abandoned, s.loop.Name)
		}
		r.result.Deferred += s.deferred
	}
	return errs, writing
}

// runOverlapped runs one pass with concurrent loops started ahead of their turn (turn.go). Every loop gets a
// step whose done channel is the next loop's turn. A loop that is not concurrent runs alone once the loop ahead
// of it is done. A concurrent loop starts once every concurrent loop ahead of it that may write what it watches
// has finished and it holds a slot (slots); loops that are not concurrent ahead of it do not hold it back (if one
// writes what it watches, it runs again in its turn).
func (r *Runner) runOverlapped(ctx context.Context, phase Phase, pass int) []*step {
	r.Cluster.setCurrent(phase.Name, pass, "") // nobody has the turn until the first loop takes it
	slots := newSlots(r.Parallelism)
	steps := make([]*step, 0, len(phase.Loops))
	for i, l := range phase.Loops {
		s := &step{loop: l, done: make(chan struct{}), settled: make(chan struct{})}
		var once sync.Once
		s.settle = func() { once.Do(func() { close(s.settled) }) }
		var ready <-chan struct{}
		if i > 0 {
			ready = steps[i-1].done
		}
		if l.turn == nil {
			go r.runAlone(ctx, phase.Name, pass, s, ready)
			steps = append(steps, s)
			continue
		}
		var after []<-chan struct{}
		for _, a := range steps {
			if a.loop.turn == nil {
				continue
			}
			switch may, settles := l.mayChange(a.loop); {
			case settles:
				after = append(after, a.settled)
			case may:
				after = append(after, a.done)
			}
		}
		steps = append(steps, s)
		slots.want(i, keysFirstMade(l, phase.Loops[:i]), ready)
		go r.runAhead(ctx, phase.Name, pass, s, ready, after, slots, i)
	}
	for _, s := range steps {
		<-s.done
	}
	return steps
}

// keysFirstMade counts the objects holding keys that l makes (MakesKeys) and no concurrent loop ahead of it in
// the pass has in its footprint: on a new cluster, the keys l makes itself (a cert-rotation row sharing its signer
// with a row ahead of it makes only its target's key).
func keysFirstMade(l Loop, ahead []Loop) int {
	n := 0
	for o := range l.keys {
		first := true
		for _, a := range ahead {
			if a.footprint[o] {
				first = false
				break
			}
		}
		if first {
			n++
		}
	}
	return n
}

// slots bounds the concurrent loops computing before their turn. Loops ask for a slot in loop order (want, from
// the dispatcher) and may take one once they are ready to start (start, after the loops they wait for). A slot
// freed goes, among the loops ready to start, to the one whose turn has come (the pass waits for it), else to the
// one that makes the most keys, else to the earliest: key generation is most of a fresh render's CPU, and a loop
// making a signer's key and then its target's, started last, would make them one after the other on one core
// while the other cores have nothing left to do (longest jobs first). Holders never wait for a loop that waits for
// a slot (they give theirs back before they wait for their turn), so every wait for a slot ends.
type slots struct {
	mu      sync.Mutex
	free    int
	waiting map[int]*slotWait
}

type slotWait struct {
	ch    chan struct{}
	ready bool
	keys  int
	turn  <-chan struct{} // closed when the loop's turn has come (nil: the pass's first loop)
}

// hasTurn says whether the waiting loop's turn has come.
func (w *slotWait) hasTurn() bool {
	if w.turn == nil {
		return true
	}
	select {
	case <-w.turn:
		return true
	default:
		return false
	}
}

func newSlots(n int) *slots { return &slots{free: n, waiting: map[int]*slotWait{}} }

// want registers loop i's request, in loop order, before the loop is ready to start: the keys it makes
// (keysFirstMade) and the channel closed at its turn.
func (s *slots) want(i, keys int, turn <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting[i] = &slotWait{ch: make(chan struct{}), keys: keys, turn: turn}
}

// start blocks until loop i, ready to start, holds a slot; the returned func gives it back (only its first call
// counts).
func (s *slots) start(i int) (release func()) {
	s.mu.Lock()
	w := s.waiting[i]
	w.ready = true
	s.grant()
	s.mu.Unlock()
	<-w.ch
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.free++
			s.grant()
			s.mu.Unlock()
		})
	}
}

// grant hands free slots to the ready loops in the order slots describes; s.mu is held.
func (s *slots) grant() {
	for s.free > 0 {
		first := -1
		for i, w := range s.waiting {
			if w.ready && (first < 0 || s.before(i, first)) {
				first = i
			}
		}
		if first < 0 {
			return
		}
		close(s.waiting[first].ch)
		delete(s.waiting, first)
		s.free--
	}
}

// before says whether waiting loop i gets a slot before waiting loop j.
func (s *slots) before(i, j int) bool {
	wi, wj := s.waiting[i], s.waiting[j]
	if ti, tj := wi.hasTurn(), wj.hasTurn(); ti != tj {
		return ti
	}
	if wi.keys != wj.keys {
		return wi.keys > wj.keys
	}
	return i < j
}

// skips says whether the runner skips l now, in its turn: it is marked Unchanged and nothing it watches changed
// since its last run that succeeded (unchanged.go), and the runner is not told to run every loop.
func (r *Runner) skips(l Loop) bool {
	return !r.RunUnchanged && l.lastRun.unchanged(r.Cluster, l.watch)
}

// runAlone runs a loop that is not concurrent in its turn.
func (r *Runner) runAlone(ctx context.Context, phase string, pass int, s *step, ready <-chan struct{}) {
	defer close(s.done)
	defer s.settle()
	c := r.Cluster
	if ready != nil {
		<-ready
	}
	if r.skips(s.loop) {
		s.skipped = true
		return
	}
	c.setExclusive(phase, pass, s.loop.Name)
	c.declare(s.loop)
	n := c.writeCount()
	t := time.Now()
	withLoopLabel(ctx, s.loop.Name, func(ctx context.Context) { s.err = safeSync(ctx, s.loop) })
	s.took = time.Since(t)
	s.wrote = c.writeCount() > n
	s.loop.lastRun.ran(c, s.err)
	c.setCurrent(phase, pass, "") // between turns: nobody may write
}

// runAhead runs a concurrent loop once the loops in after have finished (or settled), before its turn; it
// finishes in its turn (a loop that wrote nothing still does) and runs again in its turn when it turned out stale.
func (r *Runner) runAhead(ctx context.Context, phase string, pass int, s *step, ready <-chan struct{}, after []<-chan struct{}, sl *slots, index int) {
	defer close(s.done)
	defer s.settle()
	c := r.Cluster
	l := s.loop
	if !r.RunUnchanged && l.lastRun.candidate() {
		// Whether the loop can be skipped is known only in its turn, once the loops ahead of it have written
		// what they write: it waits for its turn instead of starting ahead (it makes no keys when it runs again).
		if ready != nil {
			<-ready
		}
		if r.skips(l) {
			s.skipped = true
			return
		}
	}
	for _, a := range after {
		<-a
	}
	release := sl.start(index)
	defer release()
	n0 := 0
	l.turn.arm(ready, func() bool {
		stale := c.grant(phase, pass, l.Name)
		n0 = c.writeCount()
		return stale
	}, release, func(pending []pendingWrite) {
		c.publish(l.Name, pending, l.settles)
		s.settle()
	}, func(abandoned bool) { c.unpublish(l.Name, abandoned) })
	c.enterFlight(l.Name, index, l.footprint, l.watch)
	t := time.Now()
	var err error
	var abandoned bool
	withLoopLabel(ctx, l.Name, func(ctx context.Context) {
		if err, abandoned = speculate(ctx, l); abandoned {
			l.turn.resume()
			err = safeSync(ctx, l)
		}
	})
	s.err, s.took, s.abandoned, s.deferred = err, time.Since(t), abandoned, l.turn.deferredWrites()
	s.wrote = c.writeCount() > n0
	c.leaveFlight(l.Name)
	l.turn.disarm()
	l.lastRun.ran(c, err)
}

// speculate runs a concurrent loop from before its turn to its turn and says whether the run was abandoned
// because the loop was stale when its turn came (Turn.Wait); any other panic becomes the loop's error.
func speculate(ctx context.Context, l Loop) (err error, abandoned bool) {
	defer func() {
		if p := recover(); p != nil {
			if p == errStale {
				abandoned = true
				return
			}
			if fe, ok := p.(*flushError); ok {
				err = fe // the turn is the loop's: its deferred writes stop at the one that failed
				return
			}
			err = fmt.Errorf("panic: %v", p)
			abandoned = waitTurn(l.turn)
		}
	}()
	err = l.Sync(ctx)
	l.turn.Wait()
	return err, false
}

// waitTurn waits for the turn of a loop whose run already ended (in a panic) and says whether it was stale.
func waitTurn(t *Turn) (abandoned bool) {
	defer func() {
		if p := recover(); p != nil {
			abandoned = p == errStale
			if !abandoned {
				panic(p)
			}
		}
	}()
	t.Wait()
	return false
}

// CheckNames fails if a loop of the phase has no name or shares its name with another loop of the phase, naming
// the loops' positions.
func CheckNames(phase Phase) error {
	first := map[string]int{}
	var dups []string
	for i, l := range phase.Loops {
		if l.Name == "" {
			return fmt.Errorf("phase %s: loop %d has no name", phase.Name, i)
		}
		if j, ok := first[l.Name]; ok {
			dups = append(dups, fmt.Sprintf("%q (loops %d and %d)", l.Name, j, i))
			continue
		}
		first[l.Name] = i
	}
	if len(dups) > 0 {
		return fmt.Errorf("phase %s: duplicate loop names: %s; the runner keys the trace, errors and timings on the name", phase.Name, strings.Join(dups, ", "))
	}
	return nil
}

// LoopName names a loop uniformly: <kind>/<component>[/<what>], e.g. LoopName("target-config", "etcd", "scripts")
// is "target-config/etcd/scripts". kind is what the loop does (the library-go controller or our step), component
// the component it belongs to (as the pipeline registers it), what an optional qualifier when a component has
// several loops of one kind. Empty parts and parts holding a "/" are a programming error and panic.
func LoopName(kind, component string, what ...string) string {
	parts := append([]string{kind, component}, what...)
	if len(what) > 1 {
		panic(fmt.Sprintf("loops.LoopName%q: at most one qualifier", parts))
	}
	for _, p := range parts {
		if p == "" || strings.Contains(p, "/") {
			panic(fmt.Sprintf("loops.LoopName%q: every part must be non-empty and hold no \"/\"", parts))
		}
	}
	return strings.Join(parts, "/")
}

// withLoopLabel runs f with the profiler label loop=<name> (Run labels each pass with phase and pass): a CPU
// profile of renders splits by loop and pass, e.g. go tool pprof -tags -tagfocus 'pass=(2)' for second passes.
func withLoopLabel(ctx context.Context, name string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels("loop", name), f)
}

// safeSync turns a panic in a loop into an error naming the loop: a render never panics.
func safeSync(ctx context.Context, l Loop) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return l.Sync(ctx)
}

// CheckDegraded fails if any operator resource is left with a *Degraded=True condition.
func (r *Runner) CheckDegraded() error {
	var msgs []string
	for res, oc := range r.Cluster.OperatorClients() {
		for _, cond := range oc.DegradedConditions() {
			msgs = append(msgs, fmt.Sprintf("%s: %s=True (%s): %s", res, cond.Type, cond.Reason, cond.Message))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	sort.Strings(msgs)
	return fmt.Errorf("degraded after the loops settled:\n  %s", strings.Join(msgs, "\n  "))
}

// Result returns what the runner did so far, with the journal.
func (r *Runner) Result() *Result {
	res := r.result
	res.Writes = r.Cluster.Journal()
	return &res
}
