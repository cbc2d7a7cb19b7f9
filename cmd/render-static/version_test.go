package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// TestVersionFromBuildInfo: the version of the -ldflags, else the module's ("(devel)" is devel); the commit with
// its time and whether the work tree had changes; every pinned module with its version (and replacement), or "not
// linked"; without build information, says so.
func TestVersionFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/render-static/render-static", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/openshift/library-go", Version: "v0.0.0-20251222131241-289839b3ffe8"},
			{Path: "github.com/openshift/api", Version: "v0.0.0-20251223163548-3f584b29ee4a", Replace: &debug.Module{Path: "../api"}},
			{Path: "k8s.io/client-go", Version: "v0.34.3"},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-11-27T07:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	platform := " " + runtime.GOOS + "/" + runtime.GOARCH
	want := "render-static devel\n" +
		"  commit:              0123abcd (modified work tree), 2026-11-27T07:00:00Z\n" +
		"  go:                  go1.99.1" + platform + "\n" +
		"  library-go:          github.com/openshift/library-go v0.0.0-20251222131241-289839b3ffe8\n" +
		"  openshift/api:       github.com/openshift/api v0.0.0-20251223163548-3f584b29ee4a => ../api\n" +
		"  openshift/client-go: not linked\n" +
		"  kubernetes:          k8s.io/client-go v0.34.3\n"
	if got := readBuildVersion(bi, true, "", "ffff").String(); got != want {
		t.Errorf("version:\n%s\nwant\n%s", got, want)
	}
	if got := readBuildVersion(bi, true, "v1.2.3", "").String(); !strings.HasPrefix(got, "render-static v1.2.3\n") {
		t.Errorf("with -ldflags version v1.2.3:\n%s", got)
	}
	bi.Settings = nil
	if got := readBuildVersion(bi, true, "", "").String(); !strings.Contains(got, "commit:              unknown (built without VCS information)\n") {
		t.Errorf("without VCS information:\n%s", got)
	}
	if got := readBuildVersion(bi, true, "", "ffff").String(); !strings.Contains(got, "commit:              ffff\n") {
		t.Errorf("without VCS information, with -ldflags commit ffff:\n%s", got)
	}
	if got := readBuildVersion(nil, false, "", "").String(); !strings.HasPrefix(got, "render-static unknown (no build information)\n") {
		t.Errorf("without build information:\n%s", got)
	}
}

// TestVersionCommand builds the command as a user does, with a version set by -ldflags, and runs `version` and
// `--version`: the same text, naming that version, the Go toolchain that built it, the versions go.mod pins, and
// the commit git says the work tree is at (and whether it has changes, as `git status --porcelain` says) where
// the go command stamps VCS information: in a clone (.git a directory; a git worktree's .git file it does not
// recognise); elsewhere no commit.
func TestVersionCommand(t *testing.T) {
	testtools.Long(t, "builds the command")
	goTool := testtools.Tool(t, "go")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "render-static")
	gitDir, err := os.Stat(repo(".git"))
	stamped := err == nil && gitDir.IsDir()
	if _, err := exec.LookPath("git"); err != nil {
		stamped = false
	}
	build := exec.CommandContext(ctx, goTool, "build", fmt.Sprintf("-buildvcs=%v", stamped), "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin, args...).Output()
		if err != nil {
			t.Fatalf("render-static %v: %v", args, err)
		}
		return string(out)
	}
	out := run("version")
	if flag := run("--version"); flag != out {
		t.Errorf("--version prints\n%s\nversion prints\n%s", flag, out)
	}
	if !strings.HasPrefix(out, "render-static v9.8.7-test\n") {
		t.Errorf("version does not name the -ldflags version:\n%s", out)
	}
	if !strings.Contains(out, "  go:                  "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n") {
		t.Errorf("version does not name the toolchain %s:\n%s", runtime.Version(), out)
	}
	gomod, err := os.ReadFile(repo("go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pinned {
		m := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(p.path) + ` (\S+)`).FindSubmatch(gomod)
		if m == nil {
			t.Fatalf("go.mod requires no %s", p.path)
		}
		if want := "  " + p.label + ":"; !strings.Contains(out, want+strings.Repeat(" ", 23-len(want))+p.path+" "+string(m[1])+"\n") {
			t.Errorf("version does not name %s %s:\n%s", p.path, m[1], out)
		}
	}
	if !stamped {
		if !strings.Contains(out, "  commit:              unknown (built without VCS information)\n") {
			t.Errorf("built without VCS information, but version names a commit:\n%s", out)
		}
		return
	}
	head, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	status, err := exec.CommandContext(ctx, "git", "status", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "  commit:              " + strings.TrimSpace(string(head))
	if len(status) > 0 {
		want += " (modified work tree)"
	}
	if !strings.Contains(out, want+", ") {
		t.Errorf("version does not name the commit as %q:\n%s", want, out)
	}
}
