package loops

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// rotationLike is a loop shaped like a cert-rotation row: before its turn it reads its own secret through a
// lister and "makes a key" (sleeps a random while, so runs interleave differently); then it creates or updates
// its secret and config map through the turn's client, and sets a condition on the shared operator resource
// through the turn's operator client. What it writes depends on what it reads in its turn (how many config maps
// the namespace holds then), so any reordering of writes would show.
func rotationLike(c *Cluster, op *OperatorClient, name string, rnd func() time.Duration) Loop {
	turn := NewTurn()
	client := turn.CoreV1(c.Kube.CoreV1())
	sop := turn.StaticPodOperator(op)
	secrets := c.KubeInformers.InformersFor("ns-a").Core().V1().Secrets().Lister().Secrets("ns-a")
	cms := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister().ConfigMaps("ns-a")
	return Loop{Name: "rot/" + name, Sync: func(ctx context.Context) error {
		_, err := secrets.Get(name)
		exists := err == nil
		if !exists {
			time.Sleep(rnd()) // the key
		}
		if !exists {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: name}, Data: map[string][]byte{"k": []byte(name)}}
			if _, err := client.Secrets("ns-a").Create(ctx, s, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		all, err := cms.List(labels.Everything())
		if err != nil {
			return err
		}
		if _, err := cms.Get(name); apierrors.IsNotFound(err) {
			if _, err := client.ConfigMaps("ns-a").Create(ctx, cm("ns-a", name, fmt.Sprint(len(all))), metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		_, _, err = v1helpers.UpdateStaticPodStatus(ctx, sop, v1helpers.UpdateStaticPodConditionFn(operatorv1.OperatorCondition{
			Type: "Rot" + name + "Degraded", Status: operatorv1.ConditionFalse, Message: fmt.Sprint(len(all)),
		}))
		return err
	}}.Concurrent(turn, Secret("ns-a", name), ConfigMap("ns-a", name))
}

// deferring is a loop shaped like a cert-rotation row whose turn defers writes: before its turn it reads its own
// secret and config map through listers, "makes a key", creates or updates the secret and the config map (the
// writes are kept for the turn), reads the secret back through the turn's client (which makes the deferred
// writes first) and sets a condition on the operator resource.
func deferring(c *Cluster, op *OperatorClient, name string, rnd func() time.Duration) Loop {
	turn := NewTurn().DeferWrites()
	client := turn.CoreV1(c.Kube.CoreV1())
	sop := turn.StaticPodOperator(op)
	secrets := c.KubeInformers.InformersFor("ns-a").Core().V1().Secrets().Lister().Secrets("ns-a")
	cms := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister().ConfigMaps("ns-a")
	return Loop{Name: "defer/" + name, Sync: func(ctx context.Context) error {
		if _, err := secrets.Get(name); apierrors.IsNotFound(err) {
			time.Sleep(rnd()) // the key
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: name}, Data: map[string][]byte{"k": []byte(name)}}
			if _, err := client.Secrets("ns-a").Create(ctx, s, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		if _, err := cms.Get(name); apierrors.IsNotFound(err) {
			if _, err := client.ConfigMaps("ns-a").Create(ctx, cm("ns-a", name, "v"), metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		back, err := client.Secrets("ns-a").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading back %s: %w", name, err)
		}
		_, _, err = v1helpers.UpdateStaticPodStatus(ctx, sop, v1helpers.UpdateStaticPodConditionFn(operatorv1.OperatorCondition{
			Type: "Defer" + name + "Degraded", Status: operatorv1.ConditionFalse, Message: string(back.UID),
		}))
		return err
	}}.Concurrent(turn, Secret("ns-a", name), ConfigMap("ns-a", name))
}

// copier reads another loop's secret before its turn: its footprint includes that secret, so the runner must not
// start it while the writer is in flight.
func copier(c *Cluster, name, from string) Loop {
	turn := NewTurn()
	client := turn.CoreV1(c.Kube.CoreV1())
	secrets := c.KubeInformers.InformersFor("ns-a").Core().V1().Secrets().Lister().Secrets("ns-a")
	return Loop{Name: "copy/" + name, Sync: func(ctx context.Context) error {
		src, err := secrets.Get(from)
		if err != nil {
			return fmt.Errorf("%s not there yet", from)
		}
		if _, err := secrets.Get(name); err == nil {
			return nil
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: name}, Data: src.Data}
		_, err = client.Secrets("ns-a").Create(ctx, s, metav1.CreateOptions{})
		return err
	}}.Concurrent(turn, Secret("ns-a", from), Secret("ns-a", name))
}

// reader copies what a non-concurrent loop ahead of it writes (census "middle") into its own secret; it reads it
// before its turn (declared with Reads), so a run that started before the census wrote must be run again in its
// turn. It counts its runs.
func reader(c *Cluster, name, from string, runs *int32) Loop {
	turn := NewTurn()
	client := turn.CoreV1(c.Kube.CoreV1())
	cms := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister().ConfigMaps("ns-a")
	secrets := c.KubeInformers.InformersFor("ns-a").Core().V1().Secrets().Lister().Secrets("ns-a")
	return Loop{Name: "read/" + name, Sync: func(ctx context.Context) error {
		atomic.AddInt32(runs, 1)
		src, err := cms.Get(from)
		if err != nil {
			return fmt.Errorf("%s not there yet", from)
		}
		want := map[string][]byte{"k": []byte(src.Data["k"])}
		cur, err := secrets.Get(name)
		if apierrors.IsNotFound(err) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: name}, Data: want}
			_, err = client.Secrets("ns-a").Create(ctx, s, metav1.CreateOptions{})
			return err
		}
		if err != nil || string(cur.Data["k"]) == string(want["k"]) {
			return err
		}
		next := cur.DeepCopy()
		next.Data = want
		_, err = client.Secrets("ns-a").Update(ctx, next, metav1.UpdateOptions{})
		return err
	}}.Concurrent(turn, Secret("ns-a", name)).Reads(ConfigMap("ns-a", from))
}

