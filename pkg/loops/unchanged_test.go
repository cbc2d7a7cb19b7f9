package loops

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// unchangedRun runs census "middle", reader r0 of it (Unchanged), two rotation-like loops, reader r1 (Unchanged)
// of census "tail", which comes after it, and census "tail". The rotations' and readers' secrets change what the
// censuses count in later passes, so each reader's input changes after its first run: r0's in the pass after (the
// census ahead of it counts the secrets made behind it), r1's within the same pass (the census behind it). It
// returns what the run leaves (observed) and, by pass, the loops skipped.
func unchangedRun(t *testing.T, parallelism int, runUnchanged bool) (string, [][]string) {
	t.Helper()
	c := newTestCluster(t)
	op := c.NewOperatorClient("KubeAPIServer", "kubeapiservers", operatorv1.StaticPodOperatorSpec{}, operatorv1.StaticPodOperatorStatus{})
	var runs int32
	rnd := func() time.Duration { return time.Millisecond }
	ls := []Loop{
		census(c, "middle"), reader(c, "r0", "middle", &runs).Unchanged(),
		rotationLike(c, op, "a0", rnd), rotationLike(c, op, "a1", rnd),
		reader(c, "r1", "tail", &runs).Unchanged(), census(c, "tail"),
	}
	r := &Runner{Cluster: c, MaxPasses: 8, Parallelism: parallelism, RunUnchanged: runUnchanged}
	if err := r.Run(context.Background(), Phase{Name: "converge", Loops: ls}); err != nil {
		t.Fatalf("parallelism %d: %v", parallelism, err)
	}
	res := r.Result()
	byPass := make([][]string, len(res.Passes))
	k := 0
	for i, p := range res.Passes {
		byPass[i] = append([]string{}, res.Skipped[k:k+p.Skipped]...)
		k += p.Skipped
	}
	if k != len(res.Skipped) {
		t.Fatalf("the passes count %d skipped loops, the result names %d", k, len(res.Skipped))
	}
	for _, p := range res.Passes {
		line := fmt.Sprintf("# converge pass %d: %d writes, %d loop errors, %d skipped (unchanged), ", p.Pass, p.Writes, p.Errors, p.Skipped)
		if (p.Skipped > 0) != strings.Contains(res.Trace(), line) {
			t.Errorf("pass %d skipped %d loops; the trace says:\n%s", p.Pass, p.Skipped, res.Trace())
		}
	}
	return observed(t, c, r, op), byPass
}

// TestUnchangedLoopsSkippedOnlyWhileInputsUnchanged: a loop marked Unchanged is skipped in a pass exactly when its
// last run succeeded and nothing it watches was written since that run ended, whether the write came from a loop
// ahead of it in a later pass or from one behind it in the same pass; skipping changes nothing a run leaves
// (against the run of every loop in every pass), sequential or with loops in flight.
func TestUnchangedLoopsSkippedOnlyWhileInputsUnchanged(t *testing.T) {
	want, none := unchangedRun(t, 1, true)
	for i, s := range none {
		if len(s) > 0 {
			t.Fatalf("RunUnchanged: pass %d skipped %v", i+1, s)
		}
	}
	// Pass 1: middle counts 0 secrets; r0 copies it; a0 and a1 make theirs; r1 fails (no tail yet); tail counts 3.
	// Pass 2: middle counts 3 (changed: r0 runs); r1 copies tail and makes a secret, which tail then counts (4),
	// after r1's run. Pass 3: middle counts 4 (r0 runs); r1 runs (tail changed behind it); tail still 4. Pass 4:
	// nothing either reader watches changed since its run: both are skipped, and nothing is written.
	wantSkipped := [][]string{nil, nil, nil, {"read/r0", "read/r1"}}
	for _, par := range []int{1, 2, 3} {
		got, skipped := unchangedRun(t, par, false)
		if got != want {
			t.Errorf("parallelism %d leaves other objects than running every loop:\n%s\nwant:\n%s", par, got, want)
		}
		norm := make([][]string, len(skipped))
		for i, s := range skipped {
			if len(s) > 0 {
				norm[i] = s
			}
		}
		if !reflect.DeepEqual(norm, wantSkipped) {
			t.Errorf("parallelism %d: skipped by pass %q, want %q", par, norm, wantSkipped)
		}
	}
}

