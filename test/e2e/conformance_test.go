package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conformanceTimeout bounds the whole e2e.test run (measured: see README.md); --ginkgo.timeout is a minute less,
// so that ginkgo reports what ran before the process is killed.
const conformanceTimeout = 20 * time.Minute

// runNetworkConformance runs Kubernetes v1.34.3's [sig-network] DNS and Services [Conformance] specs (e2e.test,
// built with the other tools) against the booted node n, from inside its namespaces (the inner test: the API server
// and the node IPs exist only in the node's network namespace), with the admin kubeconfig. The specs that need an
// image the harness cannot build are skipped, each named with that image; every other spec of the focus must
// pass. Call it once the node is Ready with CoreDNS and kube-proxy running (after the workload checks).
func runNetworkConformance(t *testing.T, spec *innerSpec, n *Node) {
	t.Helper()
	e2eTest := filepath.Join(spec.BinDir, "e2e.test")
	if _, err := os.Stat(e2eTest); err != nil {
		t.Fatalf("conformance: %v (built by TestBuildTools with the other binaries)", err)
	}
	start := time.Now()
	ctx := context.Background()
	dir := filepath.Join(n.Work, "conformance")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	// The suite must name the images this check reasons about: agnhost (built here), pause, jessie-dnsutils.
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	out, err := exec.CommandContext(lctx, e2eTest, "--list-images").Output()
	cancel()
	if err != nil {
		t.Fatalf("conformance: e2e.test --list-images: %v", err)
	}
	for _, img := range []string{AgnhostImage, ConformancePauseImage, JessieDnsutilsImage} {
		if !strings.Contains(string(out), img+"\n") {
			t.Fatalf("conformance: e2e.test does not name %s; its images:\n%s", img, out)
		}
	}

	archive := filepath.Join(dir, "images.tar")
	if err := BuildConformanceImages(ctx, spec.BinDir, dir, archive); err != nil {
		t.Fatalf("conformance: images: %v", err)
	}
	if err := n.ImportImages(ctx, archive); err != nil {
		t.Fatalf("conformance: importing %s: %v", archive, err)
	}
	t.Logf("conformance: %s (agnhost with the tools its specs run) and %s (the harness's pause) imported in %.1fs",
		AgnhostImage, ConformancePauseImage, time.Since(start).Seconds())

	report := filepath.Join(dir, "report.json")
	logPath := filepath.Join(n.LogDir(), "conformance.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	args := []string{
		"--kubeconfig=" + spec.Kubeconfig,
		"--provider=skeleton",
		"--kubectl-path=" + filepath.Join(spec.BinDir, "kubectl"),
		"--report-dir=" + dir,
		"--ginkgo.focus=" + ConformanceFocus,
		"--ginkgo.skip=" + ConformanceSkipRegexp(),
		"--ginkgo.json-report=" + report,
		"--ginkgo.timeout=" + (conformanceTimeout - time.Minute).String(),
		"--ginkgo.no-color",
		"--ginkgo.v",
	}
	rctx, rcancel := context.WithTimeout(ctx, conformanceTimeout)
	defer rcancel()
	cmd := exec.CommandContext(rctx, e2eTest, args...)
	cmd.Dir = dir
	cmd.Env = append(filteredEnv("KUBECONFIG"), "KUBECONFIG="+spec.Kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	t.Logf("conformance: %s %s (log %s)", e2eTest, strings.Join(args, " "), logPath)
	runStart := time.Now()
	runErr := cmd.Run()
	wall := time.Since(runStart)

	res, err := ReadConformanceReport(report)
	if err != nil {
		t.Fatalf("conformance: e2e.test (%v) left no report: %v\n%s", runErr, err, tail(logPath, 60))
	}
	for _, s := range res.Skipped {
		reason := conformanceSkipReason(s.Name())
		if reason == "" {
			reason = "skipped by e2e.test itself (see " + logPath + ")"
		}
		t.Logf("conformance: SKIPPED %s: %s", s.Name(), reason)
	}
	for _, s := range res.Passed {
		t.Logf("conformance: passed %s (%.1fs)", s.Name(), s.RunTime.Seconds())
	}
	for _, s := range res.Failed {
		t.Errorf("conformance: %s %s (%.1fs) at %s:%d: %s", strings.ToUpper(s.State), s.Name(), s.RunTime.Seconds(),
			filepath.Base(s.Failure.Location.FileName), s.Failure.Location.LineNumber, s.Failure.Message)
	}
	ran := len(res.Passed) + len(res.Failed)
	t.Logf("FIGURE conformance %s: e2e.test %s --ginkgo.focus='%s': %d specs in the focus, %d ran, %d passed, %d failed, %d skipped (images the harness cannot build); e2e.test's wall time %s (with its images %s)",
		spec.Case, KubeVersion, ConformanceFocus, len(res.Focused), ran, len(res.Passed), len(res.Failed), len(res.Skipped),
		wall.Round(time.Second), time.Since(start).Round(time.Second))
	if len(res.Focused) != ConformanceFocusCount {
		t.Errorf("conformance: the focus selected %d specs, want %d (e2e.test %s)", len(res.Focused), ConformanceFocusCount, KubeVersion)
	}
	if len(res.Skipped) != len(conformanceSkip) {
		t.Errorf("conformance: %d specs skipped, want exactly the %d of conformanceSkip", len(res.Skipped), len(conformanceSkip))
	}
	waitConformanceNamespacesGone(t, spec)
	if runErr != nil && len(res.Failed) == 0 {
		t.Errorf("conformance: e2e.test: %v with no failed spec in its report:\n%s", runErr, tail(logPath, 60))
	}
}

// waitConformanceNamespacesGone waits (bounded) until the namespaces e2e.test made (label e2e-run, set by its
// framework) are gone, so that the checks after it see the node without the suite's pods.
func waitConformanceNamespacesGone(t *testing.T, spec *innerSpec) {
	t.Helper()
	cs, _ := clients(t, spec.Kubeconfig)
	st := time.Now()
	var left []string
	err := poll(context.Background(), 5*time.Minute, 2*time.Second, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "e2e-run"})
		if err != nil {
			return false, nil
		}
		left = left[:0]
		for _, ns := range l.Items {
			left = append(left, ns.Name)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("conformance: the suite's namespaces %v still there after %s: %v", left, time.Since(st).Round(time.Second), err)
		return
	}
	t.Logf("conformance: the suite's namespaces gone %.1fs after it ended", time.Since(st).Seconds())
}