// census is a non-concurrent loop: it records how many secrets exist when it runs.
func census(c *Cluster, name string) Loop {
	secrets := c.KubeInformers.InformersFor("ns-a").Core().V1().Secrets().Lister()
	cms := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister().ConfigMaps("ns-a")
	return Loop{Name: "census/" + name, Sync: func(ctx context.Context) error {
		l, err := secrets.List(labels.Everything())
		if err != nil {
			return err
		}
		want := fmt.Sprint(len(l))
		cur, err := cms.Get(name)
		if apierrors.IsNotFound(err) {
			_, err = c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", name, want), metav1.CreateOptions{})
			return err
		}
		if err != nil || cur.Data["k"] == want {
			return err
		}
		next := cur.DeepCopy()
		next.Data["k"] = want
		_, err = c.Kube.CoreV1().ConfigMaps("ns-a").Update(ctx, next, metav1.UpdateOptions{})
		return err
	}}
}

// observed is everything a run leaves that a sequential run fixes: the trace without timings, every object with
// its UID and resourceVersion, and the operator resource with its conditions in order.
func observed(t *testing.T, c *Cluster, r *Runner, op *OperatorClient) string {
	t.Helper()
	var b strings.Builder
	for _, w := range r.Result().Writes {
		b.WriteString(w.String() + "\n")
	}
	for _, p := range r.Result().Passes {
		fmt.Fprintf(&b, "pass %s/%d writes=%d errors=%d\n", p.Phase, p.Pass, p.Writes, p.Errors)
	}
	ctx := context.Background()
	ss, err := c.Kube.CoreV1().Secrets("ns-a").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.Kube.CoreV1().ConfigMaps("ns-a").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var objs []string
	for _, s := range ss.Items {
		objs = append(objs, fmt.Sprintf("secret %s uid=%s rv=%s data=%s", s.Name, s.UID, s.ResourceVersion, s.Data))
	}
	for _, m := range cs.Items {
		objs = append(objs, fmt.Sprintf("configmap %s uid=%s rv=%s data=%v", m.Name, m.UID, m.ResourceVersion, m.Data))
	}
	sort.Strings(objs)
	b.WriteString(strings.Join(objs, "\n") + "\n")
	_, st, rv, _ := op.GetStaticPodOperatorState()
	fmt.Fprintf(&b, "operator rv=%s\n", rv)
	for _, cond := range st.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s\n", cond.Type, cond.Status, cond.Message)
	}
	return b.String()
}

