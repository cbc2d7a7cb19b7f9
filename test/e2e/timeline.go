package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// The first boot's timeline: when the kubelet started, each static pod's container started, the node registered,
// /readyz answered, each namespace was created, the kubelet created each mirror pod, each pod's probes passed, each
// mirror pod was seen Running and Ready, and aiokube's phases. Sources: the harness's own observations
// (Node.event), the CRI (container start times), the kubelet's log (klog lines, microseconds) and aiokube's log,
// whose lines the harness stamps as they come (stampWriter).

// Event is one moment of a boot.
type Event struct {
	At   time.Time
	What string
}

type eventLog struct {
	mu     sync.Mutex
	events []Event
}

// event records what happens now.
func (n *Node) event(what string) {
	n.events.mu.Lock()
	defer n.events.mu.Unlock()
	n.events.events = append(n.events.events, Event{time.Now(), what})
}

// eventAt records what happened at a time the harness learnt (a condition's transition time).
func (n *Node) eventAt(at time.Time, what string) {
	n.events.mu.Lock()
	defer n.events.mu.Unlock()
	n.events.events = append(n.events.events, Event{at, what})
}

// stampFormat prefixes every line the harness writes to a unit's log.
const stampFormat = "2006-01-02T15:04:05.000000Z07:00"

// stampWriter writes each line to w prefixed with the time it was written.
type stampWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (s *stampWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := strings.IndexByte(string(s.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := fmt.Fprintf(s.w, "%s %s\n", time.Now().Format(stampFormat), s.buf[:i]); err != nil {
			return len(p), err
		}
		s.buf = s.buf[i+1:]
	}
}

// klogLine is a klog header: severity, month and day, time, thread, file:line.
var klogLine = regexp.MustCompile(`^[IWEF](\d{4} \d{2}:\d{2}:\d{2}\.\d{6})\s+\d+ \S+\] (.*)$`)

// kubeletEvents are the kubelet log's moments of the first boot, each kind once per pod: the node registered, a
// mirror pod refused for want of its namespace, a mirror pod the kubelet sees in the API (it created it), a
// startup probe passed, a readiness probe passed. year and loc complete klog's timestamps.
var kubeletEvents = []struct {
	re   *regexp.Regexp
	what string // with %s for the pod (when the pattern has a group)
}{
	{regexp.MustCompile(`^"Successfully registered node"`), "the kubelet registered the node"},
	{regexp.MustCompile(`^"Failed creating a mirror pod" err="namespaces .* not found" pod="([^"]+)"`), "the kubelet cannot create mirror pod %s yet: no namespace"},
	{regexp.MustCompile(`^"SyncLoop ADD" source="api" pods=\["([^"]+)"\]`), "mirror pod %s created (the kubelet sees it in the API)"},
	{regexp.MustCompile(`^"SyncLoop \(probe\)" probe="startup" status="started" pod="([^"]+)"`), "%s started (startup probe passed)"},
	{regexp.MustCompile(`^"SyncLoop \(probe\)" probe="readiness" status="ready" pod="([^"]+)"`), "%s ready (readiness probe passed)"},
}

// KubeletLogEvents reads those moments from a kubelet log written in year (klog leaves the year out) in loc.
func KubeletLogEvents(r io.Reader, year int, loc *time.Location) []Event {
	var out []Event
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		m := klogLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		for _, k := range kubeletEvents {
			g := k.re.FindStringSubmatch(m[2])
			if g == nil {
				continue
			}
			what := k.what
			if len(g) > 1 {
				what = fmt.Sprintf(k.what, g[1])
			}
			if seen[what] {
				break
			}
			at, err := time.ParseInLocation("2006 0102 15:04:05.000000", fmt.Sprintf("%d %s", year, m[1]), loc)
			if err != nil {
				break
			}
			seen[what] = true
			out = append(out, Event{at, what})
			break
		}
	}
	return out
}

// aiokubeCreated is aiokube's line for one created manifest.
var aiokubeCreated = regexp.MustCompile(`^aiokube: (\d\d)_[^ ]*_([^_ ]+)_([^ ]+)\.yaml: created$`)

// UnitLogEvents reads a stamped unit log (stampWriter): every line of aiokube except one per manifest, which is
// kept for namespaces ("namespace X created") and summed up for the rest (the first and the last of each round).
func UnitLogEvents(r io.Reader) []Event {
	var out []Event
	type round struct {
		first, last Event
		n           int
	}
	rounds := map[string]*round{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		stamp, line, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		at, err := time.Parse(stampFormat, stamp)
		if err != nil {
			continue
		}
		if m := aiokubeCreated.FindStringSubmatch(line); m != nil {
			if m[2] == "namespace" {
				out = append(out, Event{at, "aiokube: namespace " + m[3] + " created"})
				continue
			}
			r := rounds[m[1]]
			if r == nil {
				r = &round{first: Event{at, m[3]}}
				rounds[m[1]] = r
				order = append(order, m[1])
			}
			r.last, r.n = Event{at, m[3]}, r.n+1
			continue
		}
		out = append(out, Event{at, line})
	}
	for _, k := range order {
		r := rounds[k]
		out = append(out, Event{r.first.At, fmt.Sprintf("aiokube: the first %s_* manifest created (%s)", k, r.first.What)},
			Event{r.last.At, fmt.Sprintf("aiokube: the last of %d %s_* manifests created (%s)", r.n, k, r.last.What)})
	}
	return out
}

// Timeline is events sorted by time, one a line, in seconds after t0.
func Timeline(t0 time.Time, events []Event) string {
	sort.SliceStable(events, func(i, j int) bool { return events[i].At.Before(events[j].At) })
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "\n  %+7.2fs  %s", e.At.Sub(t0).Seconds(), e.What)
	}
	return b.String()
}

// timeline gathers the boot's moments from every source.
func (n *Node) timeline() string {
	n.events.mu.Lock()
	events := append([]Event{{n.KubeletStart, "the kubelet started"}}, n.events.events...)
	n.events.mu.Unlock()
	for _, r := range n.KubeletRestarts {
		events = append(events, Event{r, "the kubelet started again"})
	}
	if cs, err := ListContainers(context.Background(), n.CRISocket); err == nil {
		for _, k := range cs {
			if k.StartedAt > 0 {
				events = append(events, Event{time.Unix(0, k.StartedAt), fmt.Sprintf("container %s/%s %s started (attempt %d)", k.Namespace, k.Pod, k.Name, k.Attempt)})
			}
		}
	}
	if f, err := os.Open(n.LogDir() + "/kubelet.log"); err == nil {
		events = append(events, KubeletLogEvents(f, n.KubeletStart.Year(), n.KubeletStart.Location())...)
		f.Close()
	}
	if f, err := os.Open(n.LogDir() + "/aiokube.log"); err == nil {
		events = append(events, UnitLogEvents(f)...)
		f.Close()
	}
	return Timeline(n.KubeletStart, events)
}
