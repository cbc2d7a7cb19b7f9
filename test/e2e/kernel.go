package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What a kubelet changes beyond its namespaces: kernel settings (global to the machine) and the cgroups it
// creates (cgroups are not namespaced by a mount or PID namespace). The outer test saves both before a boot and
// puts them back after it.

// kubeletSysctls are the settings the kubelet's container manager writes unless protectKernelDefaults is set.
var kubeletSysctls = []string{"kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory"}

// hostScope is what SaveHostState watches: the kernel settings (paths under /proc/sys), the name pattern of the
// top cgroups under each hierarchy, and the file that keeps the record while a node runs. The e2e's is
// kubeletScope; the restore test uses its own names, so that it never touches a node's.
type hostScope struct {
	file    string
	sysctls []string
	cgroups string
	// bound is how long Restore waits for a cgroup's processes to go and retries its removal.
	bound time.Duration
	// grace is how long a process may still be in a cgroup of the node before Restore kills it by PID.
	grace time.Duration
}

func kubeletScope() hostScope {
	return hostScope{file: hostStateFile(), sysctls: kubeletSysctls, cgroups: "kubepods*", bound: 2 * time.Minute, grace: 5 * time.Second}
}

// HostState is what a boot may change on the machine.
type HostState struct {
	scope   hostScope
	sysctls map[string]string
	cgroups map[string]bool // top cgroups that already existed before the boot: never touched
	pending []string        // top cgroups an earlier run could not remove
}

// hostRecord is the host-state file: the settings to put back and the cgroups to remove if this run cannot.
type hostRecord struct {
	Sysctls  map[string]string `json:"sysctls,omitempty"`
	Existing []string          `json:"existing,omitempty"` // top cgroups that are not the node's
	Cgroups  []string          `json:"cgroups,omitempty"`  // the node's top cgroups that could not be removed yet
}

// hostStateFile keeps the saved settings while a node runs, so that a run killed before it could restore them
// (a test timeout, a signal) is repaired by the next one; it also names the cgroups a run could not remove.
func hostStateFile() string { return filepath.Join(DefaultCacheDir(), "host-state.json") }