func concurrentRun(t *testing.T, parallelism int, seed int64) string {
	s, _, _ := concurrentRunCounting(t, parallelism, seed)
	return s
}

// concurrentRunCounting is concurrentRun that also says how many times the reader ran and how many writes were
// deferred to a turn.
func concurrentRunCounting(t *testing.T, parallelism int, seed int64) (string, int32, int) {
	t.Helper()
	c := newTestCluster(t)
	op := c.NewOperatorClient("KubeAPIServer", "kubeapiservers", operatorv1.StaticPodOperatorSpec{}, operatorv1.StaticPodOperatorStatus{})
	var mu sync.Mutex
	rng := rand.New(rand.NewSource(seed))
	rnd := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(rng.Intn(8)) * time.Millisecond
	}
	ls := []Loop{census(c, "first")}
	for i := 0; i < 6; i++ {
		ls = append(ls, rotationLike(c, op, fmt.Sprintf("a%d", i), rnd))
	}
	var runs int32
	ls = append(ls, copier(c, "a2-copy", "a2"), rotationLike(c, op, "b0", rnd), deferring(c, op, "d0", rnd), deferring(c, op, "d1", rnd))
	ls = append(ls, census(c, "middle"), reader(c, "r0", "middle", &runs), deferring(c, op, "d2", rnd))
	for i := 0; i < 4; i++ {
		ls = append(ls, rotationLike(c, op, fmt.Sprintf("c%d", i), rnd))
	}
	ls = append(ls, census(c, "last"))
	r := &Runner{Cluster: c, MaxPasses: 5, Parallelism: parallelism}
	if err := r.Run(context.Background(), Phase{Name: "converge", Loops: ls}); err != nil {
		t.Fatalf("parallelism %d: %v", parallelism, err)
	}
	return observed(t, c, r, op), runs, r.Result().Deferred
}

// TestConcurrentRunMatchesSequential: runs with several loops in flight leave the same journal, objects (UIDs,
// resourceVersions, contents) and operator conditions (in the same order) as a run of one loop at a time, over
// many interleavings.
func TestConcurrentRunMatchesSequential(t *testing.T) {
	want := concurrentRun(t, 1, 1)
	if !strings.Contains(want, "copy/a2-copy") || !strings.Contains(want, "Rotc3Degraded") || !strings.Contains(want, "read/r0") || !strings.Contains(want, "Deferd2Degraded") {
		t.Fatalf("the sequential run did not run every loop:\n%s", want)
	}
	deferred := 0
	for i := 0; i < 8; i++ {
		par := 2 + i%4
		got, _, d := concurrentRunCounting(t, par, int64(i+2))
		if got != want {
			t.Fatalf("parallelism %d (run %d) differs from the sequential run:\n--- sequential\n%s--- concurrent\n%s", par, i, want, got)
		}
		deferred += d
	}
	if deferred == 0 {
		t.Error("no write was deferred to a turn in any run: the deferring loops were not exercised")
	}
}

// TestConcurrentLoopsOverlap: with Parallelism 3, three concurrent loops are in flight at once (each waits, bounded,
// until all three started); with Parallelism 1 they run one after another.
func TestConcurrentLoopsOverlap(t *testing.T) {
	run := func(par int) (int32, error) {
		c := newTestCluster(t)
		var started, maxSeen int32
		var ls []Loop
		for i := 0; i < 3; i++ {
			ls = append(ls, Loop{Name: fmt.Sprint("l", i), Sync: func(context.Context) error {
				n := atomic.AddInt32(&started, 1)
				for atomic.LoadInt32(&maxSeen) < n {
					atomic.CompareAndSwapInt32(&maxSeen, atomic.LoadInt32(&maxSeen), n)
				}
				deadline := time.Now().Add(300 * time.Millisecond)
				for atomic.LoadInt32(&started) < 3 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				return nil
			}}.Concurrent(NewTurn(), Secret("ns-a", fmt.Sprint("s", i))))
		}
		r := &Runner{Cluster: c, MaxPasses: 1, Parallelism: par}
		err := r.Run(context.Background(), Phase{Name: "p", Loops: ls})
		return atomic.LoadInt32(&maxSeen), err
	}
	if seen, err := run(3); err != nil || seen != 3 {
		t.Errorf("parallelism 3: %d loops in flight at once (err %v), want 3", seen, err)
	}
	if _, err := run(1); err != nil {
		t.Errorf("parallelism 1: %v", err)
	}
}

