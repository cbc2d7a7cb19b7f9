package etcd_test

import (
	"bufio"
	"github.com/render-static/render-static/internal/testkit/rendertest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/conformance"
)

var expectedDir = rendertest.ExpectedDir()

// The one known adaptation: the etcd container's script (fresh-node start).
const adaptedPath = "pods/etcd-pod.yaml:spec.containers[etcd].command[2]"

// TestConformance compares the etcd the render lays out with what the operator produced for the same
// install-config (pod field by field with images and script bodies normalised, etcd.env, every file with its
// mode): nothing may differ but the documented adaptation.
func TestConformance(t *testing.T) {
	r := render(t, ipv4)
	rep, err := conformance.Compare(conformance.Options{RenderDir: r.dir, ExpectedDir: expectedDir, Components: []string{"etcd"}, Images: r.in.Images})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Write(&b)
	t.Log(b.String())
	if !rep.OK() {
		t.Errorf("unexplained differences to the operator's etcd:\n%s", b.String())
	}
	if len(rep.Adapted) != 1 || rep.Adapted[0].Path != adaptedPath {
		t.Errorf("known adaptations = %v, want exactly %s", rep.Adapted, adaptedPath)
	}
	// The pod, etcd.env, two empty version files and the 32 etcd entries of FILES.txt at least.
	if rep.Compared < 35 {
		t.Errorf("only %d items compared", rep.Compared)
	}
}

// TestEtcdEnvIsTheOperators: etcd.env byte for byte, once the image is the expected tree's.
func TestEtcdEnvIsTheOperators(t *testing.T) {
	r := render(t, ipv4)
	const p = "etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-scripts/etcd.env"
	want, err := os.ReadFile(filepath.Join(expectedDir, "rootfs", p))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(string(r.file(t, p)), r.in.Images.Image("etcd"), "quay.io/openshift/etcd:refs")
	if got != string(want) {
		t.Errorf("etcd.env differs from the operator's:\n--- want\n%s--- got\n%s", want, got)
	}
}

