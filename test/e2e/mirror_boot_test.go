package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The mirror case's steps inside the node (mirror.go says what the case is).

// planMirror works out, from the node's disk, what the mirror serves (PlanMirror: the rendered registries.conf
// resolved for the pause image, the static pods', the first-boot workloads' and the test workload's images) and
// gives the node the mirror's name in /etc/hosts and the test workload's image for containerd's registry hosts. It
// returns the mirror machine's addresses.
func planMirror(t *testing.T, spec *innerSpec, n *Node) []NodeAddress {
	t.Helper()
	images, err := NodePullImages(spec.Root, spec.Mirror.Agnhost)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := RegistriesConf(spec.Root)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanMirror(conf, images)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := OutsideAddrs(spec.addrs(t), mirrorShift)
	if err != nil {
		t.Fatal(err)
	}
	n.MirrorPlan, n.ExtraHosts, n.ExtraImages = plan, MirrorHostsLines(plan.Host, addrs), []string{spec.Mirror.Agnhost}
	t.Logf("the mirror %s:%d (%v): %d images the node pulls, each by digest from it:", plan.Host, plan.Port, addrs, len(plan.Expect))
	for _, img := range sortedKeys(plan.Expect) {
		t.Logf("  %s → %s:%d/%s", img, plan.Host, plan.Port, plan.Expect[img])
	}
	return addrs
}

// mirrorUp starts the mirror for the first boot; in the reboot it checks the mirror is gone (the node must come
// back from the images it has).
func mirrorUp(t *testing.T, spec *innerSpec, n *Node, addrs []NodeAddress) {
	t.Helper()
	plan := n.MirrorPlan
	addr := net.JoinHostPort(plan.Host, strconv.Itoa(plan.Port))
	if spec.Phase != "boot" {
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("the mirror %s answers in the %s: it was stopped after the first boot", addr, spec.Phase)
		}
		t.Logf("the mirror is gone: %v", err)
		return
	}
	m, err := StartMirror(context.Background(), addrs, spec.BinDir, spec.Mirror.Layout, plan, n.LogDir())
	if err != nil {
		t.Fatal(err)
	}
	n.Mirror = m
	// Through the name, as containerd will reach it.
	if _, err := HTTPGet("", addr, "/v2/", 5*time.Second); err != nil {
		t.Fatalf("the mirror by its name %s: %v", addr, err)
	}
	n.event("mirror registry up")
	t.Logf("the mirror's registry (oci-registry, pid %d) serves %d images at %s; its requests go to %s", m.PID(), len(plan.Serve), addr, m.Log)
}

// checkMirrorPulls reads the registry's log after the first boot's checks: every image the node runs, pause
// included, was pulled by digest from the mirror, nothing by tag. Then it stops the registry by its PID.
func checkMirrorPulls(t *testing.T, n *Node) {
	t.Helper()
	log, err := ReadMirrorLog(n.Mirror.Log)
	if err != nil {
		t.Fatal(err)
	}
	got, err := CheckMirrorPulls(log, n.MirrorPlan.Expect)
	if err != nil {
		t.Errorf("the mirror's log (%s, %d requests):\n  %v", n.Mirror.Log, len(log), err)
	} else {
		t.Logf("every image the node runs was pulled by digest from the mirror (its log, %d requests):%s", len(log), got)
	}
	var bytes int64
	for _, r := range log {
		bytes += r.Bytes
	}
	t.Logf("FIGURE %s: the mirror answered %d requests, %.1f MiB", n.phase(), len(log), float64(bytes)/(1<<20))
	pid := n.Mirror.PID()
	if !n.Mirror.StopRegistry() {
		t.Errorf("the mirror's registry (pid %d) did not exit cleanly on SIGTERM", pid)
	}
	n.event("mirror registry stopped")
	t.Logf("the mirror's registry stopped (pid %d): the reboot runs from the node's own images", pid)
}

// mirrorReleaseArgs writes the mirror case's release file, the payload's image-references form (an ImageStream
// whose tags are the upstream flavor's --images keys), naming every image by digest under ReleaseSource (the
// registry that does not exist), and returns the render flag that gives it.
func mirrorReleaseArgs(t *testing.T, work string, l *MirrorLayout) []string {
	t.Helper()
	data, err := ReleaseImageStream(mirrorReleaseName, l.ReleasePullSpecs())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(work, "image-references")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the release (%s), by digest under %s:\n%s", p, ReleaseSource, data)
	return []string{"--release-info", p}
}