// TestUnchangedLoopRunsInEveryNewRun: what the runner knows of a loop's last run does not outlive the phase run
// (the cluster may be changed between runs by something other than the loops).
func TestUnchangedLoopRunsInEveryNewRun(t *testing.T) {
	c := newTestCluster(t)
	var runs int32
	ls := []Loop{census(c, "middle"), reader(c, "r0", "middle", &runs).Unchanged()}
	r := &Runner{Cluster: c, MaxPasses: 5, Parallelism: 2}
	ctx := context.Background()
	if err := r.Run(ctx, Phase{Name: "converge", Loops: ls}); err != nil {
		t.Fatal(err)
	}
	before := runs
	if err := r.Run(ctx, Phase{Name: "converge", Loops: ls}); err != nil {
		t.Fatal(err)
	}
	last := r.Result().Passes[len(r.Result().Passes)-1]
	if runs == before || last.Skipped != 0 {
		t.Errorf("the second run's pass 1 skipped the reader (runs %d then %d, skipped %d)", before, runs, last.Skipped)
	}
}

// TestUnchangedLoopThatFailedRunsAgain: a run that failed is never taken as standing: the loop runs in the next
// pass and its error keeps the phase from a fixpoint, even though nothing it watches changed.
func TestUnchangedLoopThatFailedRunsAgain(t *testing.T) {
	for _, par := range []int{1, 2} {
		c := newTestCluster(t)
		var runs int32
		// r0 reads configmap "never", which no loop makes: it fails in every pass.
		ls := []Loop{census(c, "middle"), reader(c, "r0", "never", &runs).Unchanged()}
		r := &Runner{Cluster: c, MaxPasses: 5, Parallelism: par}
		err := r.Run(context.Background(), Phase{Name: "converge", Loops: ls})
		var nc *NotConvergedError
		if !errors.As(err, &nc) || nc.Errors["read/r0"] == "" {
			t.Errorf("parallelism %d: the run ended with %v, want the reader's error", par, err)
		}
		if len(r.Result().Skipped) != 0 || runs != int32(len(r.Result().Passes)) {
			t.Errorf("parallelism %d: skipped %v, %d runs in %d passes", par, r.Result().Skipped, runs, len(r.Result().Passes))
		}
	}
}

// copying is a loop that is not concurrent: it copies configmap from (made by a census) into configmap to, and
// counts its runs; it declares both (Watches) and, when extra is set, also writes configmap extra, which it does
// not declare.
func copying(c *Cluster, from, to, extra string, runs *int32) Loop {
	cms := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister().ConfigMaps("ns-a")
	return Loop{Name: "copy/" + to, Sync: func(ctx context.Context) error {
		*runs++
		src, err := cms.Get(from)
		if err != nil {
			return fmt.Errorf("%s not there yet", from)
		}
		for _, name := range []string{to, extra} {
			if name == "" {
				continue
			}
			cur, err := cms.Get(name)
			if apierrors.IsNotFound(err) {
				_, err = c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", name, src.Data["k"]), metav1.CreateOptions{})
			} else if err == nil && cur.Data["k"] != src.Data["k"] {
				next := cur.DeepCopy()
				next.Data["k"] = src.Data["k"]
				_, err = c.Kube.CoreV1().ConfigMaps("ns-a").Update(ctx, next, metav1.UpdateOptions{})
			}
			if err != nil {
				return err
			}
		}
		return nil
	}}.Watches(ConfigMap("ns-a", from), ConfigMap("ns-a", to))
}

