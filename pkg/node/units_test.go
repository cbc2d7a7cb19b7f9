package node

import (
	"bufio"
	"fmt"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/pkg/export"
)

// unitKeys are the sections and keys the node's units may use, by unit type; the strict parser rejects any other.
var unitKeys = map[string]map[string][]string{
	".service": {
		"Unit":    {"Description", "Wants", "Requires", "After", "Before", "StartLimitIntervalSec", "StartLimitBurst"},
		"Service": {"Type", "ExecStartPre", "ExecStart", "Restart", "RestartSec", "TimeoutStartSec", "Environment", "RemainAfterExit"},
		"Install": {"WantedBy"},
	},
	".timer": {
		"Unit":    {"Description"},
		"Timer":   {"OnBootSec", "OnUnitInactiveSec", "AccuracySec"},
		"Install": {"WantedBy"},
	},
}

// rhcosCommands are the commands the units run that RHCOS ships (the node side writes the others).
var rhcosCommands = []string{"/usr/bin/kubelet", "/bin/mkdir", "/bin/rm"}

var (
	timeSpan   = regexp.MustCompile(`^(\d+(us|ms|s|min|h|d)?)+$`)
	unitName   = regexp.MustCompile(`^[A-Za-z0-9:_.\\-]+\.(service|target|timer|socket|mount|path|slice)$`)
	envAssign  = regexp.MustCompile(`^"[A-Z_][A-Z0-9_]*=([^"\\]|\\.)*"$`)
	sectionHdr = regexp.MustCompile(`^\[([A-Za-z]+)\]$`)
)

