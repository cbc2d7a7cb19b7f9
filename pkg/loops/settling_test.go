package loops

import (
	"context"
	"regexp"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mapCopier copies configmaps of ns-a, destination ← source, visiting its rules as a Go map, as library-go's
// resource sync controller does: a copy of a copy is made in the run that visits it after its source exists.
func mapCopier(c *Cluster, rules map[string]string) Loop {
	return Loop{Name: "copier", Sync: func(ctx context.Context) error {
		l := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister().ConfigMaps("ns-a")
		for dest, src := range rules {
			s, err := l.Get(src)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			if _, err := l.Get(dest); err == nil {
				continue
			}
			if _, err := c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", dest, s.Data["k"]), metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	}}
}

var traceTimingRE = regexp.MustCompile(`, [0-9.]+(ns|µs|ms|s|m)\b`)

// TestSettlingMakesMapOrderInvisible: a loop visiting chained copy rules in map order, run with Settling, makes
// every copy in the pass its root source appears in and gives the same trace in every run, its writes listed by
// object; run once per pass, its copies land in passes that depend on the map's order (so the test would see it).
func TestSettlingMakesMapOrderInvisible(t *testing.T) {
	// root (seeded by "seed") ← a ← b ← c, and independent copies of root.
	rules := map[string]string{"a": "root", "b": "a", "c": "b", "x": "root", "y": "root", "z": "root", "w": "root"}
	run := func(settling bool) (trace string, passes int) {
		c := newTestCluster(t)
		seed := Loop{Name: "seed", Sync: func(ctx context.Context) error {
			l := c.KubeInformers.InformersFor("ns-a").Core().V1().ConfigMaps().Lister().ConfigMaps("ns-a")
			if _, err := l.Get("root"); err == nil {
				return nil
			}
			_, err := c.Kube.CoreV1().ConfigMaps("ns-a").Create(ctx, cm("ns-a", "root", "v"), metav1.CreateOptions{})
			return err
		}}
		copier := mapCopier(c, rules)
		if settling {
			copier = copier.Settling(c, 8)
		}
		r := &Runner{Cluster: c, MaxPasses: 10}
		if err := r.Run(context.Background(), Phase{Name: "converge", Loops: []Loop{seed, copier}}); err != nil {
			t.Fatal(err)
		}
		res := r.Result()
		return traceTimingRE.ReplaceAllString(res.Trace(), ""), res.TotalPasses()
	}
	want, passes := run(true)
	if passes != 2 {
		t.Errorf("settling: %d passes, want 2 (every copy in pass 1, then a pass writing nothing):\n%s", passes, want)
	}
	var copies []string
	for _, l := range strings.Split(want, "\n") {
		if strings.Contains(l, "copier") {
			copies = append(copies, strings.Fields(l)[len(strings.Fields(l))-1])
		}
	}
	if got := strings.Join(copies, " "); got != "ns-a/a ns-a/b ns-a/c ns-a/w ns-a/x ns-a/y ns-a/z" {
		t.Errorf("settling: the copier's writes are listed as %s, want by object:\n%s", got, want)
	}
	for i := 0; i < 20; i++ {
		if got, _ := run(true); got != want {
			t.Fatalf("settling: run %d's trace differs:\n%s\nwant\n%s", i+2, got, want)
		}
	}
	// Without settling, the chain a ← b ← c spreads over passes as the map's order falls: some run out of many
	// takes another number of passes or another trace.
	differs := false
	for i := 0; i < 40 && !differs; i++ {
		got, _ := run(false)
		first, _ := run(false)
		differs = got != first
	}
	if !differs {
		t.Errorf("without settling, 80 runs of a map-order copier gave one trace: the test no longer shows what Settling hides")
	}
}
