package node

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// nodeScripts are the node's programs, by their installed path.
var nodeScripts = map[string]string{"aiokube.sh": AIOKubeScript, "aio-update.sh": AIOUpdateScript, "aio-csr-approver.sh": ApproverScript,
	"aio-pod-network.sh": PodNetworkScript}

// scriptSource reads manifests/node/scripts/<name> from the repository.
func scriptSource(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(repo(filepath.Join("manifests/node/scripts", name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	// funcDefRE matches a function definition at the start of a line: "name() {".
	funcDefRE = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*)\(\) \{`)
	// commentRE matches a line that is only a comment.
	commentRE = regexp.MustCompile(`(?m)^\s*#.*$`)
)

// shellFuncs returns the functions a script defines at the top level, each with its text (from its name to the
// "}" that starts a line, or its one line).
func shellFuncs(src string) map[string]string {
	funcs := map[string]string{}
	for _, m := range funcDefRE.FindAllStringSubmatchIndex(src, -1) {
		name, rest := src[m[2]:m[3]], src[m[0]:]
		line, _, _ := strings.Cut(rest, "\n")
		if strings.HasSuffix(strings.TrimSpace(line), "}") {
			funcs[name] = line
			continue
		}
		if end := strings.Index(rest, "\n}\n"); end >= 0 {
			funcs[name] = rest[:end+2]
		} else {
			funcs[name] = rest
		}
	}
	return funcs
}

// usesFunc reports whether a script (its comments left out) runs the function name: the name as a command word.
func usesFunc(src, name string) bool {
	code := commentRE.ReplaceAllString(src, "")
	return regexp.MustCompile(`(^|[\s;|&({!])` + regexp.QuoteMeta(name) + `($|[\s;)])`).MatchString(code)
}

// TestScriptLibrary: the node's programs and aio-lib.sh stay in step. Every program gets the library (its
// libraryLines, once); none defines again a function of the library; every function of the library is one that
// two or more programs run; no two programs define the same function with the same text (a helper they share
// belongs in the library); and no other file of manifests/node/scripts is a program the render does not install.
func TestScriptLibrary(t *testing.T) {
	lib := scriptSource(t, libraryName)
	if !strings.HasPrefix(lib, libraryHeader) {
		t.Errorf("%s does not start with %q", libraryName, libraryHeader)
	}
	libFuncs := shellFuncs(lib)
	for _, want := range []string{"log", "kc", "pick_client", "oneline", "write_file", "wait_until", "retry"} {
		if _, ok := libFuncs[want]; !ok {
			t.Errorf("%s does not define %s (found %v)", libraryName, want, slices.Sorted(maps.Keys(libFuncs)))
		}
	}

	entries, err := os.ReadDir(repo("manifests/node/scripts"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".sh") && n != libraryName {
			names = append(names, n)
			if _, ok := nodeScripts[n]; !ok {
				t.Errorf("manifests/node/scripts/%s: a script aio.ign does not install (add it to nodeScripts)", n)
			}
		}
	}
	if len(names) != len(nodeScripts) {
		t.Errorf("manifests/node/scripts holds %v, want the programs %v", names, slices.Sorted(maps.Keys(nodeScripts)))
	}

	users := map[string][]string{} // library function -> the programs that run it
	defs := map[string]map[string]string{}
	for _, name := range names {
		src := scriptSource(t, name)
		if n := strings.Count(src, libraryLines); n != 1 {
			t.Errorf("%s gets %s %d times, want once, with the lines\n%s", name, libraryName, n, libraryLines)
		}
		defs[name] = shellFuncs(src)
		for fn := range libFuncs {
			if _, ok := defs[name][fn]; ok {
				t.Errorf("%s defines %s again: it is %s's", name, fn, libraryName)
			}
			if usesFunc(src, fn) {
				users[fn] = append(users[fn], name)
			}
		}
	}
	for fn := range libFuncs {
		if len(users[fn]) < 2 {
			t.Errorf("%s: %s is run by %v only: the library holds what two or more programs share", libraryName, fn, users[fn])
		}
	}
	for i, a := range names {
		for _, b := range names[i+1:] {
			for fn, body := range defs[a] {
				if defs[b][fn] == body {
					t.Errorf("%s and %s define %s the same: it belongs in %s", a, b, fn, libraryName)
				}
			}
		}
	}
}

// TestScriptsInstalledInlined: aio.ign installs each program as its source with the library in place of its
// libraryLines (and nothing else changed), 0755; the installed script sources no file, passes `bash -n` and
// shellcheck on its own, and runs as the script in the repository does.
func TestScriptsInstalledInlined(t *testing.T) {
	f := newFixture(t, "examples/sno/install-config.yaml", "192.168.126.10", true)
	f.converge(t)
	tr := f.tree(t)
	lib := scriptSource(t, libraryName)
	_, libBody, _ := strings.Cut(lib, "\n")
	begin := "# ---- aio-lib.sh (manifests/node/scripts/aio-lib.sh), put here by render-static ----\n"
	end := "# ---- end of aio-lib.sh ----\n"
	dir := t.TempDir()
	var installed []string
	for name, p := range nodeScripts {
		src := scriptSource(t, name)
		file := fileOf(t, tr, p)
		got := string(file.Contents)
		if file.Mode != 0o755 {
			t.Errorf("%s: mode %o", p, file.Mode)
		}
		before, rest, ok := strings.Cut(got, begin)
		inlined, after, ok2 := strings.Cut(rest, end)
		if !ok || !ok2 {
			t.Errorf("%s: no %q ... %q", p, begin, end)
			continue
		}
		if inlined != libBody {
			t.Errorf("%s: what stands between the markers is not %s without its first line", p, libraryName)
		}
		if before+libraryLines+after != src {
			t.Errorf("%s is not manifests/node/scripts/%s with %s in place of its lines\n%s", p, name, libraryName, libraryLines)
		}
		if strings.Contains(before+after, "aio-lib.sh\"") {
			t.Errorf("%s still sources aio-lib.sh, which the node does not have", p)
		}
		out := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(out, file.Contents, 0o755); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command("bash", "-n", out).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", p, err, b)
		}
		installed = append(installed, out)
	}
	slices.Sort(installed)
	bin := testtools.Tool(t, "shellcheck")
	for _, p := range installed {
		if b, err := exec.Command(bin, "--norc", p).CombinedOutput(); err != nil {
			t.Errorf("shellcheck of the installed %s: %v\n%s", filepath.Base(p), err, b)
		}
	}

	// The same run from the repository (sourcing the library) and installed: aio-update without a command.
	run := func(script string) (string, int) {
		cmd := exec.Command("bash", script)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "AIO_UPDATE_ROOT=" + t.TempDir()}
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return b.String(), code
	}
	fromRepo, repoCode := run(repo("manifests/node/scripts/aio-update.sh"))
	fromNode, nodeCode := run(filepath.Join(dir, filepath.Base(AIOUpdateScript)))
	want := "aio-update: error: usage: aio-update apply UPDATE_DIR | recover UPDATE_DIR | rollback [ID] | status\n"
	if fromRepo != want || repoCode != 1 || fromNode != want || nodeCode != 1 {
		t.Errorf("aio-update without a command: from the repository %d %q, installed %d %q; want 1 %q", repoCode, fromRepo, nodeCode, fromNode, want)
	}
}
