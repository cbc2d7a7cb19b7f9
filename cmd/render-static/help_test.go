package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/pipeline"
)

// helpOf is what "render-static ARGS --help" prints, run as a person runs it.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(append(args, "--help")...)
	if code != 0 {
		t.Fatalf("%v --help: exit %d: %s", args, code, stderr)
	}
	return stdout
}

// readRepo is a file of the repository.
func readRepo(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(repo(p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// perSiteInputs are the input table's per-site inputs: a fleet site's fields.
func perSiteInputs() []string {
	var out []string
	for _, in := range pipeline.Inputs {
		if in.Fleet == pipeline.PerSite {
			out = append(out, in.Name)
		}
	}
	return out
}

// TestFleetHelpListsSiteFields: fleet --help and docs/fleet.md name every field a site gives (the input table's
// per-site inputs, as pkg/fleet reads them), and both say where the output goes when --out is not given.
func TestFleetHelpListsSiteFields(t *testing.T) {
	help := helpOf(t, "fleet")
	guide := readRepo(t, "docs/fleet.md")
	fields := perSiteInputs()
	if len(fields) < 5 {
		t.Fatalf("only %d per-site inputs: %q", len(fields), fields)
	}
	for _, f := range fields {
		if !regexp.MustCompile(`\b` + f + `\b`).MatchString(help) {
			t.Errorf("fleet --help does not name the site field %s:\n%s", f, help)
		}
		if !strings.Contains(guide, "`"+f+"`") {
			t.Errorf("docs/fleet.md does not name the site field `%s`", f)
		}
	}
	out := newRootCommand(&strings.Builder{})
	fleet, _, err := out.Find([]string{"fleet"})
	if err != nil {
		t.Fatal(err)
	}
	def := fleet.Flags().Lookup("out").DefValue
	if def == "" {
		t.Fatal("fleet --out has no default")
	}
	if !strings.Contains(help, `(default "`+def+`")`) {
		t.Errorf("fleet --help does not give --out's default %s", def)
	}
	if !strings.Contains(guide, "`"+def+"`") {
		t.Errorf("docs/fleet.md does not say --out defaults to `%s`", def)
	}
	if strings.Contains(fleet.Use, "--out DIR ") && !strings.Contains(fleet.Use, "[--out DIR]") {
		t.Errorf("fleet's usage line makes --out look required: %s", fleet.Use)
	}
}

// TestCertsHelpSaysInUse: what --expiring-within counts is the certificates in use (inventory.ExpiringWithin sets
// the copies no pod runs apart), and the help and the reference say so alike.
func TestCertsHelpSaysInUse(t *testing.T) {
	help := helpOf(t, "certs")
	line := regexp.MustCompile(`(?m)^ +--expiring-within .*$`).FindString(help)
	if !strings.Contains(line, "any certificate in use (one renew renews) expires") {
		t.Errorf("certs --help: %q does not say \"any certificate in use (one renew renews) expires\"", strings.TrimSpace(line))
	}
	ref := section(t, readRepo(t, "docs/reference.md"), "## `render-static certs`")
	if !strings.Contains(ref, "any certificate in use (one renew renews) expires") {
		t.Errorf("docs/reference.md's certs section does not say \"any certificate in use (one renew renews) expires\"")
	}
}

// outputEntries are the entries of a render directory docs/output.md's layout lists ("DIR/aio.ign", "DIR/state/"):
// their top-level names, a folder with its slash.
func outputEntries(t *testing.T) []string {
	t.Helper()
	md := readRepo(t, "docs/output.md")
	layout := section(t, md, "## Layout")
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^DIR/([^ /]+/?)`).FindAllStringSubmatch(layout, -1) {
		out = append(out, m[1])
	}
	if len(out) < 8 {
		t.Fatalf("docs/output.md's layout lists only %q", out)
	}
	return out
}

// TestRootHelpListsTheOutput: the render's --help names every entry of the output directory docs/output.md lists
// (TestWorkerCLI checks the list against a directory a render and the worker command wrote), and no documentation
// names a completion command while the CLI offers none.
func TestRootHelpListsTheOutput(t *testing.T) {
	help := helpOf(t)
	for _, e := range outputEntries(t) {
		end := `([\s,.:;)]|$)`
		if strings.HasSuffix(e, "/") {
			end = "" // a folder, or a file in it (auth/kubeconfig)
		}
		if !regexp.MustCompile(`(^|[\s(])` + regexp.QuoteMeta(e) + end).MatchString(help) {
			t.Errorf("render-static --help does not list %s of the output directory (docs/output.md)", e)
		}
	}
	root := newRootCommand(&strings.Builder{})
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		t.Skip("a completion command is offered: the docs should document it")
	}
	docs, _ := filepath.Glob(repo("docs/*.md"))
	for _, f := range append(docs, repo("README.md")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile("render-static completion|`completion`").Match(b) {
			t.Errorf("%s documents a completion command, which the CLI does not offer", f)
		}
	}
}

// checkOutputListed: every top-level entry of the output directory dir (the lock beside it aside) is one
// docs/output.md's layout lists.
func checkOutputListed(t *testing.T, dir string) {
	t.Helper()
	listed := map[string]bool{}
	for _, e := range outputEntries(t) {
		listed[e] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		if !listed[name] {
			t.Errorf("%s holds %s, which docs/output.md's layout does not list", dir, name)
		}
	}
}

// TestImagesHelpListsEveryKey: --images' help (the render's and the fleet's) names every key the CLI takes
// (docs/reference.md's row: TestReferenceListsEveryFlag).
func TestImagesHelpListsEveryKey(t *testing.T) {
	names := components.ImageNames()
	if len(names) == 0 {
		t.Fatal("no image names")
	}
	for _, args := range [][]string{nil, {"fleet"}} {
		line := regexp.MustCompile(`(?m)^ +--images .*$`).FindString(helpOf(t, args...))
		for _, n := range names {
			if !regexp.MustCompile(`[ (]` + regexp.QuoteMeta(n) + `[,)]`).MatchString(line) {
				t.Errorf("%v --images' help does not list %s: %s", args, n, line)
			}
		}
	}
}
