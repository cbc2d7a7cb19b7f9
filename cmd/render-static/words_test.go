package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestCommandLineWords: what a new user types wrong gets a pointer to the help, an unknown command is an error even
// with --help, counts are in words a person writes ("1 problem").
func TestCommandLineWords(t *testing.T) {
	code, _, stderr := runCLI("nosuch", "--help")
	if code != 1 || !strings.Contains(stderr, `unknown command "nosuch"`) || !strings.Contains(stderr, "--help") {
		t.Errorf("nosuch --help: exit %d:\n%s", code, stderr)
	}
	code, _, stderr = runCLI("--nosuch")
	if code != 1 || !strings.Contains(stderr, "unknown flag: --nosuch") || !strings.Contains(stderr, "--help") {
		t.Errorf("--nosuch: exit %d:\n%s", code, stderr)
	}
	code, _, stderr = runCLI("renew", "--nosuch")
	if code != 1 || !strings.Contains(stderr, "unknown flag: --nosuch") || !strings.Contains(stderr, "--help") {
		t.Errorf("renew --nosuch: exit %d:\n%s", code, stderr)
	}
	if code, stdout, _ := runCLI("renew", "--help"); code != 0 || !strings.Contains(stdout, "--force") {
		t.Errorf("renew --help: exit %d", code)
	}
	// One problem, once: a missing install-config is said once, with its flag.
	code, _, stderr = runCLI("--install-config", "/nonexistent/install-config.yaml", "--node-ip", "192.168.126.10", "--dir", filepath.Join(t.TempDir(), "o"))
	if code != 1 || !strings.Contains(stderr, "invalid input (1 problem):\n  --install-config: open /nonexistent/install-config.yaml: no such file or directory\n") ||
		strings.Count(stderr, "nonexistent") != 1 {
		t.Errorf("missing install-config: exit %d:\n%s", code, stderr)
	}
	// --help says how secret the state is.
	_, stdout, _ := runCLI("--help")
	if !strings.Contains(stdout, "directories 0700, files 0600") || !strings.Contains(stdout, "--fresh") {
		t.Errorf("--help does not say state/ is 0700/0600:\n%s", stdout)
	}
	// Every command --help lists runs: "help" does, and no "completion" is offered.
	if strings.Contains(stdout, "completion") {
		t.Errorf("--help offers a completion command:\n%s", stdout)
	}
	if code, out, stderr := runCLI("help", "renew"); code != 0 || !strings.Contains(out, "--within") {
		t.Errorf("help renew: exit %d:\n%s%s", code, out, stderr)
	}
}

// TestREADMEListsEveryFlag: every flag of every command is in README, and the synopsis names every flag of the
// render; the --images row names every image.
func TestREADMEListsEveryFlag(t *testing.T) {
	raw, err := os.ReadFile(repo("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	root := newRootCommand(&strings.Builder{})
	for _, c := range append(root.Commands(), root) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			if !strings.Contains(readme, "--"+f.Name) && (f.Shorthand == "" || !strings.Contains(readme, "-"+f.Shorthand+" ")) {
				t.Errorf("README does not mention %s --%s", c.Name(), f.Name)
			}
		})
	}
	synopsis := readme[strings.Index(readme, "## CLI"):strings.Index(readme, "| flag | meaning |")]
	root.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !strings.Contains(synopsis, "--"+f.Name) {
			t.Errorf("README's synopsis lacks --%s", f.Name)
		}
	})
	row := regexp.MustCompile("(?m)^\\| `--images` \\|.*$").FindString(readme)
	images := root.Flags().Lookup("images").Usage
	names := images[strings.Index(images, "(")+1 : strings.Index(images, ")")]
	for _, n := range strings.Split(names, ", ") {
		if n == "etcd-upstream" || n == "kube-apiserver" || n == "kube-controller-manager" || n == "kube-scheduler" {
			continue // the upstream flavor's, in its own row
		}
		if !strings.Contains(row, "`"+n+"`") {
			t.Errorf("README's --images row does not list %s", n)
		}
	}
}