// TestWriteOutsideTurnFails: a concurrent loop that writes without its turn's client (before the loop ahead of it
// finished; here that loop has not even taken its turn) gets an error naming the object, and the loop ahead keeps
// its own writes.
func TestWriteOutsideTurnFails(t *testing.T) {
	c := newTestCluster(t)
	rogueDone := make(chan struct{})
	aheadTurn := NewTurn()
	ahead := Loop{Name: "ahead", Sync: func(ctx context.Context) error {
		select {
		case <-rogueDone:
		case <-time.After(5 * time.Second):
			return errors.New("the rogue loop never ran")
		}
		_, err := aheadTurn.CoreV1(c.Kube.CoreV1()).ConfigMaps("ns-a").Create(ctx, cm("ns-a", "ahead", "1"), metav1.CreateOptions{})
		return err
	}}.Concurrent(aheadTurn, ConfigMap("ns-a", "ahead"))
	var rogueErr error
	rogue := Loop{Name: "rogue", Sync: func(ctx context.Context) error {
		defer close(rogueDone)
		_, rogueErr = c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", "rogue", "1"), metav1.CreateOptions{})
		return nil
	}}.Concurrent(NewTurn(), ConfigMap("ns-a", "rogue"))
	r := &Runner{Cluster: c, MaxPasses: 1, Parallelism: 2}
	_ = r.Run(context.Background(), Phase{Name: "p", Loops: []Loop{ahead, rogue}})
	if rogueErr == nil || !strings.Contains(rogueErr.Error(), "configmaps ns-a/rogue") || !strings.Contains(rogueErr.Error(), "no loop (between turns) has the turn") {
		t.Errorf("rogue write: err = %v, want a turn error naming the object and the loop with the turn", rogueErr)
	}
	j := c.Journal()
	if len(j) != 1 || j[0].Name != "ahead" || j[0].Loop != "ahead" {
		t.Errorf("journal = %v, want only the create of ahead", j)
	}
}

// TestConcurrentLoopStartsAheadAndRerunsWhenStale: a concurrent loop behind a loop that is not concurrent starts
// before that loop runs (it does not wait for its turn to read), and when that loop then writes what it read, it
// runs again in its turn, so the run leaves what a sequential one does.
func TestConcurrentLoopStartsAheadAndRerunsWhenStale(t *testing.T) {
	c := newTestCluster(t)
	started := make(chan struct{})
	var once sync.Once
	var runs int32
	// gate is not concurrent: it waits (bounded) until the reader behind it started, then writes what the reader
	// reads.
	gate := Loop{Name: "gate", Sync: func(ctx context.Context) error {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			return errors.New("the reader behind did not start before its turn")
		}
		if _, err := c.Kube.CoreV1().ConfigMaps("ns-a").Get(ctx, "src", metav1.GetOptions{}); err == nil {
			return nil
		}
		_, err := c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", "src", "v1"), metav1.CreateOptions{})
		return err
	}}
	inner := reader(c, "dst", "src", &runs)
	sync0 := inner.Sync
	inner.Sync = func(ctx context.Context) error {
		once.Do(func() { close(started) })
		return sync0(ctx)
	}
	r := &Runner{Cluster: c, MaxPasses: 3, Parallelism: 2}
	if err := r.Run(context.Background(), Phase{Name: "p", Loops: []Loop{gate, inner}}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Kube.CoreV1().Secrets("ns-a").Get(context.Background(), "dst", metav1.GetOptions{})
	if err != nil || string(s.Data["k"]) != "v1" {
		t.Fatalf("dst = %v, %v; want the value gate wrote ahead of it", s, err)
	}
	if got := r.Result().Passes[0].Errors; got != 0 {
		t.Errorf("pass 1 has %d loop errors: the stale run's error was kept instead of the run in its turn", got)
	}
	// Pass 1: one early (stale) run and its rerun; pass 2: one run that writes nothing.
	if runs != 3 {
		t.Errorf("reader ran %d times, want 3 (stale run, rerun in its turn, fixpoint pass)", runs)
	}
	for _, w := range c.Journal() {
		if w.Name == "dst" && (w.Loop != "read/dst" || w.Pass != 1) {
			t.Errorf("write %v: want it attributed to read/dst in pass 1", w)
		}
	}
}

