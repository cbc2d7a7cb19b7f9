package fleet

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress hears about a fleet as it runs; calls are serialised.
type Progress interface {
	Start(total int)
	Done(r Result)
	Finish()
}

// NewProgress returns a progress bar with ETA redrawn in place (terminal) or one plain line per site.
// Failed sites are printed with every field problem in both modes.
func NewProgress(w io.Writer, terminal bool) Progress {
	return &progress{w: w, terminal: terminal, now: time.Now}
}

type progress struct {
	w           io.Writer
	terminal    bool
	total, done int
	failed      int
	start       time.Time
	now         func() time.Time
	drawn       bool
}

func (p *progress) Start(total int) {
	p.total, p.start = total, p.now()
	if p.terminal {
		p.draw()
	} else {
		fmt.Fprintf(p.w, "rendering %d sites\n", total)
	}
}

func (p *progress) Done(r Result) {
	p.done++
	if !r.OK() {
		p.failed++
	}
	if p.terminal {
		p.clear()
	}
	switch {
	case r.OK() && !r.Installable():
		// Said even on a terminal: the bar would hide it until the table.
		fmt.Fprintf(p.w, "[%d/%d] %s: rendered in %.2fs, NOT INSTALLABLE: %s\n", p.done, p.total, r.Site, r.Elapsed.Seconds(), r.notInstallableWhy())
	case r.OK():
		if !p.terminal {
			fmt.Fprintf(p.w, "[%d/%d] %s: ok in %.2fs (eta %s)\n", p.done, p.total, r.Site, r.Elapsed.Seconds(), p.eta())
		}
	default:
		lines := ErrorLines(r.Err)
		fmt.Fprintf(p.w, "[%d/%d] %s: FAILED:\n", p.done, p.total, r.Site)
		for _, l := range lines {
			fmt.Fprintf(p.w, "    %s\n", l)
		}
	}
	if p.terminal {
		p.draw()
	}
}

func (p *progress) Finish() {
	if p.terminal && p.drawn {
		fmt.Fprintln(p.w)
	}
}

// eta extrapolates the mean time per finished site over the sites left.
func (p *progress) eta() string {
	if p.done == 0 {
		return "?"
	}
	el := p.now().Sub(p.start)
	left := time.Duration(float64(el) / float64(p.done) * float64(p.total-p.done))
	return left.Round(time.Second).String()
}

const barWidth = 30

func (p *progress) draw() {
	filled := 0
	if p.total > 0 {
		filled = barWidth * p.done / p.total
	}
	bar := strings.Repeat("#", filled) + strings.Repeat(".", barWidth-filled)
	fmt.Fprintf(p.w, "\r[%s] %d/%d sites, %d failed, eta %s", bar, p.done, p.total, p.failed, p.eta())
	p.drawn = true
}

func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