// TestUnchangedDeclaredLoop: a loop that is not concurrent and declares what it watches (Watches) is skipped like
// a concurrent one, sequential or with loops in flight, and leaves what running it in every pass leaves.
func TestUnchangedDeclaredLoop(t *testing.T) {
	run := func(par int, runUnchanged bool) (string, int32, []string) {
		c := newTestCluster(t)
		op := c.NewOperatorClient("KubeAPIServer", "kubeapiservers", operatorv1.StaticPodOperatorSpec{}, operatorv1.StaticPodOperatorStatus{})
		var runs int32
		rnd := func() time.Duration { return time.Millisecond }
		ls := []Loop{census(c, "middle"), copying(c, "middle", "copy", "", &runs).Unchanged(),
			rotationLike(c, op, "a0", rnd), rotationLike(c, op, "a1", rnd)}
		r := &Runner{Cluster: c, MaxPasses: 8, Parallelism: par, RunUnchanged: runUnchanged}
		if err := r.Run(context.Background(), Phase{Name: "converge", Loops: ls}); err != nil {
			t.Fatalf("parallelism %d: %v", par, err)
		}
		return observed(t, c, r, op), runs, r.Result().Skipped
	}
	want, wantRuns, _ := run(1, true)
	for _, par := range []int{1, 2} {
		got, runs, skipped := run(par, false)
		if got != want {
			t.Errorf("parallelism %d leaves other objects than running every loop:\n%s\nwant:\n%s", par, got, want)
		}
		// Pass 1: middle 0, copy made, a0 and a1 made. Pass 2: middle 2 (copy runs). Pass 3: nothing changed
		// (copy skipped).
		if !reflect.DeepEqual(skipped, []string{"copy/copy"}) || runs != wantRuns-1 {
			t.Errorf("parallelism %d: skipped %v, %d runs (every pass: %d)", par, skipped, runs, wantRuns)
		}
	}
}

// TestDeclaredLoopWritesOnlyWhatItDeclares: a write of an object a loop did not declare (Watches) fails, so that a
// declaration that misnames what the loop writes cannot pass unnoticed.
func TestDeclaredLoopWritesOnlyWhatItDeclares(t *testing.T) {
	for _, par := range []int{1, 2} {
		c := newTestCluster(t)
		var runs int32
		ls := []Loop{census(c, "middle"), copying(c, "middle", "copy", "undeclared", &runs)}
		r := &Runner{Cluster: c, MaxPasses: 3, Parallelism: par}
		err := r.Run(context.Background(), Phase{Name: "converge", Loops: ls})
		if err == nil || !strings.Contains(err.Error(), "configmaps ns-a/undeclared, which it does not declare") {
			t.Errorf("parallelism %d: %v, want the undeclared write refused", par, err)
		}
	}
}

// TestManagementStateVersion: the operator's management state, as an object a loop watches, changes with a write
// that changes it and with no other write of the spec.
func TestManagementStateVersion(t *testing.T) {
	ctx := context.Background()
	c := newTestCluster(t)
	op := c.NewOperatorClient("KubeAPIServer", "kubeapiservers",
		operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}}, operatorv1.StaticPodOperatorStatus{})
	version := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.watchVersions[op.ManagementState()]
	}
	spec, _, rv, _ := op.GetOperatorState()
	spec.LogLevel = operatorv1.Debug
	if _, _, err := op.UpdateOperatorSpec(ctx, rv, spec); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != 0 {
		t.Fatalf("a log level change moved the management state's version to %d", v)
	}
	spec, _, rv, _ = op.GetOperatorState()
	spec.ManagementState = operatorv1.Unmanaged
	if _, _, err := op.UpdateOperatorSpec(ctx, rv, spec); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != len(c.Journal()) {
		t.Fatalf("the management state's version is %d after the write %d that changed it", v, len(c.Journal()))
	}
}
