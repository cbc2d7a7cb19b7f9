package main

import (
	"os"
	"strconv"
	"strings"
)

// peakRSSMB is the process's peak resident set (VmHWM in /proc/self/status) in MB, 0 where /proc is not there. The
// summary prints it after a render: what a render of these inputs needs in memory, for sizing the machines that
// render (issue 13 bounds it), and what `make bench` reads from the command (BenchmarkCommand: the kernel's maxrss
// of a child that a Go program starts holds the parent's peak, which exec records).
func peakRSSMB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" && f[2] == "kB" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return float64(kb) / 1024
			}
			return 0
		}
	}
	return 0
}
