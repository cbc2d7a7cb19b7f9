package renew

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/state"
)

// A re-render (render-static again on a directory that holds a cluster) writes, when it changes what the running
// node has, the update for the node that renew writes (compare, fillUpdate: one code path), chained from the
// directory's last update, so that the node's aio-update applies it as it applies a renewal. A new certificate
// validity is applied to the leaves the render issued before: those issued for another lifetime are marked due
// as --within marks them (marks.go), and the update carries them.

// rerenderBy names a re-render in the update's README.
const rerenderBy = "a re-render (render-static with changed inputs), for what it changed on the running node"

// Render is the render (pipeline.RenderWith) with the update for the running node of a cluster it continues: the
// command's and a fleet's renders.
func Render(ctx context.Context, o pipeline.Options) (*pipeline.Summary, error) {
	return pipeline.RenderWith(ctx, o, &rerender{})
}

// rerender is renew's pipeline.NodeUpdater.
type rerender struct {
	m   *marker
	dir string
	// earlier is the directory's aio.ign, read and parsed while the render settles (Hooks starts it); found is false
	// when the directory has none (no node was installed from it).
	earlier func() (node *earlierNode, found bool, err error)
}

func (r *rerender) Check(dir string) installconfig.ErrorList {
	r.dir = dir
	return checkPending(dir)
}

// Hooks marks due, when the certificate validity changed from the saved one, every leaf issued for another
// lifetime; records each component's revision (marker.before) for the update; and starts reading the directory's
// aio.ign, which Make compares the render with (startEarlier).
func (r *rerender) Hooks(st *state.State, in *clusterconfig.Inputs) *pipeline.SettleHooks {
	r.m = &marker{now: time.Now()}
	var saved string
	if ok, err := st.Inputs.Get(pipeline.InCertValidity, &saved); ok && err == nil {
		if was, err := time.ParseDuration(saved); err == nil && was != in.Lifetimes.Leaf {
			r.m.validity = in.Lifetimes.Leaf
			r.m.reason = fmt.Sprintf("cert validity %s -> %s: issued for another lifetime", was, in.Lifetimes.Leaf)
		}
	}
	r.earlier = startEarlier(r.dir)
	return &pipeline.SettleHooks{BeforeConverge: r.m.before, AfterConverge: r.m.after}
}

// startEarlier reads dir's aio.ign and starts its parse (readEarlier) while the render goes on; the function it returns
// waits for it.
func startEarlier(dir string) func() (*earlierNode, bool, error) {
	oldIgn, err := os.ReadFile(filepath.Join(dir, "aio.ign"))
	if errors.Is(err, fs.ErrNotExist) {
		return func() (*earlierNode, bool, error) { return nil, false, nil }
	}
	if err != nil {
		return func() (*earlierNode, bool, error) { return nil, false, err }
	}
	parsed := readEarlier(oldIgn)
	return func() (*earlierNode, bool, error) {
		n, err := parsed()
		return n, true, err
	}
}

// Make is the update of what the render changed on the running node (nil: nothing), compared with the node's
// aio.ign in dir (none: no node was installed from this directory, so no update).
func (r *rerender) Make(ctx context.Context, dir string, st *state.State, eng *pipeline.Settled, out *pipeline.Output) (*pipeline.NodeUpdate, error) {
	if r.earlier == nil || r.dir != dir {
		r.earlier = startEarlier(dir)
	}
	node, found, err := r.earlier()
	if !found { // none (no update), or unreadable
		return nil, err
	}
	rep, upd, err := compare(ctx, Options{Dir: dir, Now: r.m.now}, st, r.m, eng, out, func() (*earlierNode, error) { return node, err })
	if err != nil || upd == nil {
		return nil, err
	}
	return &pipeline.NodeUpdate{Line: rep.updateLine(), ReadAtStart: rep.ReadAtStart,
		Fill: func(dir, tmp string) error { return fillUpdate(dir, tmp, upd, updateReadme(rerenderBy)) }}, nil
}

// updateLine is what a re-render's summary says of its update: which it follows, what it rolls and renews, and how
// the node applies it.
func (r *Report) updateLine() string {
	u := r.Update
	chain := fmt.Sprintf("update %s (the directory's first)", u.ID)
	if u.Previous != "" {
		chain = fmt.Sprintf("update %s -> %s", u.Previous, u.ID)
	}
	var rolled []string
	for _, c := range u.Components {
		if c.To != c.From {
			rolled = append(rolled, fmt.Sprintf("%s %d -> %d", c.Name, c.From, c.To))
		}
	}
	what := []string{orNothing(strings.Join(rolled, ", "), "no revision rolled")}
	if len(u.Renewed) > 0 {
		what = append(what, fmt.Sprintf("%d certificates issued again", len(u.Renewed)))
	}
	if len(r.Unconsumed) > 0 {
		what = append(what, fmt.Sprintf("%d due but not issued again: %s", len(r.Unconsumed), strings.Join(r.Unconsumed, ", ")))
	}
	upd := filepath.Join(r.Dir, UpdateDir)
	return fmt.Sprintf("%s for the running node: %s (%s, %d files); on the node: copy %s there and run: sudo aio-update apply <that directory>",
		chain, upd, strings.Join(what, "; "), len(u.Files), upd)
}

func orNothing(s, nothing string) string {
	if s == "" {
		return nothing
	}
	return s
}
