package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// pastedCommands are the coreos-installer command lines of text: the summary's next steps (indented on their own
// lines) or a README's shell blocks.
func pastedCommands(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "coreos-installer ") {
			out = append(out, l)
		}
	}
	return out
}

// runPasted runs each command line in dir as a person pastes it into bash, with the coreos-installer stand-in
// (testdata/nextsteps: it checks the arguments and the files they name) first on PATH, and a file standing for the
// live ISO the steps say to download.
func runPasted(t *testing.T, stub, dir string, lines []string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "rhcos-live.x86_64.iso"), []byte("ISO"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		cmd := exec.Command("bash", "-c", l)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+stub+":"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("pasted %q: %v\n%s", l, err, out)
		}
	}
}

// TestNextStepsPasted: the summary's next steps name the DNS records and the live ISO, and their commands, pasted
// where the render ran, embed the node's live.ign and each worker's; so does README's. Without an install device,
// the steps say how to name one, by the flag.
func TestNextStepsPasted(t *testing.T) {
	testtools.Tool(t, "nmcli") // the workers example's keyfile
	top, err := filepath.Abs(repo("."))
	if err != nil {
		t.Fatal(err)
	}
	repo := func(p string) string { return filepath.Join(top, p) } // the test changes its working directory
	work := t.TempDir()
	t.Chdir(work)
	out := runOK(t, "--install-config", repo("examples/sno-workers/install-config.yaml"), "--node-ip", "192.168.126.10",
		"--workers", repo("examples/sno-workers/workers.yaml"), "--dir", "aio")
	steps := out[strings.Index(out, "next steps"):]
	for _, want := range []string{"api.sno.example.com, api-int.sno.example.com and *.apps.sno.example.com -> 192.168.126.10",
		"rhcos-live.x86_64.iso", "KUBECONFIG=aio/auth/kubeconfig"} {
		if !strings.Contains(steps, want) {
			t.Errorf("the next steps lack %q:\n%s", want, steps)
		}
	}
	lines := pastedCommands(steps)
	if len(lines) != 3 {
		t.Fatalf("%d commands in the next steps, want the node's and two workers':\n%s", len(lines), steps)
	}
	runPasted(t, repo("testdata/nextsteps"), work, lines)
	for _, iso := range []string{"sno.iso", "worker-0.iso", "worker-1.iso"} {
		if _, err := os.Stat(filepath.Join(work, iso)); err != nil {
			t.Errorf("the pasted steps made no %s: %v", iso, err)
		}
	}

	// README's install section, pasted in a folder where its render ran.
	readme, err := os.ReadFile(repo("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)[strings.Index(string(readme), "## Render and install"):]
	section = section[:strings.Index(section, "\n## ")]
	readmeDir := t.TempDir()
	t.Chdir(readmeDir)
	runOK(t, "--install-config", repo("examples/sno/install-config.yaml"), "--node-ip", "192.168.126.10", "--dir", "aio")
	lines = pastedCommands(section)
	if len(lines) == 0 {
		t.Fatalf("README's install section has no coreos-installer command")
	}
	runPasted(t, repo("testdata/nextsteps"), readmeDir, lines)

	// No install device anywhere: the steps say how to give one.
	t.Chdir(t.TempDir())
	out = runOK(t, "--install-config", repo("testdata/installconfig/good/dualstack.yaml"), "--node-ip", "192.168.126.10,fd00::10", "--dir", "aio")
	if !strings.Contains(out, "AAAA records") || !strings.Contains(out, "no install device was given") || !strings.Contains(out, "--install-device") {
		t.Errorf("the next steps of a render without an install device:\n%s", out[strings.Index(out, "next steps"):])
	}
}
