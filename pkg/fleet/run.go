package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/render-static/render-static/internal/isoembed"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/renew"
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

// Installable reports whether the site rendered and can be installed from the live ISO: its live.ign, and every
// worker's, fits the ISO's embed area (or was not measured: no xz where the fleet ran).
func (r Result) Installable() bool {
	return r.OK() && r.LiveFit() != FitDoesNotFit && len(r.workersNotFitting()) == 0
}

// Status is the site's StatusOK, StatusNotInstallable or StatusFailed.
func (r Result) Status() string {
	switch {
	case !r.OK():
		return StatusFailed
	case !r.Installable():
		return StatusNotInstallable
	}
	return StatusOK
}

// LiveFit is how the control-plane node's live.ign fits the live ISO's embed area (FitFits, FitDoesNotFit,
// FitNotMeasured), "" when the site failed.
func (r Result) LiveFit() string {
	if r.Summary == nil {
		return ""
	}
	return fitOf(r.Summary.LiveEmbed)
}

func fitOf(e pipeline.LiveEmbed) string {
	switch {
	case e.Bytes == 0:
		return FitNotMeasured
	case e.Fits():
		return FitFits
	}
	return FitDoesNotFit
}

// workersNotFitting are the workers whose live.ign does not fit the embed area.
func (r Result) workersNotFitting() []string {
	if r.Summary == nil {
		return nil
	}
	var out []string
	for _, w := range r.Summary.WorkerLive {
		if fitOf(w.LiveEmbed) == FitDoesNotFit {
			out = append(out, w.Name)
		}
	}
	return out
}

// liveColumn is the table's LIVE.IGN EMBED cell: the embed size and whether it fits.
func (r Result) liveColumn() string {
	switch fit := r.LiveFit(); fit {
	case "":
		return "-"
	case FitNotMeasured:
		return "not measured"
	case FitFits:
		return fmt.Sprintf("%d fits", r.Summary.LiveEmbed.Bytes)
	default:
		return fmt.Sprintf("%d DOES NOT FIT", r.Summary.LiveEmbed.Bytes)
	}
}

// Report is a fleet's outcome, in site-name order.
type Report struct {
	Results []Result
	Elapsed time.Duration
	Jobs    int
}

// NotInstallable are the sites that rendered but cannot be installed from the live ISO (Result.Installable).
func (r *Report) NotInstallable() []string {
	var out []string
	for _, x := range r.Results {
		if x.OK() && !x.Installable() {
			out = append(out, x.Site)
		}
	}
	return out
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
	sum, err := renew.Render(ctx, po)
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

// WriteTable writes the summary table: site, seconds, aio.ign size, live.ign's embed size and fit, earliest
// expiry (among the certificates renew renews) and status (ok, NOT INSTALLABLE, or the failure).
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SITE\tSECONDS\tAIO.IGN BYTES\tLIVE.IGN EMBED\tEARLIEST EXPIRY\tSTATUS")
	for _, x := range r.Results {
		if x.OK() {
			status := "ok"
			if !x.Installable() {
				status = "NOT INSTALLABLE: " + x.notInstallableWhy()
			}
			fmt.Fprintf(tw, "%s\t%.2f\t%d\t%s\t%s\t%s\n", x.Site, x.Elapsed.Seconds(), x.Summary.IgnitionBytes, x.liveColumn(),
				x.Summary.EarliestExpiry.UTC().Format(time.RFC3339), status)
			continue
		}
		lines := ErrorLines(x.Err)
		status := fmt.Sprintf("FAILED (%d %s, listed above)", len(lines), plural(len(lines), "problem", "problems"))
		if len(lines) == 1 {
			status = "FAILED: " + lines[0]
		}
		fmt.Fprintf(tw, "%s\t%.2f\t-\t-\t-\t%s\n", x.Site, x.Elapsed.Seconds(), status)
	}
	_ = tw.Flush()
	n := len(r.Results)
	rate := 0.0
	if r.Elapsed > 0 {
		rate = float64(n) / r.Elapsed.Seconds()
	}
	notInstallable := ""
	if k := len(r.NotInstallable()); k > 0 {
		notInstallable = fmt.Sprintf(", %d not installable", k)
	}
	fmt.Fprintf(w, "%d %s, %d failed%s, %s with %d %s (%.2f sites/s)\n", n, plural(n, "site", "sites"), r.Failed(),
		notInstallable, r.Elapsed.Round(time.Millisecond), r.Jobs, plural(r.Jobs, "job", "jobs"), rate)
}

