package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/registries"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/node"
)

// The mirror case's pieces that need no node (mirror.go): containerd's hosts.toml from the registries.conf the
// render writes for the case's install-config, the plan of what the mirror serves, the check of its log, the release
// file. No root needed.

const (
	testDigestA = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	testDigestB = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// dualstackRegistriesConf is the registries.conf the render writes for the mirror case's install-config.
func dualstackRegistriesConf(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "upstream", "install-config-dualstack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ic, err := installconfig.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	conf := node.RegistriesConf(ic)
	if conf == nil {
		t.Fatal("the dual stack install-config renders no registries.conf: it names no mirror")
	}
	return conf
}

func resolve(t *testing.T, conf []byte, images ...string) []registries.Pull {
	t.Helper()
	pulls, err := registries.Resolve(conf, images)
	if err != nil {
		t.Fatal(err)
	}
	return pulls
}

func TestContainerdHosts(t *testing.T) {
	conf := dualstackRegistriesConf(t)
	pulls := resolve(t, conf, ReleaseSource+"@"+testDigestA, ReleaseSource+"@"+testDigestB, agnhostRepository+"@"+testDigestA,
		// By tag under a digest-only mirror: never the mirror (no "resolve" capability), the source only.
		agnhostRepository+":2.56",
		// No mirror at all.
		"quay.io/other/image:1")
	hosts, err := ContainerdHosts(pulls, "http")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"registry.invalid": `# registry.invalid: its mirrors, from the rendered /etc/containers/registries.conf (test/e2e/mirror.go)
server = "https://registry.invalid"

[host."http://mirror.e2e.example.net:5000/v2/disconnected"]
  capabilities = ["pull"]
  override_path = true
`,
		"registry.k8s.io": `# registry.k8s.io: its mirrors, from the rendered /etc/containers/registries.conf (test/e2e/mirror.go)
server = "https://registry.k8s.io"

[host."http://mirror.e2e.example.net:5000"]
  capabilities = ["pull"]
`,
	}
	if len(hosts) != len(want) {
		t.Errorf("hosts.toml for %v, want %v", sortedKeys(hosts), sortedKeys(want))
	}
	for h, w := range want {
		if hosts[h] != w {
			t.Errorf("%s/hosts.toml:\n%s\nwant:\n%s", h, hosts[h], w)
		}
	}
	dir := t.TempDir()
	written, err := WriteContainerdHosts(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "registry.invalid", "hosts.toml")); err != nil || string(got) != want["registry.invalid"] || !strings.Contains(written, "override_path") {
		t.Errorf("written: %v %q", err, got)
	}

	// A mirror that accepts tags too (pull-from-mirror "all", which registries.conf(5) allows): resolve as well.
	all := `[[registry]]
  location = "registry.invalid/e2e"
  [[registry.mirror]]
    location = "mirror.e2e.example.net:5000/e2e"
`
	hosts, err = ContainerdHosts(resolve(t, []byte(all), "registry.invalid/e2e/x:1", "registry.invalid/e2e/y@"+testDigestA), "http")
	if err != nil {
		t.Fatal(err)
	}
	if h := hosts["registry.invalid"]; !strings.Contains(h, `[host."http://mirror.e2e.example.net:5000"]`+"\n  capabilities = [\"pull\", \"resolve\"]\n") || strings.Contains(h, "override_path") {
		t.Errorf("a mirror for tags and digests:\n%s", h)
	}

	// What hosts.toml cannot say fails, naming the image.
	for name, c := range map[string]struct {
		conf, want string
		images     []string
	}{
		"the repository path is not kept": {`[[registry]]
  location = "registry.invalid/e2e/release"
  [[registry.mirror]]
    location = "mirror.e2e.example.net:5000/flat"
    pull-from-mirror = "digest-only"
`, `image registry.invalid/e2e/release@` + testDigestA + `: mirror reference mirror.e2e.example.net:5000/flat@` + testDigestA + ` does not end in the source's repository path "e2e/release"`,
			[]string{"registry.invalid/e2e/release@" + testDigestA}},
		"two mirrors for one registry host": {`[[registry]]
  location = "registry.invalid/a"
  [[registry.mirror]]
    location = "m1.example.net:5000/a"
[[registry]]
  location = "registry.invalid/b"
  [[registry.mirror]]
    location = "m2.example.net:5000/b"
`, "images of registry.invalid go to different mirrors",
			[]string{"registry.invalid/a/x@" + testDigestA, "registry.invalid/b/y@" + testDigestA}},
		"tags and digests to different mirrors": {`[[registry]]
  location = "registry.invalid/a"
  [[registry.mirror]]
    location = "m1.example.net:5000/a"
    pull-from-mirror = "tag-only"
  [[registry.mirror]]
    location = "m2.example.net:5000/a"
`, "images of registry.invalid by tag go to mirrors",
			[]string{"registry.invalid/a/x:1", "registry.invalid/a/y@" + testDigestA}},
	} {
		_, err := ContainerdHosts(resolve(t, []byte(c.conf), c.images...), "http")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}

