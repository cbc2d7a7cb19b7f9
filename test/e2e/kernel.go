package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// What a kubelet changes beyond its namespaces: kernel settings (global to the machine) and the cgroups it
// creates (cgroups are not namespaced by a mount or PID namespace). The outer test saves both before a boot and
// puts them back after it.

// kubeletSysctls are the settings the kubelet's container manager writes unless protectKernelDefaults is set.
var kubeletSysctls = []string{"kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory"}

// HostState is what a boot may change on the machine.
type HostState struct {
	sysctls map[string]string
	cgroups map[string]bool // kubepods* directories that already existed
}

// hostStateFile keeps the saved settings while a node runs, so that a run killed before it could restore them
// (a test timeout, a signal) is repaired by the next one.
func hostStateFile() string { return filepath.Join(DefaultCacheDir(), "host-state.json") }

// SaveHostState records the kubelet's kernel settings and which kubelet cgroups exist. When an earlier run died
// with a node up, its saved settings are restored first.
func SaveHostState() (*HostState, error) {
	s := &HostState{sysctls: map[string]string{}, cgroups: map[string]bool{}}
	var saved map[string]string
	if readYAML(hostStateFile(), &saved) == nil && len(saved) > 0 {
		s.sysctls = saved
		if _, err := s.Restore(); err != nil {
			return nil, fmt.Errorf("repairing what an interrupted run left (%s): %w", hostStateFile(), err)
		}
	}
	for _, k := range kubeletSysctls {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return nil, err
		}
		s.sysctls[k] = strings.TrimSpace(string(v))
	}
	for _, d := range kubeletCgroups() {
		s.cgroups[d] = true
	}
	data, _ := json.Marshal(s.sysctls)
	if err := os.MkdirAll(filepath.Dir(hostStateFile()), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(hostStateFile(), data, 0o644); err != nil {
		return nil, err
	}
	return s, nil
}

// kubeletCgroups lists the top kubepods* cgroups of every hierarchy under /sys/fs/cgroup.
func kubeletCgroups() []string {
	var out []string
	for _, pat := range []string{"/sys/fs/cgroup/*/kubepods*", "/sys/fs/cgroup/kubepods*"} {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	return out
}

// Restore writes the saved kernel settings back and removes the kubelet cgroups the boot created (deepest
// first; only empty ones can go, so a cgroup with a process left is reported). It reports what it changed.
func (s *HostState) Restore() (changed []string, err error) {
	var errs []error
	for _, k := range kubeletSysctls {
		p := filepath.Join("/proc/sys", k)
		cur, _ := os.ReadFile(p)
		if strings.TrimSpace(string(cur)) == s.sysctls[k] {
			continue
		}
		if err := os.WriteFile(p, []byte(s.sysctls[k]+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", k, err))
			continue
		}
		changed = append(changed, fmt.Sprintf("%s %s -> %s", strings.ReplaceAll(k, "/", "."), strings.TrimSpace(string(cur)), s.sysctls[k]))
	}
	for _, top := range kubeletCgroups() {
		if s.cgroups[top] {
			continue
		}
		var dirs []string
		filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		// The node's processes were killed with its PID namespace; their cgroups empty as the kernel reaps them.
		deadline := time.Now().Add(15 * time.Second)
		for _, d := range dirs {
			for {
				err := os.Remove(d)
				if err == nil || errors.Is(err, os.ErrNotExist) {
					break
				}
				if time.Now().After(deadline) {
					errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		changed = append(changed, "removed cgroup "+top)
	}
	if len(errs) == 0 {
		os.Remove(hostStateFile())
	}
	return changed, errors.Join(errs...)
}
