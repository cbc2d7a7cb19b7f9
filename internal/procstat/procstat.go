// Package procstat reads the fields of /proc/self/status (Linux) that the command and its tests use: the umask an
// output's files are created under, and the resident set for peak-memory figures.
package procstat

import (
	"os"
	"strconv"
	"strings"
)

// Field is the value of a /proc/self/status field ("Umask", "VmHWM", …), trimmed; false where /proc is not there
// or the kernel does not give the field.
func Field(name string) (string, bool) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// MB is a field given in kB ("VmHWM", "VmRSS"), in MB; 0 where it cannot be read.
func MB(name string) float64 {
	v, ok := Field(name)
	if !ok {
		return 0
	}
	kb, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
	if err != nil {
		return 0
	}
	return float64(kb) / 1024
}
