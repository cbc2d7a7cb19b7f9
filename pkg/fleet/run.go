package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
)

// Options are the fleet's inputs. Common holds what every site shares (cert validity, images, flavor); its
// install-config, node, infra ID and directory are each site's.
type Options struct {
	Common pipeline.Options
	// Out is the output directory: one folder per site, each replaced atomically like a single render's --dir.
	Out string
	// Jobs is how many sites render at once (<= 0: the number of cores). Memory is bounded by it.
	Jobs  int
	Shard Shard
	// Progress, when set, hears about every site as it finishes.
	Progress Progress
	// Names are how the front end says the inputs a site's errors and warnings refer to (installconfig.Expand);
	// a site's own fields keep their names.
	Names map[string]string
}

// Result is one site's outcome.
type Result struct {
	Site    string
	Dir     string
	Elapsed time.Duration
	// Summary is the render's summary (nil when it failed).
	Summary *pipeline.Summary
	Err     error
}

// OK reports whether the site rendered.
func (r Result) OK() bool { return r.Err == nil }

// Report is a fleet's outcome, in site-name order.
type Report struct {
	Results []Result
	Elapsed time.Duration
	Jobs    int
}

// Failed counts the sites that did not render.
func (r *Report) Failed() int {
	n := 0
	for _, x := range r.Results {
		if !x.OK() {
			n++
		}
	}
	return n
}

// Run renders the shard's sites, at most o.Jobs at a time. A site's failure never stops the others; the report
// says which failed and why. Only cancellation of ctx stops the fleet early (sites not started fail with it).
func Run(ctx context.Context, sites []Site, o Options) *Report {
	start := time.Now()
	jobs := o.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	shard := o.Shard
	if shard.Count == 0 {
		shard = All
	}
	mine := shard.Of(sites)
	results := make([]Result, len(mine))
	if o.Progress != nil {
		o.Progress.Start(len(mine))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := make(chan int)
	for w := 0; w < jobs && w < len(mine); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := renderSite(ctx, mine[i], o)
				results[i] = r
				if o.Progress != nil {
					mu.Lock()
					o.Progress.Done(r)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range mine {
		next <- i
	}
	close(next)
	wg.Wait()
	if o.Progress != nil {
		o.Progress.Finish()
	}
	return &Report{Results: results, Elapsed: time.Since(start), Jobs: jobs}
}

// renderSite renders one site into <Out>/<site> with the fleet's common options.
func renderSite(ctx context.Context, s Site, o Options) Result {
	t := time.Now()
	r := Result{Site: s.Name, Dir: filepath.Join(o.Out, s.Name)}
	if len(s.problems) > 0 {
		r.Err = named(s.problems, o.Names)
		return r
	}
	if err := ctx.Err(); err != nil {
		r.Err = err
		return r
	}
	po := o.Common
	po.InstallConfig, po.NodeIP, po.InfraID, po.Dir = s.InstallConfig, s.NodeIP, s.InfraID, r.Dir
	po.InstallDevice, po.NetworkKeyfiles = s.InstallDevice, s.NetworkKeyfiles
	if s.NodeName != "" {
		po.NodeName = s.NodeName
	}
	if po.NodeName == "" {
		po.NodeName = pipeline.DefaultNodeName
	}
	sum, err := pipeline.Render(ctx, po)
	r.Elapsed = time.Since(t)
	r.Summary, r.Err = sum, named(err, o.Names)
	if sum != nil {
		for i, w := range sum.Warnings {
			sum.Warnings[i] = installconfig.Expand(w, o.Names)
		}
	}
	return r
}

// named is a site's error as the fleet's front end says it (Options.Names): a site's own fields are its entry's
// (nodeIP, nodeName, infraID: the inputs' own names), the references to other inputs expanded.
func named(err error, names map[string]string) error {
	if err == nil {
		return nil
	}
	var list installconfig.ErrorList
	if errors.As(err, &list) {
		return list.Named(names)
	}
	return errors.New(installconfig.Expand(err.Error(), names))
}

// ErrorLines is a failed site's error as lines: one per field problem, or the error itself.
func ErrorLines(err error) []string {
	var list installconfig.ErrorList
	if errors.As(err, &list) {
		out := make([]string, len(list))
		for i, e := range list {
			out[i] = e.Error()
		}
		return out
	}
	return []string{err.Error()}
}

// WriteTable writes the summary table: site, seconds, aio.ign size, earliest expiry (or the failure).
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SITE\tSECONDS\tAIO.IGN BYTES\tEARLIEST EXPIRY\tSTATUS")
	for _, x := range r.Results {
		if x.OK() {
			fmt.Fprintf(tw, "%s\t%.2f\t%d\t%s\tok\n", x.Site, x.Elapsed.Seconds(), x.Summary.IgnitionBytes,
				x.Summary.EarliestExpiry.UTC().Format(time.RFC3339))
			continue
		}
		lines := ErrorLines(x.Err)
		status := fmt.Sprintf("FAILED (%d %s, listed above)", len(lines), plural(len(lines), "problem", "problems"))
		if len(lines) == 1 {
			status = "FAILED: " + lines[0]
		}
		fmt.Fprintf(tw, "%s\t%.2f\t-\t-\t%s\n", x.Site, x.Elapsed.Seconds(), status)
	}
	_ = tw.Flush()
	n := len(r.Results)
	rate := 0.0
	if r.Elapsed > 0 {
		rate = float64(n) / r.Elapsed.Seconds()
	}
	fmt.Fprintf(w, "%d %s, %d failed, %s with %d %s (%.2f sites/s)\n", n, plural(n, "site", "sites"), r.Failed(),
		r.Elapsed.Round(time.Millisecond), r.Jobs, plural(r.Jobs, "job", "jobs"), rate)
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// EnsureOut creates the output directory; created says it did (a run that renders nothing removes it again).
func EnsureOut(dir string) (created bool, err error) {
	if dir == "" {
		return false, fmt.Errorf("{out}: required")
	}
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return false, fmt.Errorf("{out}: %s is not a directory", dir)
		}
		return false, nil
	}
	return true, os.MkdirAll(dir, 0755)
}

// WriteWarnings writes every site's warnings (inputs that render but need care), one line each.
func (r *Report) WriteWarnings(w io.Writer) {
	for _, x := range r.Results {
		if x.Summary == nil {
			continue
		}
		for _, warning := range x.Summary.Warnings {
			fmt.Fprintf(w, "%s: warning: %s\n", x.Site, warning)
		}
	}
}