// TestFilesAreTheOperators: the files the installer lays out for etcd, with their modes, are exactly FILES.txt's.
func TestFilesAreTheOperators(t *testing.T) {
	r := render(t, ipv4)
	f, err := os.Open(filepath.Join(expectedDir, "FILES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	isEtcd := func(p string) bool {
		return p == "etc/kubernetes/manifests/etcd-pod.yaml" ||
			strings.HasPrefix(p, "etc/kubernetes/static-pod-resources/etcd-pod-") ||
			strings.HasPrefix(p, "etc/kubernetes/static-pod-resources/etcd-certs/")
	}
	var want, got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if _, p, ok := strings.Cut(sc.Text(), " "); ok && isEtcd(p) {
			want = append(want, sc.Text())
		}
	}
	for p, file := range r.files {
		if isEtcd(p) {
			got = append(got, strconv.FormatUint(uint64(file.Mode.Perm()), 8)+" "+p)
		} else {
			t.Errorf("etcd's installer layout has %s, outside etcd's directories", p)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("etcd files differ from FILES.txt:\n--- want\n%s\n--- got\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	if len(want) != 32 {
		t.Errorf("FILES.txt has %d etcd entries, the test expects 32", len(want))
	}
}

var scriptSummary = regexp.MustCompile(`exec statements: (.*)>$`)

// expectedExec is the operator's exec statement of a container of the expected pod, whitespace folded.
func expectedExec(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(expectedDir, "pods", "etcd-pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod struct {
		Spec struct {
			Containers []struct {
				Name    string   `json:"name"`
				Command []string `json:"command"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &pod); err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			m := scriptSummary.FindStringSubmatch(c.Command[2])
			if m == nil {
				t.Fatalf("expected %s script has no exec summary: %q", name, c.Command[2])
			}
			return fold(m[1])
		}
	}
	t.Fatalf("expected pod has no container %s", name)
	return ""
}

var spaces = regexp.MustCompile(`\s+`)

func fold(s string) string { return strings.TrimSpace(spaces.ReplaceAllString(s, " ")) }

// execStatements are a script's exec statements, continuation lines joined and whitespace folded.
func execStatements(script string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(script, "\\\n", " "), "\n") {
		if l = fold(l); strings.HasPrefix(l, "exec ") {
			out = append(out, l)
		}
	}
	return out
}

// TestEtcdExecStatements pins the adaptation down: the etcd script's first exec statement is the operator's
// verbatim, and the first-boot one is the same plus exactly the two initial-cluster flags.
func TestEtcdExecStatements(t *testing.T) {
	r := render(t, ipv4)
	want := expectedExec(t, "etcd")
	got := execStatements(container(t, r.pod(t), "etcd").Command[2])
	if len(got) != 2 {
		t.Fatalf("etcd script has %d exec statements, want 2: %q", len(got), got)
	}
	if got[0] != want {
		t.Errorf("existing-member exec differs from the operator's:\nwant %s\ngot  %s", want, got[0])
	}
	cmd, fallback, _ := strings.Cut(want, " || ")
	first := cmd + " --initial-cluster-state=new --initial-cluster=${NODE_sno_0_ETCD_NAME}=https://${NODE_sno_0_ETCD_URL_HOST}:2380 || " + fallback
	if got[1] != first {
		t.Errorf("first-boot exec:\nwant %s\ngot  %s", first, got[1])
	}
	for _, name := range []string{"etcd-metrics", "etcd-readyz"} {
		if got := execStatements(container(t, r.pod(t), name).Command[2]); len(got) != 1 || got[0] != expectedExec(t, name) {
			t.Errorf("%s exec = %q, want %q", name, got, expectedExec(t, name))
		}
	}
}

// TestFreshNodeStart runs the rendered etcd container script with a stand-in etcd that records its arguments:
// on a node without a member directory etcd must be told to form a new single-member cluster of this node; once
// the member exists it must start with the operator's arguments only.
func TestFreshNodeStart(t *testing.T) {
	for _, nc := range []netCase{ipv4, ipv6, dual} {
		t.Run(nc.name, func(t *testing.T) {
			r := render(t, nc)
			c := container(t, r.pod(t), "etcd")
			env := envOf(c)
			host := env["NODE_sno_0_ETCD_URL_HOST"]
			if want := escaped(r.nodeIPs()[0].String()); host != want {
				t.Fatalf("NODE_sno_0_ETCD_URL_HOST = %q, want %q", host, want)
			}
			dataDir := filepath.Join(t.TempDir(), "var-lib-etcd")
			if err := os.MkdirAll(dataDir, 0700); err != nil {
				t.Fatal(err)
			}
			script := strings.ReplaceAll(c.Command[2], "/var/lib/etcd", dataDir)

			fresh := runEtcdScript(t, script, env)
			joined := " " + strings.Join(fresh, " ") + " "
			for _, want := range []string{
				" --initial-cluster-state=new ",
				" --initial-cluster=sno-0=https://" + host + ":2380 ",
				" --initial-advertise-peer-urls=https://" + host + ":2380 ",
				" --advertise-client-urls=https://" + host + ":2379 ",
			} {
				if !strings.Contains(joined, want) {
					t.Errorf("first boot: etcd was not given%s\nargs: %q", want, fresh)
				}
			}

			if err := os.MkdirAll(filepath.Join(dataDir, "member", "snap"), 0700); err != nil {
				t.Fatal(err)
			}
			later := runEtcdScript(t, script, env)
			if strings.Contains(strings.Join(later, " "), "--initial-cluster") {
				t.Errorf("later boot: etcd was given initial-cluster flags: %q", later)
			}
			if len(fresh) != len(later)+2 || strings.Join(fresh[:len(later)], " ") != strings.Join(later, " ") {
				t.Errorf("first-boot arguments are not the later-boot ones plus two flags:\nfirst %q\nlater %q", fresh, later)
			}
		})
	}
}

func escaped(ip string) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]"
	}
	return ip
}

// runEtcdScript runs a container script with /bin/sh, the container's environment, and stand-ins for nice,
// ionice, ss and etcd; it returns the arguments etcd got.
func runEtcdScript(t *testing.T, script string, env map[string]string) []string {
	t.Helper()
	bin := t.TempDir()
	out := filepath.Join(bin, "etcd.args")
	stubs := map[string]string{
		"nice":   "#!/bin/sh\nwhile [ \"$1\" = -n ]; do shift 2; done\nexec \"$@\"\n",
		"ionice": "#!/bin/sh\nshift 2\nexec \"$@\"\n",
		"ss":     "#!/bin/sh\nexit 0\n",
		"etcd":   "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ETCD_ARGS_OUT\"\n",
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "ETCD_ARGS_OUT=" + out}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("etcd script failed: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("etcd did not run: %v", err)
	}
	return strings.Fields(string(b))
}