// notInstallableWhy says which live.ign does not fit.
func (r Result) notInstallableWhy() string {
	var what []string
	if r.LiveFit() == FitDoesNotFit {
		what = append(what, "live.ign")
	}
	for _, w := range r.workersNotFitting() {
		what = append(what, "worker "+w+"'s live.ign")
	}
	return strings.Join(what, ", ") + " does not fit the live ISO (see the warning)"
}

// JSON is the report as WriteJSON gives it: every site (SiteJSON), and the counts.
type JSON struct {
	Sites          []SiteJSON `json:"sites"`
	Total          int        `json:"total"`
	Failed         int        `json:"failed"`
	NotInstallable int        `json:"notInstallable"`
	Seconds        float64    `json:"seconds"`
	Jobs           int        `json:"jobs"`
}

// JSON is the report's JSON form.
func (r *Report) JSON() JSON {
	out := JSON{Sites: []SiteJSON{}, Total: len(r.Results), Failed: r.Failed(), NotInstallable: len(r.NotInstallable()),
		Seconds: r.Elapsed.Seconds(), Jobs: r.Jobs}
	for _, x := range r.Results {
		j := SiteJSON{Site: x.Site, Dir: x.Dir, Status: x.Status(), Seconds: x.Elapsed.Seconds()}
		if s := x.Summary; s != nil && x.OK() {
			j.AioIgnBytes, j.LiveIgnBytes, j.LiveEmbedBytes = s.IgnitionBytes, s.LiveBytes, s.LiveEmbed.Bytes
			j.LiveEmbedAreaBytes, j.LiveFit, j.LiveFitError = isoembed.AreaSize, x.LiveFit(), s.LiveEmbed.Err
			j.WorkersNotFitting = x.workersNotFitting()
			j.EarliestExpiry, j.EarliestExpiryName = timeOrNil(s.EarliestExpiry), s.EarliestExpirySubject
			j.OffUntil, j.AdminKubeconfigUntil = timeOrNil(s.OffUntil), timeOrNil(s.AdminKubeconfigExpiry)
			j.UserCAs, j.UserCAsExpired = s.UserCAs, s.UserCAsExpired
			j.Warnings = s.Warnings
		}
		if x.Err != nil {
			j.Errors = ErrorLines(x.Err)
		}
		out.Sites = append(out.Sites, j)
	}
	return out
}

// WriteJSON writes the report as one indented JSON object (JSON).
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.JSON())
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
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

// A site's status (SiteJSON.Status; the table says them in capitals).
const (
	StatusOK = "ok"
	// StatusNotInstallable: rendered, but its live.ign (or a worker's) does not fit the live ISO's embed area.
	StatusNotInstallable = "not-installable"
	StatusFailed         = "failed"
)

// How a site's live.ign fits the live ISO's embed area (SiteJSON.LiveFit).
const (
	FitFits        = "fits"
	FitDoesNotFit  = "does-not-fit"
	FitNotMeasured = "not-measured"
)

// SiteJSON is one site as the JSON report gives it (WriteJSON). The field names are stable: docs/fleet.md lists
// them, and a hub reads them.
type SiteJSON struct {
	Site    string  `json:"site"`
	Dir     string  `json:"dir"`
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
	// What a rendered site gives (zero or absent when it failed).
	AioIgnBytes          int        `json:"aioIgnBytes,omitempty"`
	LiveIgnBytes         int        `json:"liveIgnBytes,omitempty"`
	LiveEmbedBytes       int        `json:"liveEmbedBytes,omitempty"`
	LiveEmbedAreaBytes   int        `json:"liveEmbedAreaBytes,omitempty"`
	LiveFit              string     `json:"liveFit,omitempty"`
	LiveFitError         string     `json:"liveFitError,omitempty"`
	WorkersNotFitting    []string   `json:"workersNotFitting,omitempty"`
	EarliestExpiry       *time.Time `json:"earliestExpiry,omitempty"`
	EarliestExpiryName   string     `json:"earliestExpiryName,omitempty"`
	OffUntil             *time.Time `json:"offUntil,omitempty"`
	AdminKubeconfigUntil *time.Time `json:"adminKubeconfigExpiry,omitempty"`
	UserCAs              int        `json:"userCAs,omitempty"`
	UserCAsExpired       int        `json:"userCAsExpired,omitempty"`
	Warnings             []string   `json:"warnings,omitempty"`
	Errors               []string   `json:"errors,omitempty"`
}
