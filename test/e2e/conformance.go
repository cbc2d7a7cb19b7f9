package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// buildTests builds a wrapper module's test binaries (ToolModule.Tests) with `go test -c`, one command per binary
// (`go test -c -o` takes one package), the same flags, cache and process handling as buildModule.
func buildTests(ctx context.Context, goBin, modDir string, m ToolModule, outDir, gocache string, log io.Writer) error {
	for name, pkg := range m.Tests {
		args := []string{"test", "-c", "-mod=readonly", "-trimpath", "-ldflags", strings.TrimSpace("-s -w " + m.LDFlags),
			"-o", filepath.Join(outDir, name), pkg}
		cmd := goCommand(ctx, goBin, modDir, gocache, args, log)
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go test -c %s: %w", pkg, err)
		}
		fmt.Fprintf(log, "built %s in %s\n", name, time.Since(t0).Round(time.Second))
		if st, err := os.Stat(filepath.Join(outDir, name)); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("go test -c %s wrote no %s: %v", pkg, name, err)
		}
	}
	return nil
}

// The conformance check (issue 37, "a check that nobody here wrote"): Kubernetes v1.34.3's own e2e suite
// (e2e.test, built above from k8s.io/kubernetes/test/e2e) runs its [sig-network] DNS and Services [Conformance]
// specs against the booted node. conformance_test.go runs it; what follows is the part that needs no node.

// ConformanceFocus is the --ginkgo.focus of the check: 25 specs of e2e.test v1.34.3.
const ConformanceFocus = `\[sig-network\] (DNS|Services) .*\[Conformance\]`

// ConformanceFocusCount is how many specs of e2e.test v1.34.3 the focus selects (its --ginkgo.dry-run).
const ConformanceFocusCount = 25

// JessieDnsutilsImage is the DNS specs' second prober (test/utils/image/manifest.go: JessieDnsutils): a Debian
// jessie userland with dig and nslookup, made by a Dockerfile from Debian's archive. Nothing here builds it.
const JessieDnsutilsImage = "registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7"

// ConformancePauseImage is the pause image e2e.test v1.34.3 names (manifest.go: configs[Pause]); the harness's
// pause binary is tagged under it too, although none of the focused specs runs it (the sandboxes use containerd's
// sandbox_image, the render's).
const ConformancePauseImage = "registry.k8s.io/pause:3.10.1"

// conformanceSkip lists the focused specs that need an image the harness cannot build, each with that image.
// Every one of them is a DNS spec whose DNS pod (k8s.io/kubernetes test/e2e/network/dns.go, createDNSPod) runs two
// probers, agnhost's and jessie-dnsutils'. "should support configurable pod DNS nameservers", the eighth DNS spec,
// needs only agnhost, and every Services spec only agnhost: they run.
var conformanceSkip = []struct{ Spec, Image string }{
	{"[sig-network] DNS should provide DNS for the cluster [Conformance]", JessieDnsutilsImage},
	{"[sig-network] DNS should provide /etc/hosts entries for the cluster [Conformance]", JessieDnsutilsImage},
	{"[sig-network] DNS should provide DNS for services [Conformance]", JessieDnsutilsImage},
	{"[sig-network] DNS should resolve DNS of partial qualified names for services [LinuxOnly] [Conformance]", JessieDnsutilsImage},
	{"[sig-network] DNS should provide DNS for pods for Hostname [Conformance]", JessieDnsutilsImage},
	{"[sig-network] DNS should provide DNS for pods for Subdomain [Conformance]", JessieDnsutilsImage},
	{"[sig-network] DNS should provide DNS for ExternalName services [Conformance]", JessieDnsutilsImage},
}

// ConformanceSkipRegexp is the --ginkgo.skip of the check: exactly the specs of conformanceSkip. Ginkgo matches
// it against the suite's description, a space and the spec's text (ginkgo/v2 internal/focus.go), hence no ^.
func ConformanceSkipRegexp() string {
	var alts []string
	for _, s := range conformanceSkip {
		alts = append(alts, regexp.QuoteMeta(s.Spec))
	}
	return " (" + strings.Join(alts, "|") + ")$"
}

