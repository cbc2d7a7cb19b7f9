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