// TestConcurrentLoopSkipsOverlapAhead: a concurrent loop starts while an earlier loop that shares a footprint with
// the one ahead of it waits (no head-of-line blocking), and the one that shares waits for the one ahead.
func TestConcurrentLoopSkipsOverlapAhead(t *testing.T) {
	c := newTestCluster(t)
	var mu sync.Mutex
	var events []string
	note := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	cStarted := make(chan struct{})
	loop := func(name, secret string, body func()) Loop {
		return Loop{Name: name, Sync: func(context.Context) error {
			note(name + " start")
			body()
			note(name + " end")
			return nil
		}}.Concurrent(NewTurn(), Secret("ns-a", secret))
	}
	a := loop("a", "s1", func() {
		select { // a runs until c has started: c must not wait for b, which waits for a
		case <-cStarted:
		case <-time.After(5 * time.Second):
		}
	})
	b := loop("b", "s1", func() {})
	cl := loop("c", "s2", func() { close(cStarted) })
	r := &Runner{Cluster: c, MaxPasses: 1, Parallelism: 4}
	if err := r.Run(context.Background(), Phase{Name: "p", Loops: []Loop{a, b, cl}}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(events, ", ")
	pos := func(e string) int { return strings.Index(got, e) }
	if pos("c start") > pos("a end") {
		t.Errorf("c started after a ended (%s): it waited behind b", got)
	}
	if pos("b start") < pos("a end") {
		t.Errorf("b started before a ended (%s): they share s1", got)
	}
}

// TestSettledObjectsLetLoopsBehindStart: a loop that shares only a settled object with the loop ahead of it starts
// once that loop settled it, before it finished; if the loop ahead writes the object after all (the hint was
// wrong), the loop behind runs again in its turn and copies the last value, as a sequential run does.
func TestSettledObjectsLetLoopsBehindStart(t *testing.T) {
	for _, lie := range []bool{false, true} {
		c := newTestCluster(t)
		bStarted := make(chan struct{})
		var bRuns int32
		aTurn, bTurn := NewTurn(), NewTurn()
		write := func(ctx context.Context, turn *Turn, name, v string) error {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: name}, Data: map[string][]byte{"k": []byte(v)}}
			cl := turn.CoreV1(c.Kube.CoreV1()).Secrets("ns-a")
			if _, err := cl.Create(ctx, s, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
				_, err = cl.Update(ctx, s, metav1.UpdateOptions{})
				return err
			} else {
				return err
			}
		}
		a := Loop{Name: "a", Sync: func(ctx context.Context) error {
			if err := write(ctx, aTurn, "signer", "v1"); err != nil {
				return err
			}
			aTurn.Settle()
			select { // a finishes only once b started
			case <-bStarted:
			case <-time.After(5 * time.Second):
				return errors.New("b did not start after a settled")
			}
			if lie {
				if err := write(ctx, aTurn, "signer", "v2"); err != nil {
					return err
				}
			}
			return write(ctx, aTurn, "target-a", "a")
		}}.Concurrent(aTurn, Secret("ns-a", "signer"), Secret("ns-a", "target-a")).Settles(Secret("ns-a", "signer"))
		secrets := c.KubeInformers.InformersFor("ns-a").Core().V1().Secrets().Lister().Secrets("ns-a")
		var once sync.Once
		b := Loop{Name: "b", Sync: func(ctx context.Context) error {
			once.Do(func() { close(bStarted) })
			atomic.AddInt32(&bRuns, 1)
			s, err := secrets.Get("signer")
			if err != nil {
				return err
			}
			return write(ctx, bTurn, "target-b", string(s.Data["k"]))
		}}.Concurrent(bTurn, Secret("ns-a", "signer"), Secret("ns-a", "target-b")).Settles(Secret("ns-a", "signer"))
		r := &Runner{Cluster: c, MaxPasses: 1, Parallelism: 2}
		var nc *NotConvergedError // one pass: it writes, so it is not a fixpoint, but no loop may fail
		if err := r.Run(context.Background(), Phase{Name: "p", Loops: []Loop{a, b}}); !errors.As(err, &nc) || len(nc.Errors) > 0 {
			t.Fatalf("lie=%v: %v", lie, err)
		}
		got, err := c.Kube.CoreV1().Secrets("ns-a").Get(context.Background(), "target-b", metav1.GetOptions{})
		want := map[bool]string{false: "v1", true: "v2"}[lie]
		if err != nil || string(got.Data["k"]) != want {
			t.Errorf("lie=%v: target-b = %v (%v), want %s", lie, got, err, want)
		}
		if wantRuns := map[bool]int32{false: 1, true: 2}[lie]; bRuns != wantRuns {
			t.Errorf("lie=%v: b ran %d times, want %d", lie, bRuns, wantRuns)
		}
		if ab := r.Result().Abandoned; (len(ab) > 0) != lie {
			t.Errorf("lie=%v: abandoned runs %v", lie, ab)
		}
	}
}

