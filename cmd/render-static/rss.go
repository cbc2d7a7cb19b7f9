package main

import "github.com/render-static/render-static/internal/procstat"

// peakRSSMB is the process's peak resident set (VmHWM in /proc/self/status) in MB, 0 where /proc is not there. The
// summary prints it after a render: what a render of these inputs needs in memory, for sizing the machines that
// render (issue 13 bounds it), and what `make bench` reads from the command (BenchmarkCommand: the kernel's maxrss
// of a child that a Go program starts holds the parent's peak, which exec records).
func peakRSSMB() float64 {
	return procstat.MB("VmHWM")
}