// TestConformanceSkipRegexp: the skip expression selects exactly the listed specs, as ginkgo matches it, and
// nothing else of the focus.
func TestConformanceSkipRegexp(t *testing.T) {
	re := regexp.MustCompile(ConformanceSkipRegexp())
	focus := regexp.MustCompile(ConformanceFocus)
	for _, s := range conformanceSkip {
		if !re.MatchString(ginkgoText(s.Spec)) || !focus.MatchString(ginkgoText(s.Spec)) {
			t.Errorf("%q: skip %v, focus %v", s.Spec, re.MatchString(s.Spec), focus.MatchString(s.Spec))
		}
		if conformanceSkipReason(s.Spec) == "" {
			t.Errorf("%q: no reason", s.Spec)
		}
	}
	for _, keep := range []string{
		"[sig-network] DNS should support configurable pod DNS nameservers [Conformance]",
		"[sig-network] Services should serve a basic endpoint from pods [Conformance]",
	} {
		if re.MatchString(ginkgoText(keep)) {
			t.Errorf("%q is skipped", keep)
		}
	}
}

// ginkgoText is what ginkgo matches --ginkgo.focus and --ginkgo.skip against: the suite's description, a space, the
// spec's text.
func ginkgoText(spec string) string { return "Kubernetes e2e suite " + spec }