// TestSlotsOrder: a freed slot goes, among the loops ready to start (whatever order they became ready in), to
// the one whose turn has come, else to the one making the most keys, else to the earliest; a loop that is not
// ready does not hold back the ones behind it.
func TestSlotsOrder(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	for _, c := range []struct {
		name  string
		keys  []int // of loops 1-4 (loop 0 holds the slot)
		turn  int   // the loop whose turn has come (-1: none of 1-4)
		ready []int // the loops that become ready, in that order
		want  []int // the order they get the slot in
	}{
		{name: "earliest", keys: []int{0, 0, 0, 0}, turn: -1, ready: []int{3, 1, 2}, want: []int{1, 2, 3}},
		{name: "most keys", keys: []int{1, 0, 2, 2}, turn: -1, ready: []int{1, 2, 4, 3}, want: []int{3, 4, 1, 2}},
		{name: "turn", keys: []int{0, 2, 1, 2}, turn: 1, ready: []int{2, 4, 3, 1}, want: []int{1, 2, 4, 3}},
		{name: "not ready", keys: []int{0, 2, 2, 2}, turn: 1, ready: []int{4, 3}, want: []int{3, 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSlots(1)
			s.want(0, 0, nil)
			for i, k := range c.keys {
				turn := make(chan struct{})
				if i+1 == c.turn {
					turn = closed
				}
				s.want(i+1, k, turn)
			}
			release0 := s.start(0) // the pass's first loop: its turn has come
			got := make(chan int, len(c.ready))
			for _, i := range c.ready {
				go func() {
					release := s.start(i)
					got <- i
					release()
				}()
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) { // bounded
					s.mu.Lock()
					ready := s.waiting[i].ready
					s.mu.Unlock()
					if ready {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("loop %d did not become ready", i)
					}
				}
			}
			release0()
			for _, want := range c.want {
				select {
				case i := <-got:
					if i != want {
						t.Fatalf("slot went to loop %d, want %d (order %v)", i, want, c.want)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no loop got the slot")
				}
			}
		})
	}
}

// TestKeysFirstMade: a loop counts the keys it makes that no concurrent loop ahead of it has in its footprint.
func TestKeysFirstMade(t *testing.T) {
	signer, a, b := Secret("ns", "signer"), Secret("ns", "a"), Secret("ns", "b")
	bundle := ConfigMap("ns", "bundle")
	rowA := Loop{Name: "a"}.Concurrent(NewTurn(), signer, bundle, a).MakesKeys(signer, a)
	rowB := Loop{Name: "b"}.Concurrent(NewTurn(), signer, bundle, b).MakesKeys(signer, b)
	other := Loop{Name: "other"}.Concurrent(NewTurn(), bundle)
	for _, c := range []struct {
		l     Loop
		ahead []Loop
		want  int
	}{
		{rowA, nil, 2},
		{rowB, []Loop{rowA}, 1},
		{rowB, []Loop{other}, 2},
		{other, []Loop{rowA}, 0},
	} {
		if got := keysFirstMade(c.l, c.ahead); got != c.want {
			t.Errorf("%s after %d loops: %d keys, want %d", c.l.Name, len(c.ahead), got, c.want)
		}
	}
}