// conformanceTools are the commands the focused specs run in agnhost's containers (through `kubectl exec -- sh -c`
// or directly): the upstream image adds them to its Alpine base (test/images/agnhost/Dockerfile: bind-tools curl
// netcat-openbsd iproute2 bash). Here they are this machine's Debian binaries (nc is netcat-openbsd, as upstream;
// hack/install-test-deps.sh installs it and dig), at these paths, with the shared libraries ldd names.
var conformanceTools = []struct{ Host, Path string }{
	{"/bin/sh", "/bin/sh"}, // dash, as the e2e framework's RunHostCmd runs /bin/sh -x -c
	{"/bin/bash", "/bin/bash"},
	{"/usr/bin/nc.openbsd", "/usr/bin/nc"},
	{"/usr/bin/curl", "/usr/bin/curl"},
	{"/usr/bin/wget", "/usr/bin/wget"},
	{"/usr/bin/dig", "/usr/bin/dig"},
	{"/usr/bin/nslookup", "/usr/bin/nslookup"},
	{"/usr/bin/seq", "/usr/bin/seq"},
	{"/usr/bin/cat", "/usr/bin/cat"},
	{"/usr/bin/sleep", "/usr/bin/sleep"},
	{"/usr/bin/echo", "/usr/bin/echo"},
	{"/usr/bin/test", "/usr/bin/test"},
	{"/usr/bin/hostname", "/usr/bin/hostname"},
	{"/usr/bin/grep", "/usr/bin/grep"},
	{"/usr/bin/ls", "/usr/bin/ls"},
}

// BuildConformanceImages writes into archive the images the conformance run adds to the node: AgnhostImage as the
// upstream image is (agnhost at /agnhost, its entrypoint; CoreDNS at /coredns, which the DNS nameservers spec
// starts; conformanceTools with their libraries; an nsswitch.conf naming files and dns), a superset of the
// harness's agnhost image, and the harness's pause under ConformancePauseImage. scratch holds the nsswitch.conf.
func BuildConformanceImages(ctx context.Context, binDir, scratch, archive string) error {
	files := []string{filepath.Join(binDir, "agnhost") + ":/agnhost", filepath.Join(binDir, "coredns") + ":/coredns"}
	libs := map[string]bool{}
	for _, tool := range conformanceTools {
		src, err := filepath.EvalSymlinks(tool.Host)
		if err != nil {
			return fmt.Errorf("%s (for agnhost's image; hack/install-test-deps.sh installs it): %w", tool.Host, err)
		}
		files = append(files, src+":"+tool.Path)
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := exec.CommandContext(lctx, "ldd", src).CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("ldd %s: %w\n%s", src, err, out)
		}
		l, err := lddLibraries(string(out))
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		for _, lib := range l {
			libs[lib] = true
		}
	}
	for _, lib := range sortedLibs(libs) {
		files = append(files, lib+":"+lib)
	}
	nss := filepath.Join(scratch, "nsswitch.conf")
	if err := os.WriteFile(nss, []byte("hosts: files dns\n"), 0o644); err != nil {
		return err
	}
	files = append(files, nss+":/etc/nsswitch.conf")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "oci-image"), "-o", archive,
		"-i", AgnhostImage+"="+strings.Join(files, ","),
		"-i", ConformancePauseImage+"="+filepath.Join(binDir, "pause")+":/pause").CombinedOutput()
	if err != nil {
		return fmt.Errorf("oci-image: %w\n%s", err, out)
	}
	return nil
}

func sortedLibs(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ConformanceSpec is one spec of e2e.test's JSON report (github.com/onsi/ginkgo/v2/types.SpecReport, the fields
// used here).
type ConformanceSpec struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	State                   string
	RunTime                 time.Duration
	Failure                 struct {
		Message  string
		Location struct {
			FileName   string
			LineNumber int
		}
	}
}

// Name is the spec's full text, what --ginkgo.focus and --ginkgo.skip match.
func (s ConformanceSpec) Name() string {
	return strings.TrimSpace(strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " "))
}

// ConformanceResult is what the run of the focus gave.
type ConformanceResult struct {
	Focused, Passed, Failed, Skipped []ConformanceSpec
}

// ReadConformanceReport reads e2e.test's --ginkgo.json-report and sorts the focused specs by state.
func ReadConformanceReport(path string) (*ConformanceResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []struct{ SpecReports []ConformanceSpec }
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	focus := regexp.MustCompile(ConformanceFocus)
	res := &ConformanceResult{}
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType != "It" || !focus.MatchString(s.Name()) {
				continue
			}
			res.Focused = append(res.Focused, s)
			switch s.State {
			case "passed":
				res.Passed = append(res.Passed, s)
			case "skipped", "pending":
				res.Skipped = append(res.Skipped, s)
			default: // failed, panicked, timedout, interrupted, aborted
				res.Failed = append(res.Failed, s)
			}
		}
	}
	return res, nil
}

// conformanceSkipReason is why a focused spec was skipped: the image it needs, or "" for a spec this check does not
// skip (e2e.test skipped it itself: e2eskipper).
func conformanceSkipReason(name string) string {
	for _, s := range conformanceSkip {
		if s.Spec == name {
			return "needs " + s.Image + ", which the harness cannot build (no local binary or package makes it)"
		}
	}
	return ""
}
