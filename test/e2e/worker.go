package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A worker on the same machine as its control-plane node (seed 004, issue 27): a second node, in network, mount
// and PID namespaces of its own, on its own root laid by Ignition from worker.ign, with its own containerd and
// kubelet. What two kubelets on one machine share is handled here: the cgroup hierarchies (each kubelet owns a
// subtree: the worker's cgroupRoot, made before its kubelet starts and removed after it stops) and the kernel
// settings the kubelet writes (the same values for both; the control-plane node's boot restores them).

// workerCgroupRoot is the kubelet cgroupRoot of a worker (overrides.go): a top cgroup of its own in every
// hierarchy, named so that the control-plane node's host state (kubeletScope, "kubepods*") covers it too.
func workerCgroupRoot(name string) string { return "/kubepods-" + name }

// workerScope is what a worker's boot changes on the machine beyond its namespaces: its top cgroups (no kernel
// setting: its kubelet writes the values the control-plane node's already did, and that node's boot restores them).
func workerScope(name, file string) hostScope {
	return hostScope{file: file, cgroups: strings.TrimPrefix(workerCgroupRoot(name), "/"), bound: 2 * time.Minute, grace: 5 * time.Second}
}

// v1Hierarchies are the cgroup v1 hierarchies mounted under /sys/fs/cgroup (not the unified one), where a kubelet
// with the cgroupfs driver makes its cgroups.
func v1Hierarchies() ([]string, error) {
	dirs, err := filepath.Glob("/sys/fs/cgroup/*")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		if filepath.Base(d) == "unified" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no cgroup v1 hierarchy under /sys/fs/cgroup: the worker's kubelet needs its cgroupRoot made there")
	}
	return out, nil
}

// MakeCgroupRoot makes a kubelet's cgroupRoot in every v1 hierarchy (the kubelet refuses to start when it does
// not exist), with the cpuset hierarchy's cpus and mems of its parent (a cpuset cgroup without them takes no
// process).
func MakeCgroupRoot(root string) error {
	hs, err := v1Hierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		d := filepath.Join(h, root)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", d, err)
		}
		if filepath.Base(h) != "cpuset" {
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			cur, err := os.ReadFile(filepath.Join(d, f))
			if err != nil {
				return err
			}
			if strings.TrimSpace(string(cur)) != "" {
				continue
			}
			parent, err := os.ReadFile(filepath.Join(filepath.Dir(d), f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(d, f), parent, 0o644); err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(d, f), err)
			}
		}
	}
	return nil
}
