package fleet

import (
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/internal/testkit/treetest"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
)

func repo(p string) string { return filepath.Join("..", "..", p) }

func names(sites []Site) []string {
	var out []string
	for _, s := range sites {
		out = append(out, s.Name)
	}
	return out
}

// TestShardsCoverEverySiteOnce: for every n, the n shards of a list hold every site exactly once, their sizes
// differ by at most one, and the partition does not depend on the order the list came in.
func TestShardsCoverEverySiteOnce(t *testing.T) {
	var sites []Site
	for i := 0; i < 103; i++ {
		sites = append(sites, Site{Name: fmt.Sprintf("site-%03d", (i*37)%103)})
	}
	shuffled := append([]Site(nil), sites...)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for n := 1; n <= 12; n++ {
		seen := map[string]int{}
		minSize, maxSize := len(sites), 0
		for i := 0; i < n; i++ {
			sh, err := ParseShard(fmt.Sprintf("%d/%d", i, n))
			if err != nil {
				t.Fatal(err)
			}
			part := sh.Of(sites)
			if !reflect.DeepEqual(names(part), names(sh.Of(shuffled))) {
				t.Fatalf("shard %s depends on the list's order", sh)
			}
			for _, s := range part {
				seen[s.Name]++
			}
			minSize, maxSize = min(minSize, len(part)), max(maxSize, len(part))
		}
		if len(seen) != len(sites) {
			t.Errorf("n=%d: %d of %d sites rendered", n, len(seen), len(sites))
		}
		for name, c := range seen {
			if c != 1 {
				t.Errorf("n=%d: %s in %d shards", n, name, c)
			}
		}
		if maxSize-minSize > 1 {
			t.Errorf("n=%d: shard sizes from %d to %d", n, minSize, maxSize)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"1", "4/4", "-1/4", "0/0", "a/b", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if s, err := ParseShard("3/4"); err != nil || s != (Shard{3, 4}) {
		t.Errorf("3/4: %v %v", s, err)
	}
	if s, err := ParseShard(""); err != nil || s != All {
		t.Errorf("empty: %v %v", s, err)
	}
}

// TestDirAndListAgree: the example's directory of site folders and its YAML list describe the same sites.
func TestDirAndListAgree(t *testing.T) {
	dir, err := Load(repo("examples/fleet/sites"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := Load(repo("examples/fleet/sites.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dir) != 2 || !reflect.DeepEqual(dir, list) {
		t.Errorf("directory:\n%+v\nlist:\n%+v", dir, list)
	}
	for _, s := range dir {
		if _, err := os.Stat(s.InstallConfig); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
}

func TestBadListsAreRefused(t *testing.T) {
	d := t.TempDir()
	cases := map[string]string{
		"dup.yaml":     "- {name: a, installConfig: x, nodeIP: 10.0.0.1}\n- {name: a, installConfig: y, nodeIP: 10.0.0.2}\n",
		"badname.yaml": "- {name: A_b, installConfig: x, nodeIP: 10.0.0.1}\n",
		"unknown.yaml": "- {name: a, installConfig: x, nodeIP: 10.0.0.1, nodeAddress: 10.0.0.1}\n",
		"notlist.yaml": "name: a\n",
		"empty.yaml":   "\n",
	}
	for f, body := range cases {
		p := filepath.Join(d, f)
		if err := os.WriteFile(p, []byte(body), 0644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil {
			t.Errorf("%s accepted", f)
		}
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// files lists a directory's files with their modes, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for rel, f := range treetest.Read(t, dir) {
		out = append(out, fmt.Sprintf("%s %v", rel, f.Mode.Perm()))
	}
	sort.Strings(out)
	return out
}

// TestFleetRendersEachSiteLikeASingleRender runs the example's two sites plus one broken site, two at a time:
// the broken site fails with its field errors and no folder, the others render, and each site's folder holds
// the same files (paths and modes) as a single render of the same site.
func TestFleetRendersEachSiteLikeASingleRender(t *testing.T) {
	in := filepath.Join(t.TempDir(), "sites")
	copyTree(t, repo("examples/fleet/sites"), in)
	bad := filepath.Join(in, "broken")
	if err := os.MkdirAll(bad, 0755); err != nil {
		t.Fatal(err)
	}
	ic, err := os.ReadFile(repo("testdata/installconfig/bad/control-plane-replicas-3.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(bad, InstallConfigFile), ic, 0644)
	_ = os.WriteFile(filepath.Join(bad, SiteFile), []byte("nodeIP: 10.0.0.300\n"), 0644)

	sites, err := Load(in)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := EnsureOut(out); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	common := pipeline.Options{CertValidity: certs.DefaultLeafValidity}
	r := Run(ctx, sites, Options{Common: common, Out: out, Jobs: 2, Progress: NewProgress(&log, false)})

	if got := names(sites); !reflect.DeepEqual(got, []string{"broken", "edge-1", "edge-2"}) {
		t.Fatalf("sites %v", got)
	}
	if r.Failed() != 1 || r.Results[0].OK() {
		t.Fatalf("want only broken to fail: %+v", r.Results)
	}
	msg := strings.Join(ErrorLines(r.Results[0].Err), "\n")
	for _, want := range []string{"nodeIP: ", "controlPlane.replicas: "} {
		if !strings.Contains(msg, want) || !strings.Contains(log.String(), want) {
			t.Errorf("broken site's errors lack %q:\n%s\nlog:\n%s", want, msg, log.String())
		}
	}
	if _, err := os.Stat(filepath.Join(out, "broken")); !os.IsNotExist(err) {
		t.Errorf("failed site has an output folder (%v)", err)
	}
	var table strings.Builder
	r.WriteTable(&table)
	for _, want := range []string{"edge-1 ", "edge-2 ", "broken ", "3 sites, 1 failed"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	// The same site rendered alone.
	single := filepath.Join(t.TempDir(), "single")
	s := sites[1]
	if _, err := pipeline.Render(ctx, pipeline.Options{InstallConfig: s.InstallConfig, NodeIP: s.NodeIP, NodeName: s.NodeName,
		Dir: single, CertValidity: certs.DefaultLeafValidity}); err != nil {
		t.Fatal(err)
	}
	for _, x := range r.Results[1:] {
		// Files named after the node (etcd-peer-<node>, etcd-endpoints/<base64 IP>) carry the site's node.
		site := sites[map[string]int{"edge-1": 1, "edge-2": 2}[x.Site]]
		b64 := func(ip string) string { return strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(ip)), "=") }
		rename := strings.NewReplacer(s.NodeName, site.NodeName, b64(s.NodeIP), b64(site.NodeIP))
		var want []string
		for _, f := range files(t, single) {
			want = append(want, rename.Replace(f))
		}
		if x.Summary.IgnitionBytes == 0 || x.Summary.EarliestExpiry.IsZero() {
			t.Errorf("%s: empty summary %+v", x.Site, x.Summary)
		}
		got := files(t, x.Dir)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: files differ from a single render: only in the fleet's %v, only in the single render's %v",
				x.Site, minus(got, want), minus(want, got))
		}
		host, err := os.ReadFile(filepath.Join(x.Dir, "rootfs", "etc", "hostname"))
		if err != nil || strings.TrimSpace(string(host)) != x.Site+"-0" {
			t.Errorf("%s: hostname %q (%v)", x.Site, host, err)
		}
	}
}

func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

// TestProgress: plain output is one line per site with an ETA, failures with every problem; on a terminal the
// bar is redrawn in place and failures are printed above it.
func TestProgress(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	fail := Result{Site: "b", Err: fmt.Errorf("wrapped: %w", named(installErrs("nodeIP", "required", "metadata.name", "bad"), nil))}
	for _, terminal := range []bool{false, true} {
		var w strings.Builder
		p := &progress{w: &w, terminal: terminal, now: now}
		p.Start(4)
		clock = clock.Add(10 * time.Second)
		p.Done(Result{Site: "a", Elapsed: 10 * time.Second})
		p.Done(fail)
		p.Finish()
		out := w.String()
		for _, want := range []string{"b: FAILED", "    nodeIP: required", "    metadata.name: bad"} {
			if !strings.Contains(out, want) {
				t.Errorf("terminal=%v: lacks %q:\n%q", terminal, want, out)
			}
		}
		if terminal {
			if !strings.Contains(out, "\r[###############...............] 2/4 sites, 1 failed, eta 10s") {
				t.Errorf("no bar at 2/4 with eta 10s:\n%q", out)
			}
		} else if !strings.Contains(out, "[1/4] a: ok in 10.00s (eta 30s)\n") || strings.Contains(out, "\r") {
			t.Errorf("plain lines wrong:\n%q", out)
		}
	}
}

func installErrs(kv ...string) installconfig.ErrorList {
	var l installconfig.ErrorList
	for i := 0; i+1 < len(kv); i += 2 {
		l = append(l, installconfig.FieldError{Field: kv[i], Detail: kv[i+1]})
	}
	return l
}

// TestTableWords: one site, one job, one problem in words a person writes.
func TestTableWords(t *testing.T) {
	r := &Report{Results: []Result{{Site: "a", Err: installconfig.ErrorList{{Field: "nodeIP", Detail: "required"}}}}, Elapsed: time.Second, Jobs: 1}
	var b strings.Builder
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "1 site, 1 failed, 1s with 1 job (") || !strings.Contains(b.String(), "FAILED: nodeIP: required") {
		t.Errorf("table:\n%s", b.String())
	}
	r.Results = append(r.Results, Result{Site: "b", Err: installconfig.ErrorList{{Field: "nodeIP", Detail: "required"}, {Field: "infraID", Detail: "bad"}}})
	b.Reset()
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "FAILED (2 problems, listed above)") || !strings.Contains(b.String(), "2 sites, 2 failed") {
		t.Errorf("table:\n%s", b.String())
	}
}

// A site's installDevice and networkKeyfiles (relative to its folder, or to the list) are its render's: its
// live.ign installs to that disk, and its keyfile is on the node.
func TestSiteInstallInputs(t *testing.T) {
	in := filepath.Join(t.TempDir(), "sites")
	copyTree(t, repo("examples/fleet/sites/edge-1"), filepath.Join(in, "edge-1"))
	keyfile, err := os.ReadFile(testtools.Keyfile(t, filepath.Join(in, "edge-1"), "edge.nmconnection", "192.168.126.11/24"))
	if err != nil {
		t.Fatal(err)
	}
	site := "nodeName: edge-1-0\nnodeIP: 192.168.126.11\ninstallDevice: /dev/sda\nnetworkKeyfiles: [edge.nmconnection]\n"
	if err := os.WriteFile(filepath.Join(in, "edge-1", SiteFile), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(filepath.Dir(in), "sites.yaml")
	if err := os.WriteFile(list, []byte("- name: edge-1\n  installConfig: sites/edge-1/install-config.yaml\n  nodeName: edge-1-0\n  nodeIP: 192.168.126.11\n"+
		"  installDevice: /dev/sda\n  networkKeyfiles: [sites/edge-1/edge.nmconnection]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := Load(in)
	if err != nil {
		t.Fatal(err)
	}
	fromList, err := Load(list)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(in, "edge-1", "edge.nmconnection")}
	if !reflect.DeepEqual(dir, fromList) || dir[0].InstallDevice != "/dev/sda" || !reflect.DeepEqual(dir[0].NetworkKeyfiles, want) {
		t.Fatalf("directory:\n%+v\nlist:\n%+v\nwant keyfiles %v", dir, fromList, want)
	}
	testtools.Long(t, "renders a site")
	out := filepath.Join(t.TempDir(), "out")
	if _, err := EnsureOut(out); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := Run(ctx, dir, Options{Common: pipeline.Options{CertValidity: certs.DefaultLeafValidity}, Out: out, Jobs: 1})
	if r.Failed() != 0 {
		t.Fatalf("%v", r.Results[0].Err)
	}
	if s := r.Results[0].Summary; s.InstallDevice != "/dev/sda" || !reflect.DeepEqual(s.Keyfiles, []string{"edge.nmconnection"}) || s.LiveBytes == 0 {
		t.Errorf("summary: device %q, keyfiles %v, live.ign %d bytes", s.InstallDevice, s.Keyfiles, s.LiveBytes)
	}
	live, err := os.ReadFile(filepath.Join(out, "edge-1", "live.ign"))
	if err != nil || !strings.Contains(string(live), "dest-device:%20/dev/sda%0Acopy-network:%20true") {
		t.Errorf("live.ign does not install to /dev/sda with the network (%v)", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "edge-1", "rootfs/etc/NetworkManager/system-connections/edge.nmconnection")); err != nil || string(b) != string(keyfile) {
		t.Errorf("the site's keyfile is not on its node (%v)", err)
	}
}
