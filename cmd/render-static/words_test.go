package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/render-static/render-static/pkg/components"
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

// TestReferenceListsEveryFlag: docs/reference.md, the reference of the commands, has a section for every command
// (a "## `render-static ...`" heading) with one table of its flags, a flag's names in the first column. Both ways:
// every flag --help lists (the help flag aside) is in its command's table, and every flag a table lists is one of
// that command's flags. The synopsis names every flag of the render, and the --images row every image key the CLI
// takes (components.ImageNames).
func TestReferenceListsEveryFlag(t *testing.T) {
	raw, err := os.ReadFile(repo("docs/reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	ref := string(raw)
	documented := referenceFlags(t, ref)

	root := newRootCommand(&strings.Builder{})
	commands := map[string]*cobra.Command{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || (c.HasParent() && c.Name() == "help") {
			return
		}
		// The flags --help lists, as cobra adds them when the command runs.
		c.InitDefaultHelpFlag()
		c.InitDefaultVersionFlag()
		commands[c.CommandPath()] = c
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if len(commands) < 7 {
		t.Fatalf("only %d commands found", len(commands))
	}
	for path, c := range commands {
		flags, ok := documented[path]
		if !ok {
			t.Errorf("docs/reference.md has no section \"## `%s`\"", path)
			continue
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			if !flags["--"+f.Name] {
				t.Errorf("docs/reference.md: %s's table does not list --%s", path, f.Name)
			}
			if f.Shorthand != "" && !flags["-"+f.Shorthand] {
				t.Errorf("docs/reference.md: %s's table does not list -%s (--%s)", path, f.Shorthand, f.Name)
			}
		})
	}
	for path, flags := range documented {
		c, ok := commands[path]
		if !ok {
			t.Errorf("docs/reference.md documents %q, which is no command", path)
			continue
		}
		for name := range flags {
			var f *pflag.Flag
			if long, ok := strings.CutPrefix(name, "--"); ok {
				f = c.Flags().Lookup(long)
			} else {
				f = c.Flags().ShorthandLookup(strings.TrimPrefix(name, "-"))
			}
			if f == nil {
				t.Errorf("docs/reference.md lists %s for %s, which has no such flag", name, path)
			}
		}
	}

	synopsis := section(t, ref, "## Synopsis")
	root.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !strings.Contains(synopsis, "--"+f.Name) {
			t.Errorf("docs/reference.md's synopsis lacks --%s", f.Name)
		}
	})
	render := section(t, ref, "## `render-static` (a render)")
	rowOf := func(flag string) string {
		row := regexp.MustCompile("(?m)^\\| `--" + flag + "` \\|.*$").FindString(render)
		if row == "" {
			t.Fatalf("docs/reference.md: the render's table has no --%s row", flag)
		}
		return row
	}
	// Every key --images takes, from the code (components.ImageNames), in its row; the upstream flavor's images
	// also in --flavor's row.
	imagesRow, flavorRow := rowOf("images"), rowOf("flavor")
	upstream := components.UpstreamImages()
	for _, n := range components.ImageNames() {
		if !strings.Contains(imagesRow, "`"+n+"`") {
			t.Errorf("docs/reference.md's --images row does not list the image %s", n)
		}
		if slices.Contains(upstream, n) && !strings.Contains(flavorRow, "`"+n+"`") {
			t.Errorf("docs/reference.md's --flavor row does not list the upstream image %s", n)
		}
	}
}

// referenceCommand is the heading of a command's section in docs/reference.md: "## `render-static certs`", and the
// render's "## `render-static` (a render)".
var referenceCommand = regexp.MustCompile("^## `(render-static[a-z -]*)`")

// referenceFlags reads the flag tables of docs/reference.md: for each command's section, the flags the first column
// of its table names ("| `--output`, `-o` | ..."). A section with two tables, a table row outside a command's section
// or a row whose first column names no flag is an error: the structure is what the test relies on.
func referenceFlags(t *testing.T, ref string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	flagName := regexp.MustCompile("^`(--?[a-z][a-z0-9-]*)`$")
	command, tables, inTable := "", 0, false
	for i, line := range strings.Split(ref, "\n") {
		if strings.HasPrefix(line, "## ") {
			command, tables, inTable = "", 0, false
			if m := referenceCommand.FindStringSubmatch(line); m != nil {
				command = m[1]
				if _, dup := out[command]; dup {
					t.Errorf("docs/reference.md:%d: a second section for %s", i+1, command)
				}
				out[command] = map[string]bool{}
			}
			continue
		}
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		if command == "" {
			continue // a table of another section
		}
		if !inTable {
			inTable = true
			if tables++; tables > 1 {
				t.Errorf("docs/reference.md:%d: a second table in %s's section", i+1, command)
			}
			continue // the header
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue // the separator
		}
		for _, name := range strings.Split(cells[1], ",") {
			m := flagName.FindStringSubmatch(strings.TrimSpace(name))
			if m == nil {
				t.Errorf("docs/reference.md:%d: %q is not a flag (`--name` or `-x`)", i+1, strings.TrimSpace(name))
				continue
			}
			out[command][m[1]] = true
		}
	}
	return out
}

// section is the text of md from heading to the next "## " heading.
func section(t *testing.T, md, heading string) string {
	t.Helper()
	i := strings.Index(md, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/reference.md has no %q", heading)
	}
	rest := md[i+len(heading)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