// readHostRecord reads the host-state file; a file of the first format (a map of settings) is read as such.
func readHostRecord(path string) (*hostRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec hostRecord
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, ok := probe["sysctls"]; ok || probe["cgroups"] != nil || probe["existing"] != nil {
		err = json.Unmarshal(data, &rec)
	} else {
		err = json.Unmarshal(data, &rec.Sysctls)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rec, nil
}

func writeHostRecord(path string, rec *hostRecord) error {
	data, _ := json.MarshalIndent(rec, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// SaveHostState records the kubelet's kernel settings and which kubelet cgroups exist. When an earlier run died
// with a node up, or left cgroups it could not remove, that is repaired first.
func SaveHostState(logf func(string, ...any)) (*HostState, error) { return kubeletScope().save(logf) }

// RepairHostState puts back what an earlier run left on the machine (a boot killed before it could restore it,
// recorded in the host-state file), so that a test that compares the machine before and after a boot starts from
// the machine as it was before any node ran.
func RepairHostState(logf func(string, ...any)) error {
	_, err := kubeletScope().repair(logf)
	return err
}

// repair restores what the host-state file records, if there is one, and returns the cgroups that still cannot
// be removed (recorded again in the file for the next run).
func (sc hostScope) repair(logf func(string, ...any)) ([]string, error) {
	rec, err := readHostRecord(sc.file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := &HostState{scope: sc, sysctls: map[string]string{}, cgroups: map[string]bool{}, pending: rec.Cgroups}
	for k, v := range rec.Sysctls {
		s.sysctls[k] = v
	}
	for _, d := range rec.Existing {
		s.cgroups[d] = true
	}
	changed, left, err := s.Restore(logf)
	if len(changed) > 0 {
		logf("repaired what an earlier run left (%s): %s", sc.file, strings.Join(changed, "; "))
	}
	if err != nil {
		return nil, fmt.Errorf("repairing what an earlier run left (%s): %w", sc.file, err)
	}
	if len(left) > 0 {
		// Restore recorded them again; the kubelet of the next boot creates its cgroups beside them.
		logf("WARNING: cgroups an earlier run left still cannot be removed (kept in %s for the next run): %s", sc.file, strings.Join(left, ", "))
	}
	return left, nil
}

func (sc hostScope) save(logf func(string, ...any)) (*HostState, error) {
	pending, err := sc.repair(logf)
	if err != nil {
		return nil, err
	}
	s := &HostState{scope: sc, sysctls: map[string]string{}, cgroups: map[string]bool{}, pending: pending}
	for _, k := range sc.sysctls {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return nil, err
		}
		s.sysctls[k] = strings.TrimSpace(string(v))
	}
	isPending := map[string]bool{}
	for _, d := range s.pending {
		isPending[d] = true
	}
	for _, d := range sc.topCgroups() {
		if !isPending[d] {
			s.cgroups[d] = true
		}
	}
	if err := writeHostRecord(sc.file, s.record(s.pending)); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *HostState) record(left []string) *hostRecord {
	return &hostRecord{Sysctls: s.sysctls, Existing: slices.Sorted(maps.Keys(s.cgroups)), Cgroups: left}
}

// topCgroups lists the top cgroups of the scope in every hierarchy under /sys/fs/cgroup (v1: one per
// controller; v2: the unified one).
func (sc hostScope) topCgroups() []string {
	var out []string
	for _, pat := range []string{"/sys/fs/cgroup/*/" + sc.cgroups, "/sys/fs/cgroup/" + sc.cgroups} {
		m, _ := filepath.Glob(pat)
		for _, d := range m {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				out = append(out, d)
			}
		}
	}
	return out
}

// Restore writes the saved kernel settings back and removes the cgroups the boot created (and those an earlier
// run could not remove). A cgroup can go only once no process is left in it: Restore waits for the node's
// processes to leave (they were killed with its PID namespace, or are being stopped), kills by PID whatever
// is still in one of the node's cgroups after a grace period (only processes there: the node started them), and
// retries, all within the scope's bound. A cgroup still there at the bound does not fail the caller: it is
// returned in left, recorded in the host-state file so that the next run removes it, and logged with the
// processes that held it. err reports only settings that could not be written back.
func (s *HostState) Restore(logf func(string, ...any)) (changed, left []string, err error) {
	var errs []error
	for _, k := range s.scope.sysctls {
		want, ok := s.sysctls[k]
		if !ok {
			continue
		}
		p := filepath.Join("/proc/sys", k)
		cur, _ := os.ReadFile(p)
		if strings.TrimSpace(string(cur)) == want {
			continue
		}
		if err := os.WriteFile(p, []byte(want+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", k, err))
			continue
		}
		changed = append(changed, fmt.Sprintf("%s %s -> %s", strings.ReplaceAll(k, "/", "."), strings.TrimSpace(string(cur)), want))
	}
	var tops []string
	seen := map[string]bool{}
	for _, top := range append(s.scope.topCgroups(), s.pending...) {
		if _, err := os.Stat(top); err == nil && !s.cgroups[top] && !seen[top] {
			seen[top] = true
			tops = append(tops, top)
		}
	}
	sort.Strings(tops)
	if len(tops) > 0 {
		res := removeCgroups(tops, s.scope.bound, s.scope.grace)
		for _, top := range tops {
			if !res.left[top] {
				changed = append(changed, "removed cgroup "+top)
			}
		}
		if len(res.killed) > 0 {
			changed = append(changed, "killed by PID processes still in the node's cgroups after "+s.scope.grace.String()+": "+formatProcs(res.killed))
		}
		left = slices.Sorted(maps.Keys(res.left))
		if len(left) > 0 {
			logf("WARNING: %d cgroups of the node could not be removed within %s (%v); recorded in %s, the next boot removes them.\n"+
				"  still in them: %s\n  left: %s", len(left), s.scope.bound, res.err, s.scope.file, formatProcs(res.holders), strings.Join(left, ", "))
		}
	}
	if len(errs) > 0 {
		return changed, left, errors.Join(errs...)
	}
	if len(left) == 0 {
		os.Remove(s.scope.file)
	} else if err := writeHostRecord(s.scope.file, s.record(left)); err != nil {
		return changed, left, fmt.Errorf("recording the cgroups left: %w", err)
	}
	return changed, left, nil
}

// cgroupRemoval is what removeCgroups did.
type cgroupRemoval struct {
	left    map[string]bool // top cgroups still there at the bound
	killed  map[int]string  // pid -> command killed by PID
	holders map[int]string  // processes still in a cgroup at the bound
	err     error           // the last removal error
}

// removeCgroups removes each top cgroup with everything below it, deepest first, waiting (bounded) for the
// processes in them to go: after grace, those still listed in a cgroup.procs are killed by PID (never this
// process nor one of its ancestors).
func removeCgroups(tops []string, bound, grace time.Duration) cgroupRemoval {
	res := cgroupRemoval{left: map[string]bool{}, killed: map[int]string{}, holders: map[int]string{}}
	start := time.Now()
	protected := selfAndAncestors()
	for {
		busy := false
		for _, top := range tops {
			for _, d := range cgroupTree(top) {
				if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
					if !busy { // the deepest: the one that holds processes
						res.err = fmt.Errorf("remove cgroup %s: %w", d, err)
					}
					busy = true
				}
			}
		}
		if !busy {
			return res
		}
		procs := map[int]string{}
		for _, top := range tops {
			for _, d := range cgroupTree(top) {
				for _, pid := range cgroupProcs(d) {
					procs[pid] = procComm(pid)
				}
			}
		}
		if time.Since(start) >= grace {
			for pid, comm := range procs {
				if protected[pid] {
					continue
				}
				if _, done := res.killed[pid]; !done && syscall.Kill(pid, syscall.SIGKILL) == nil {
					res.killed[pid] = comm
				}
			}
		}
		if time.Since(start) >= bound {
			for _, top := range tops {
				if _, err := os.Stat(top); err == nil {
					res.left[top] = true
				}
			}
			res.holders = procs
			return res
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cgroupTree lists a cgroup and every cgroup below it, deepest first.
func cgroupTree(top string) []string {
	var dirs []string
	filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	// A child's path is longer than its parent's.
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	return dirs
}

// cgroupProcs reads a cgroup's cgroup.procs (v1 and v2): the PIDs in it, in this PID namespace.
func cgroupProcs(dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

func procComm(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// selfAndAncestors are the processes Restore never kills.
func selfAndAncestors() map[int]bool {
	out := map[int]bool{os.Getpid(): true}
	pid := os.Getpid()
	for i := 0; i < 64 && pid > 1; i++ {
		next, err := parentPID(pid)
		if err != nil {
			break
		}
		out[next] = true
		pid = next
	}
	return out
}

func formatProcs(procs map[int]string) string {
	if len(procs) == 0 {
		return "none"
	}
	pids := make([]int, 0, len(procs))
	for p := range procs {
		pids = append(pids, p)
	}
	sort.Ints(pids)
	var parts []string
	for _, p := range pids {
		parts = append(parts, fmt.Sprintf("%d (%s)", p, procs[p]))
	}
	return strings.Join(parts, ", ")
}
