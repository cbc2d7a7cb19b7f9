// Package faultpoint lets a test stop render-static at a named point of a run that writes a render directory, to
// check what a crash or a signal there leaves behind (cmd/render-static's fault tests). It is off unless a test
// binary calls Enable (cmd/render-static's TestMain, which runs the test binary as the command) and the environment
// variable RENDER_STATIC_FAULT names points, so a normal run pays one map length check per point. The shipped
// command never calls Enable: it ignores the variable (TestShippedBinaryIgnoresFaultHook builds it as `make build`
// does and checks).
//
//	RENDER_STATIC_FAULT=kill:exchanged         SIGKILL this process when it reaches the point "exchanged"
//	RENDER_STATIC_FAULT=kill:file=200          SIGKILL it when it has written its 200th file of an output
//	RENDER_STATIC_FAULT=hang:engine            wait at "engine" until the run is cancelled (a signal), at most 2 min
//	RENDER_STATIC_FAULT=no-exchange            behave as on a kernel without renameat2's RENAME_EXCHANGE
//
// Several can be given, separated by commas. The points are listed where they are hit (Kill, Hang, Counted).
package faultpoint

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Env is the environment variable that names the points.
const Env = "RENDER_STATIC_FAULT"

var (
	kills    = map[string]bool{}
	hangs    = map[string]bool{}
	flags    = map[string]bool{}
	countAt  = map[string]int64{}
	counters = map[string]*atomic.Int64{}
)

// Enable reads RENDER_STATIC_FAULT's points. Only test binaries call it, before anything runs a point: nothing of
// the command does, so the shipped command has no hook a variable of its environment can set.
func Enable() { parse(os.Getenv(Env)) }

func parse(spec string) {
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
		case strings.HasPrefix(p, "kill:"):
			name := strings.TrimPrefix(p, "kill:")
			if k, n, ok := strings.Cut(name, "="); ok {
				if v, err := strconv.ParseInt(n, 10, 64); err == nil && v > 0 {
					countAt[k] = v
					counters[k] = new(atomic.Int64)
				}
				continue
			}
			kills[name] = true
		case strings.HasPrefix(p, "hang:"):
			hangs[strings.TrimPrefix(p, "hang:")] = true
		default:
			flags[p] = true
		}
	}
}

// Kill ends the process with SIGKILL at the point name when RENDER_STATIC_FAULT asks for it: a crash at exactly that
// place (nothing deferred runs, no buffer is flushed).
func Kill(name string) {
	if len(kills) > 0 && kills[name] {
		die()
	}
}

// Counted counts one more event of kind name (a file written) and ends the process with SIGKILL at the count
// RENDER_STATIC_FAULT gives ("kill:file=200").
func Counted(name string) {
	if len(counters) == 0 {
		return
	}
	if c := counters[name]; c != nil && c.Add(1) == countAt[name] {
		die()
	}
}

// Hang waits at the point name, when RENDER_STATIC_FAULT asks for it, until ctx is done (at most two minutes): a run
// that a signal finds there.
func Hang(ctx context.Context, name string) {
	if len(hangs) == 0 || !hangs[name] {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Minute):
	}
}

// Set reports whether RENDER_STATIC_FAULT names the flag name (such as "no-exchange").
func Set(name string) bool { return len(flags) > 0 && flags[name] }

func die() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
