package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/fleet"
	"github.com/render-static/render-static/pkg/installconfig"
)

// bundledExample is one render of a bundled example, as a user makes it (workers: its --workers file, if any).
type bundledExample struct{ config, nodeName, nodeIP, workers string }

// bundledExamples are the bundled example as `make run` renders it (the Makefile's node IP and name), every site
// of examples/fleet, from the site folders and from the YAML list, with its node name and IP, and the example with
// workers (examples/sno-workers, with the workers file beside it).
func bundledExamples(t *testing.T) []bundledExample {
	t.Helper()
	mk, err := os.ReadFile(repo("Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makeVar := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + ` := (\S+)$`).FindSubmatch(mk)
		if m == nil {
			t.Fatalf("the Makefile sets no %s", name)
		}
		return string(m[1])
	}
	out := []bundledExample{{repo(makeVar("EXAMPLE")), makeVar("EXAMPLE_NODE_NAME"), makeVar("EXAMPLE_NODE_IP"), ""},
		{repo("examples/sno-workers/install-config.yaml"), "master-0", "192.168.126.10", repo("examples/sno-workers/workers.yaml")}}
	for _, list := range []string{"examples/fleet/sites", "examples/fleet/sites.yaml"} {
		sites, err := fleet.Load(repo(list))
		if err != nil {
			t.Fatalf("%s: %v", list, err)
		}
		if len(sites) == 0 {
			t.Fatalf("%s: no sites", list)
		}
		for _, s := range sites {
			e := bundledExample{filepath.Clean(s.InstallConfig), s.NodeName, s.NodeIP, ""}
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// TestExamplesRenderClean: every bundled example renders without a warning (a warning on every render of the
// example teaches users to ignore warnings), and every install-config under examples/ is among them.
func TestExamplesRenderClean(t *testing.T) {
	testtools.Long(t, "renders every bundled example")
	examples := bundledExamples(t)
	all, err := filepath.Glob(repo("examples/*/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob(repo("examples/*/*/*/install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(all, more...) {
		if !slices.ContainsFunc(examples, func(e bundledExample) bool { return e.config == filepath.Clean(f) }) {
			t.Errorf("%s is not rendered by this test", f)
		}
	}
	for _, e := range examples {
		t.Run(strings.TrimPrefix(e.config, repo("examples")+"/"), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "aio")
			args := []string{"--install-config", e.config, "--node-name", e.nodeName, "--node-ip", e.nodeIP, "--dir", dir}
			if e.workers != "" {
				args = append(args, "--workers", e.workers)
			}
			code, stdout, stderr := runCLI(args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if stderr != "" || strings.Contains(stdout, "warning") {
				t.Errorf("the example renders with warnings:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
		})
	}
}

// TestWarningsOnStderr: a render's warnings (here: leaves of minutes) go to stderr, the summary to stdout.
func TestWarningsOnStderr(t *testing.T) {
	testtools.Long(t, "renders the example")
	dir := filepath.Join(t.TempDir(), "aio")
	code, stdout, stderr := runCLI("--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", "192.168.126.10",
		"--dir", dir, "--cert-validity", "30m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "warning") {
		t.Errorf("a warning on stdout:\n%s", stdout)
	}
	if !strings.HasPrefix(stderr, "warning: --cert-validity 30m0s: ") {
		t.Errorf("stderr %q, want the --cert-validity warning", stderr)
	}
	if !strings.Contains(stdout, "rendered "+filepath.Join(dir, "aio.ign")) {
		t.Errorf("no summary on stdout:\n%s", stdout)
	}
}

// TestLabExamplesWarnNothing: the install-configs `make lab` and the end-to-end test boot (test/e2e/testdata, the
// lab's bundled examples) have nothing to warn about either.
func TestLabExamplesWarnNothing(t *testing.T) {
	files, err := filepath.Glob(repo("test/e2e/testdata/upstream/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no lab install-configs: %v", err)
	}
	for _, f := range files {
		ic, err := installconfig.Load(f, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if w := ic.Warnings(); len(w) > 0 {
			t.Errorf("%s warns: %v", f, w)
		}
	}
}

// TestDocsNameExistingExamples: every examples/ path README and docs/ name exists, so that their commands work
// when pasted from the repository's root.
func TestDocsNameExistingExamples(t *testing.T) {
	docs, err := filepath.Glob(repo("docs/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	path := regexp.MustCompile(`\bexamples/[A-Za-z0-9._/-]*[A-Za-z0-9_-]`)
	named := 0
	for _, f := range append(docs, repo("README.md")) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range path.FindAllString(string(raw), -1) {
			named++
			if _, err := os.Stat(repo(p)); err != nil {
				t.Errorf("%s names %s: %v", filepath.Base(f), p, err)
			}
		}
	}
	if named < 10 {
		t.Errorf("only %d examples/ paths found in README and docs/", named)
	}
}