// parseUnit is a strict parser of systemd unit syntax for the node's units: comments, [Section] headers,
// Key=Value lines with backslash continuations; sections and keys must be known for the unit type, values must
// be well formed (types, restart policies, time spans, unit names, quoted Environment assignments, absolute
// commands the node has). It returns the key/value pairs by "Section.Key".
func parseUnit(name, contents string, haveCommand func(string) bool) (map[string][]string, error) {
	allowed, ok := unitKeys[path.Ext(name)]
	if !ok && strings.HasSuffix(name, ".conf") { // a drop-in
		allowed = unitKeys[".service"]
	} else if !ok {
		return nil, fmt.Errorf("%s: unknown unit type", name)
	}
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(contents))
	lineNo := 0
	var pending string
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if pending != "" {
			line = pending + " " + strings.TrimSpace(line)
			pending = ""
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, ";") {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			pending = strings.TrimSuffix(trimmed, `\`)
			continue
		}
		if m := sectionHdr.FindStringSubmatch(trimmed); m != nil {
			if _, ok := allowed[m[1]]; !ok {
				return nil, fmt.Errorf("%s:%d: unknown section [%s]", name, lineNo, m[1])
			}
			section = m[1]
			continue
		}
		if section == "" {
			return nil, fmt.Errorf("%s:%d: %q outside a section", name, lineNo, trimmed)
		}
		k, v, ok := strings.Cut(trimmed, "=")
		if !ok || k == "" || strings.TrimSpace(k) != k {
			return nil, fmt.Errorf("%s:%d: not a Key=Value line: %q", name, lineNo, trimmed)
		}
		if !slices.Contains(allowed[section], k) {
			return nil, fmt.Errorf("%s:%d: unknown key %s in [%s]", name, lineNo, k, section)
		}
		if v == "" {
			return nil, fmt.Errorf("%s:%d: %s is empty", name, lineNo, k)
		}
		if err := checkValue(k, v, haveCommand); err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", name, lineNo, k, err)
		}
		out[section+"."+k] = append(out[section+"."+k], v)
	}
	if pending != "" {
		return nil, fmt.Errorf("%s: ends in a continuation", name)
	}
	return out, sc.Err()
}

func checkValue(k, v string, haveCommand func(string) bool) error {
	oneOf := func(allowed ...string) error {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("%q is not one of %v", v, allowed)
		}
		return nil
	}
	switch k {
	case "Type":
		return oneOf("simple", "exec", "notify", "oneshot", "forking")
	case "Restart":
		return oneOf("no", "always", "on-failure", "on-abnormal", "on-success")
	case "RemainAfterExit":
		return oneOf("yes", "no", "true", "false")
	case "RestartSec", "TimeoutStartSec", "StartLimitIntervalSec", "OnBootSec", "OnUnitInactiveSec", "AccuracySec":
		if !timeSpan.MatchString(v) {
			return fmt.Errorf("%q is not a time span", v)
		}
	case "StartLimitBurst":
		if !regexp.MustCompile(`^\d+$`).MatchString(v) {
			return fmt.Errorf("%q is not a count", v)
		}
	case "Wants", "Requires", "After", "Before", "WantedBy":
		for _, u := range strings.Fields(v) {
			if !unitName.MatchString(u) {
				return fmt.Errorf("%q is not a unit name", u)
			}
		}
	case "Environment":
		if !envAssign.MatchString(v) {
			return fmt.Errorf("%s is not one quoted VAR=value assignment", v)
		}
	case "ExecStart", "ExecStartPre":
		cmd := strings.Fields(v)[0]
		if !path.IsAbs(cmd) {
			return fmt.Errorf("%s is not an absolute path", cmd)
		}
		if !haveCommand(cmd) {
			return fmt.Errorf("%s is neither shipped by RHCOS nor written by the node side", cmd)
		}
	}
	return nil
}

// nodeCommands says whether the node has a command: RHCOS ships it, or the tree holds it executable.
func nodeCommands(tr *export.Tree) func(string) bool {
	return func(cmd string) bool {
		if slices.Contains(rhcosCommands, cmd) {
			return true
		}
		for _, f := range tr.Files() {
			if f.Path == cmd && f.Mode&0100 != 0 {
				return true
			}
		}
		return false
	}
}

// TestUnitsParse: every unit and drop-in of the node parses with the strict parser, enabled units have an
// [Install] section, every service has an ExecStart, and the timer's service exists.
func TestUnitsParse(t *testing.T) {
	forEachConfig(t, func(t *testing.T, _ testConfig, _ *fixture, tr *export.Tree) {
		names := map[string]bool{}
		for _, u := range tr.Units() {
			names[u.Name] = true
		}
		for _, u := range tr.Units() {
			for _, d := range u.Dropins {
				if _, err := parseUnit(d.Name, d.Contents, nodeCommands(tr)); err != nil {
					t.Error(err)
				}
			}
			if u.Contents == "" {
				continue
			}
			kv, err := parseUnit(u.Name, u.Contents, nodeCommands(tr))
			if err != nil {
				t.Error(err)
				continue
			}
			if u.Enabled && len(kv["Install.WantedBy"]) == 0 {
				t.Errorf("%s is enabled but has no [Install] WantedBy", u.Name)
			}
			if strings.HasSuffix(u.Name, ".service") && len(kv["Service.ExecStart"]) != 1 {
				t.Errorf("%s has %d ExecStart", u.Name, len(kv["Service.ExecStart"]))
			}
			if strings.HasSuffix(u.Name, ".timer") && !names[strings.TrimSuffix(u.Name, ".timer")+".service"] {
				t.Errorf("%s has no service", u.Name)
			}
		}
	})
}

// TestUnitParserIsStrict: the parser rejects what systemd would ignore or refuse.
func TestUnitParserIsStrict(t *testing.T) {
	have := func(string) bool { return true }
	for name, bad := range map[string]string{
		"unknown key":      "[Service]\nType=oneshot\nExecStrat=/bin/true\n",
		"unknown section":  "[Servce]\nType=oneshot\n",
		"bad type":         "[Service]\nType=one-shot\n",
		"bad time":         "[Service]\nRestartSec=soon\n",
		"relative command": "[Service]\nExecStart=bin/true\n",
		"outside section":  "Type=oneshot\n",
		"unquoted env":     "[Service]\nEnvironment=A=b c\n",
		"dangling":         "[Service]\nExecStart=/bin/true \\\n",
		"bad unit name":    "[Unit]\nAfter=network online\n",
	} {
		if _, err := parseUnit("x.service", bad, have); err == nil {
			t.Errorf("%s: accepted:\n%s", name, bad)
		}
	}
	if _, err := parseUnit("x.service", "[Service]\nExecStart=/usr/bin/nothere\n", func(string) bool { return false }); err == nil {
		t.Error("a command the node does not have was accepted")
	}
}

// TestUnitsSystemdAnalyzeVerify: systemd-analyze verify accepts every unit laid down on a root holding the node's
// files, the host's systemd units (targets) and stand-ins for what RHCOS ships (kubelet, CRI-O, coreutils).
func TestUnitsSystemdAnalyzeVerify(t *testing.T) {
	bin := testtools.Tool(t, "systemd-analyze")
	hostUnits := "/usr/lib/systemd/system"
	testtools.Path(t, filepath.Join(hostUnits, "multi-user.target"), "systemd unit (the package systemd installs the host's units)")
	forEachConfig(t, func(t *testing.T, _ testConfig, _ *fixture, tr *export.Tree) {
		root := filepath.Join(t.TempDir(), "root")
		if err := export.WriteRootfs(root, tr); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, "usr/lib/systemd"), 0755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-r", hostUnits, filepath.Join(root, "usr/lib/systemd")).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		// What RHCOS ships and the units use.
		for _, cmd := range append(rhcosCommands, "/usr/bin/crio") {
			if err := export.WriteFile(filepath.Join(root, cmd), 0755, []byte("#!/bin/sh\n")); err != nil {
				t.Fatal(err)
			}
		}
		for _, u := range []string{"crio.service", "rpc-statd.service", "ostree-finalize-staged.service"} {
			p := filepath.Join(root, "usr/lib/systemd/system", u)
			if err := export.WriteFile(p, 0644, []byte("[Unit]\nDescription=stand-in for RHCOS's "+u+"\n[Service]\nExecStart=/usr/bin/crio\n")); err != nil {
				t.Fatal(err)
			}
		}
		var units []string
		for _, u := range tr.Units() {
			if u.Contents != "" {
				units = append(units, u.Name)
			}
		}
		args := append([]string{"verify", "--root=" + root, "--man=no"}, units...)
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
}

// TestNodeTreeIgnition: the node's tree alone packs into a valid Ignition config (the Ignition library parses
// every unit and drop-in, and warns on enabled units that cannot be enabled), and secret files are 0600.
func TestNodeTreeIgnition(t *testing.T) {
	f := newFixture(t, "testdata/installconfig/good/proxy.yaml", "", true)
	f.converge(t)
	tr := f.tree(t)
	if _, err := export.Ignition(tr, export.IgnitionOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, file := range tr.Files() {
		if export.IsSecretPath(file.Path) && file.Mode != 0600 {
			t.Errorf("%s: mode %o", file.Path, file.Mode)
		}
	}
}

// TestScriptsShellcheck: the node's scripts, their library (which shellcheck follows from each script) and the
// test stubs pass shellcheck.
func TestScriptsShellcheck(t *testing.T) {
	bin := testtools.Tool(t, "shellcheck")
	args, err := filepath.Glob(repo("manifests/node/scripts/*.sh"))
	if err != nil || len(args) != len(nodeScripts)+1 {
		t.Fatalf("manifests/node/scripts/*.sh: %v %v", args, err)
	}
	args = append(args, repo("testdata/node/bin/oc"), repo("testdata/node/bin/systemctl"))
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}