func TestPlanMirror(t *testing.T) {
	conf := dualstackRegistriesConf(t)
	release, agnhost := ReleaseSource+"@"+testDigestA, agnhostRepository+"@"+testDigestB
	plan, err := PlanMirror(conf, []string{release, agnhost, ReleaseSource + "@" + testDigestA})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Host != "mirror.e2e.example.net" || plan.Port != 5000 {
		t.Errorf("mirror %s:%d", plan.Host, plan.Port)
	}
	wantServe := []string{"disconnected/e2e/release@" + testDigestA, "e2e-test-images/agnhost@" + testDigestB}
	if strings.Join(plan.Serve, " ") != strings.Join(wantServe, " ") {
		t.Errorf("serves %v, want %v", plan.Serve, wantServe)
	}
	if plan.Expect[release] != wantServe[0] || plan.Expect[agnhost] != wantServe[1] || len(plan.Expect) != 2 {
		t.Errorf("expects %v", plan.Expect)
	}
	for _, bad := range []string{ReleaseSource + ":4.20", "registry.k8s.io/pause@" + testDigestA} {
		if _, err := PlanMirror(conf, []string{release, bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v, want an error naming it", bad, err)
		}
	}
	if _, err := PlanMirror(nil, []string{release}); err == nil {
		t.Error("no registries.conf: planned")
	}
}

func TestCheckMirrorPulls(t *testing.T) {
	expect := map[string]string{
		ReleaseSource + "@" + testDigestA:     "disconnected/e2e/release@" + testDigestA,
		agnhostRepository + "@" + testDigestB: "e2e-test-images/agnhost@" + testDigestB,
	}
	at := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	line := func(method, path string, status int) string {
		b, _ := json.Marshal(map[string]any{"time": at, "remote": "192.168.126.10:40000", "method": method, "path": path,
			"status": status, "bytes": 100, "agent": "containerd/1.6.20~ds1"})
		return string(b)
	}
	good := []string{
		line("GET", "/v2/", 200),
		line("HEAD", "/v2/disconnected/e2e/release/manifests/"+testDigestA, 200),
		line("GET", "/v2/disconnected/e2e/release/manifests/"+testDigestA, 200),
		line("GET", "/v2/disconnected/e2e/release/blobs/"+testDigestB, 200),
		line("GET", "/v2/e2e-test-images/agnhost/manifests/"+testDigestB, 200),
	}
	check := func(lines []string) error {
		p := filepath.Join(t.TempDir(), "mirror.log")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		log, err := ReadMirrorLog(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != len(lines) {
			t.Fatalf("read %d requests of %d", len(log), len(lines))
		}
		_, err = CheckMirrorPulls(log, expect)
		return err
	}
	if err := check(good); err != nil {
		t.Errorf("a good log: %v", err)
	}
	for name, c := range map[string]struct {
		lines []string
		want  string
	}{
		"a tag pull":         {append(good, line("HEAD", "/v2/e2e-test-images/agnhost/manifests/2.56", 404)), `a manifests by tag "2.56"`},
		"an image not there": {good[:4], "e2e-test-images/agnhost@" + testDigestB + " was never fetched"},
		"only a HEAD":        {good[1:2], "was never fetched"},
		"another repository": {append(good, line("GET", "/v2/other/manifests/"+testDigestA, 404)), "a repository the mirror does not serve (other)"},
		"a failed request":   {append(good, line("GET", "/v2/disconnected/e2e/release/blobs/"+testDigestA, 404)), "blobs/" + testDigestA + ": 404"},
	} {
		if err := check(c.lines); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}

func TestReleaseImageStream(t *testing.T) {
	l := &MirrorLayout{Digests: map[string]string{agnhostKey: testDigestB}}
	for _, r := range ReleaseImages {
		l.Digests[r.Key] = testDigestA
	}
	data, err := ReleaseImageStream("e2e", l.ReleasePullSpecs())
	if err != nil {
		t.Fatal(err)
	}
	var is struct {
		Kind, APIVersion string
		Spec             struct {
			Tags []struct {
				Name string
				From struct{ Kind, Name string }
			}
		}
	}
	if err := json.Unmarshal(data, &is); err != nil {
		t.Fatal(err)
	}
	if is.Kind != "ImageStream" || is.APIVersion != "image.openshift.io/v1" || len(is.Spec.Tags) != len(ReleaseImages) {
		t.Fatalf("%s", data)
	}
	for _, tag := range is.Spec.Tags {
		if tag.From.Kind != "DockerImage" || tag.From.Name != ReleaseSource+"@"+testDigestA {
			t.Errorf("tag %s: from %+v", tag.Name, tag.From)
		}
	}
	if got := l.AgnhostPullSpec(); got != agnhostRepository+"@"+testDigestB {
		t.Errorf("agnhost: %s", got)
	}
}