// TestPublishedWritesReachTheLoopsBehind: a deferring loop that settled an object it keeps for its turn publishes
// it; a loop behind that shares only that object starts and reads it through Published before the turn made it,
// and the turn making it does not make that loop stale. When the loop ahead is abandoned instead (a loop that is
// not concurrent, ahead of both, wrote what it watches), the loop behind is stale too and both run again in their
// turn, as a sequential run would.
func TestPublishedWritesReachTheLoopsBehind(t *testing.T) {
	for _, abandon := range []bool{false, true} {
		c := newTestCluster(t)
		bRead := make(chan struct{})
		var readOnce sync.Once
		aTurn, bTurn := NewTurn().DeferWrites(), NewTurn().DeferWrites()
		secrets := c.KubeInformers.InformersFor("ns-a").Core().V1().Secrets().Lister().Secrets("ns-a")
		get := func(reader, name string) (*corev1.Secret, error) {
			if o, ok := c.Published(reader, Secret("ns-a", name)); ok {
				return o.(*corev1.Secret), nil
			}
			return secrets.Get(name)
		}
		// gate is not concurrent and runs first: when abandon is set it waits (bounded) until b read the
		// published signer, then writes a's input, which makes a stale.
		gate := Loop{Name: "gate", Sync: func(ctx context.Context) error {
			if !abandon {
				return nil
			}
			select {
			case <-bRead:
			case <-time.After(5 * time.Second):
				return errors.New("b never read the published signer")
			}
			_, err := c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", "input", "x"), metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}}
		a := Loop{Name: "a", Sync: func(ctx context.Context) error {
			cl := aTurn.CoreV1(c.Kube.CoreV1()).Secrets("ns-a")
			if _, err := get("a", "signer"); apierrors.IsNotFound(err) {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: "signer"}, Data: map[string][]byte{"k": []byte("v")}}
				if _, err := cl.Create(ctx, s, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			aTurn.Settle()
			if !abandon {
				select { // a takes its turn only once b read what it published
				case <-bRead:
				case <-time.After(5 * time.Second):
					return errors.New("b never read the published signer")
				}
			}
			_, err := cl.Get(ctx, "signer", metav1.GetOptions{}) // waits for the turn, which makes the write
			return err
		}}.Concurrent(aTurn, Secret("ns-a", "signer")).Reads(ConfigMap("ns-a", "input")).Settles(Secret("ns-a", "signer"))
		var bRuns int32
		b := Loop{Name: "b", Sync: func(ctx context.Context) error {
			atomic.AddInt32(&bRuns, 1)
			s, err := get("b", "signer")
			readOnce.Do(func() { close(bRead) })
			if err != nil {
				return err
			}
			if _, err := secrets.Get("target"); err == nil {
				return nil
			}
			cl := bTurn.CoreV1(c.Kube.CoreV1()).Secrets("ns-a")
			_, err = cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: "target"}, Data: s.Data}, metav1.CreateOptions{})
			return err
		}}.Concurrent(bTurn, Secret("ns-a", "signer"), Secret("ns-a", "target"))
		r := &Runner{Cluster: c, MaxPasses: 3, Parallelism: 2}
		if err := r.Run(context.Background(), Phase{Name: "p", Loops: []Loop{gate, a, b}}); err != nil {
			t.Fatalf("abandon=%v: %v", abandon, err)
		}
		got, err := c.Kube.CoreV1().Secrets("ns-a").Get(context.Background(), "target", metav1.GetOptions{})
		if err != nil || string(got.Data["k"]) != "v" {
			t.Errorf("abandon=%v: target = %v, %v; want the signer's data", abandon, got, err)
		}
		ab := strings.Join(r.Result().Abandoned, ",")
		if want := map[bool]string{false: "", true: "a,b"}[abandon]; ab != want {
			t.Errorf("abandon=%v: abandoned runs %q, want %q", abandon, ab, want)
		}
		if p := r.Result().Passes[0]; p.Errors != 0 {
			t.Errorf("abandon=%v: pass 1 has %d loop errors", abandon, p.Errors)
		}
	}
}
