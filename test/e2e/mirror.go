package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/render-static/render-static/internal/registries"
	"go.podman.io/image/v5/docker/reference"
)

// Issue 38's mirror-only case: a disconnected node. Nothing is imported into containerd: the harness builds the
// release's images into an OCI layout (oci-image -layout), names them by digest in a release file under a source
// registry that does not exist (ReleaseSource), and serves them from a registry of its own (oci-registry:
// go-containerregistry's pkg/registry) on a machine of the node's network (the mirror, a network namespace on the
// node's switch like the outside machine, outside.go) under the mirror host name the install-config's
// imageDigestSources give. containerd, which does not read /etc/containers/registries.conf, gets the registry hosts
// the rendered registries.conf resolves to (internal/registries, CRI-O's own library), as hosts.toml files
// (ContainerdHosts). After the first boot the registry's log must show every image, pause included, pulled by
// digest from the mirror (CheckMirrorPulls); the mirror is then stopped, and the reboot comes back from the images
// the node has.

const (
	// ReleaseSource is the repository the mirror case's release file names every image in, by digest: a registry
	// that does not exist (.invalid, RFC 2606). testdata/upstream/install-config-dualstack.yaml's imageDigestSources
	// maps it to the mirror.
	ReleaseSource = "registry.invalid/e2e/release"
	// agnhostRepository is the test workload's repository (AgnhostImage's); the mirror case names the image by digest
	// there, and the install-config maps it to the mirror too.
	agnhostRepository = "registry.k8s.io/e2e-test-images/agnhost"
	// agnhostKey names the workload image in the mirror's layout (not a release image: the render never sees it).
	agnhostKey = "agnhost"

	// mirrorReleaseName is the release ImageStream's name: the render takes it as the release's version.
	mirrorReleaseName = "1.34.3-e2e-mirror"

	mirrorShift = 5 // the mirror machine's address: the node's + 5 (the outside machine has + 3, a worker + 1)
	mirrorLink  = "aio-mirror"
	// mirrorScheme: the harness's registry speaks plain HTTP (no certificate for the mirror's name exists here).
	mirrorScheme = "http"
)

// ReleaseImages are the mirror case's release: the upstream flavor's --images keys (the tags of the release
// ImageStream, as the render takes them: s45-design, issue 38) and the component each image is built from (its
// content, componentContent). All are in one repository by digest, so the content cannot come from the name
// (ImageComponent): it comes from this mapping.
var ReleaseImages = []struct{ Key, Component string }{
	{"kube-apiserver", "kube-apiserver"},
	{"kube-controller-manager", "kube-controller-manager"},
	{"kube-scheduler", "kube-scheduler"},
	{"etcd-upstream", "etcd"},
	{"pod", "pause"},
	{"kube-proxy", "kube-proxy"},
	{"coredns", "coredns"},
}

// MirrorLayout is the mirror's content: an OCI layout (oci-image -layout) and each image's manifest digest by its
// key (ReleaseImages' keys and agnhostKey).
type MirrorLayout struct {
	Dir     string            `json:"dir"`
	Digests map[string]string `json:"digests"`
}

// BuildMirrorLayout writes (or finds cached next to the binaries, keyed by its content) the layout of the release
// images and the workload's.
func BuildMirrorLayout(ctx context.Context, binDir string, logf func(string, ...any)) (*MirrorLayout, error) {
	have := func(b string) bool {
		st, err := os.Stat(filepath.Join(binDir, b))
		return err == nil && st.Mode().IsRegular()
	}
	keys := []struct{ Key, Component string }{{agnhostKey, "agnhost"}}
	keys = append(keys, ReleaseImages...)
	var args []string
	h := sha256.New()
	for _, k := range keys {
		files, err := componentContent(k.Key, k.Component, have)
		if err != nil {
			return nil, err
		}
		var fs []string
		for _, f := range files {
			src := f.Binary
			if !filepath.IsAbs(src) {
				src = filepath.Join(binDir, src)
			}
			fs = append(fs, src+":"+f.Path)
		}
		spec := k.Key + "=" + strings.Join(fs, ",")
		args = append(args, "-i", spec)
		fmt.Fprintln(h, spec)
	}
	dir := filepath.Join(filepath.Dir(binDir), "layout-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
		t0 := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(cctx, filepath.Join(binDir, "oci-image"), append([]string{"-layout", dir}, args...)...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("oci-image -layout: %w\n%s", err, out)
		}
		logf("mirror images built in %.1fs into %s:\n%s", time.Since(t0).Seconds(), dir, strings.TrimSpace(string(out)))
	}
	digests, err := layoutDigests(dir)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if digests[k.Key] == "" {
			return nil, fmt.Errorf("layout %s: no image %q", dir, k.Key)
		}
	}
	return &MirrorLayout{Dir: dir, Digests: digests}, nil
}

// layoutDigests reads an OCI layout's index.json: image name (annotation org.opencontainers.image.ref.name) →
// manifest digest.
func layoutDigests(dir string) (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, err
	}
	var idx struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%s/index.json: %w", dir, err)
	}
	out := map[string]string{}
	for _, m := range idx.Manifests {
		if n := m.Annotations["org.opencontainers.image.ref.name"]; n != "" {
			out[n] = m.Digest
		}
	}
	return out, nil
}

// ReleasePullSpecs are the release's images by key: ReleaseSource@digest.
func (l *MirrorLayout) ReleasePullSpecs() map[string]string {
	out := map[string]string{}
	for _, r := range ReleaseImages {
		out[r.Key] = ReleaseSource + "@" + l.Digests[r.Key]
	}
	return out
}

// AgnhostPullSpec is the workload's image by digest in its upstream repository.
func (l *MirrorLayout) AgnhostPullSpec() string {
	return agnhostRepository + "@" + l.Digests[agnhostKey]
}

// ReleaseImageStream is the release file the render is given (--release-info): the payload's image-references
// form, the file /release-manifests/image-references the cluster-version operator reads as an imagev1.ImageStream
// (openshift/cluster-version-operator pkg/cvo: imageReferencesFile; github.com/openshift/api image/v1 types.go:
// spec.tags[] TagReference{name, from ObjectReference}): kind ImageStream, apiVersion image.openshift.io/v1,
// metadata.name the release's version, each tag's name an --images key and from (kind DockerImage) its pull spec.
func ReleaseImageStream(name string, pullSpecs map[string]string) ([]byte, error) {
	type from struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	}
	type tag struct {
		Name string `json:"name"`
		From from   `json:"from"`
	}
	var tags []tag
	for _, k := range sortedKeys(pullSpecs) {
		tags = append(tags, tag{Name: k, From: from{Kind: "DockerImage", Name: pullSpecs[k]}})
	}
	is := map[string]any{
		"kind":       "ImageStream",
		"apiVersion": "image.openshift.io/v1",
		"metadata":   map[string]any{"name": name, "creationTimestamp": nil},
		"spec":       map[string]any{"lookupPolicy": map[string]any{"local": false}, "tags": tags},
		"status":     map[string]any{"dockerImageRepository": ""},
	}
	return json.MarshalIndent(is, "", "  ")
}

// NodePullImages are the images the node pulls, from the rendered files under root: the CRI-O drop-in's pause
// image, the static pods' containers, the first-boot manifests' workloads; plus extra (the test's own workload).
func NodePullImages(root string, extra ...string) ([]string, error) {
	pause, err := crioPauseImage(root)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{pause: true}
	pods, err := StaticPods(root)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			names[c.Image] = true
		}
	}
	workloads, err := WorkloadImages(root)
	if err != nil {
		return nil, err
	}
	for _, img := range append(workloads, extra...) {
		names[img] = true
	}
	return sortedKeys(names), nil
}

// RegistriesConf reads the rendered /etc/containers/registries.conf under root; nil when the render wrote none
// (no mirrors: each image comes from its own registry).
func RegistriesConf(root string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(root, "etc", "containers", "registries.conf"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// splitRef is a reference's registry host and repository path ("registry.k8s.io", "pause").
func splitRef(ref string) (host, path string, err error) {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", "", err
	}
	return reference.Domain(n), reference.Path(n), nil
}

// hostEntry is one [host."URL"] of a hosts.toml.
type hostEntry struct {
	URL          string
	OverridePath bool
}

// ContainerdHosts turns where each image is pulled from (registries.Resolve on the rendered registries.conf, as
// CRI-O would) into containerd's registry host configuration (the CRI plugin's registry.config_path, hosts.toml as
// containerd 1.6 reads it: docs/hosts.md of Debian's containerd package): one hosts.toml per source registry host,
// the directory name → its contents. Each mirror source of an image is a [host."<scheme>://<mirror host>[/v2/
// <prefix>]"]: containerd requests <host URL>/<repository>/manifests/<digest>, the repository being the source's
// path, so a mirror reference must be <mirror host>/<prefix>/<source path> (with override_path when a prefix is
// there, whose URL then holds the /v2 API root); any other is an error naming the image. Capabilities: "pull" for
// a mirror that images by digest go to, "resolve" too when images by tag go there as well (containerd resolves a
// tag only on a host with "resolve": pull-from-mirror = "digest-only" is a mirror without it). One list of mirrors
// per registry host: images of one host sent to different mirrors, or by tag to mirrors their digests do not go
// to, cannot be said in hosts.toml and are an error. The source itself stays containerd's last host (server): a
// blocked source cannot be said either (it is not reached here: the node's network has no way out).
func ContainerdHosts(pulls []registries.Pull, scheme string) (map[string]string, error) {
	type hostList struct {
		digest, tag []hostEntry
		seenDigest  bool
		seenTag     bool
		by          map[bool]string // an image that set the list, for errors
	}
	lists := map[string]*hostList{}
	var order []string
	var errs []string
	for _, p := range pulls {
		if len(p.Sources) == 0 {
			continue
		}
		src := p.Sources[len(p.Sources)-1]
		shost, spath, err := splitRef(src.Ref)
		if err != nil {
			return nil, fmt.Errorf("image %s: source %s: %w", p.Image, src.Ref, err)
		}
		var entries []hostEntry
		for _, s := range p.Sources[:len(p.Sources)-1] {
			if !s.Mirror || s.Blocked {
				continue
			}
			mhost, mpath, err := splitRef(s.Ref)
			if err != nil {
				return nil, fmt.Errorf("image %s: mirror %s: %w", p.Image, s.Ref, err)
			}
			e := hostEntry{URL: scheme + "://" + mhost}
			switch {
			case mpath == spath:
			case strings.HasSuffix(mpath, "/"+spath):
				e = hostEntry{URL: scheme + "://" + mhost + "/v2/" + strings.TrimSuffix(mpath, "/"+spath), OverridePath: true}
			default:
				errs = append(errs, fmt.Sprintf("image %s: mirror reference %s does not end in the source's repository path %q: containerd's hosts.toml appends the image's own repository to a mirror host's path, so it cannot pull from there", p.Image, s.Ref, spath))
				continue
			}
			entries = append(entries, e)
		}
		l := lists[shost]
		if l == nil {
			l = &hostList{by: map[bool]string{}}
			lists[shost] = l
			order = append(order, shost)
		}
		list, seen := &l.tag, &l.seenTag
		if p.Digest {
			list, seen = &l.digest, &l.seenDigest
		}
		if !*seen {
			*list, *seen, l.by[p.Digest] = entries, true, p.Image
		} else if !sameEntries(*list, entries) {
			errs = append(errs, fmt.Sprintf("images of %s go to different mirrors (%s: %v; %s: %v): containerd's hosts.toml has one list of mirrors per registry host", shost, l.by[p.Digest], urls(*list), p.Image, urls(entries)))
		}
	}
	out := map[string]string{}
	for _, shost := range order {
		l := lists[shost]
		if len(l.digest) == 0 && len(l.tag) == 0 {
			continue
		}
		caps := `["pull"]`
		switch {
		case len(l.tag) == 0:
		case !l.seenDigest || sameEntries(l.digest, l.tag):
			l.digest, caps = l.tag, `["pull", "resolve"]`
		default:
			errs = append(errs, fmt.Sprintf("images of %s by tag go to mirrors %v, by digest to %v: containerd's hosts.toml cannot say that", shost, urls(l.tag), urls(l.digest)))
			continue
		}
		server := "https://" + shost
		if shost == "docker.io" {
			server = "https://registry-1.docker.io"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "# %s: its mirrors, from the rendered /etc/containers/registries.conf (test/e2e/mirror.go)\nserver = %q\n", shost, server)
		for _, e := range l.digest {
			fmt.Fprintf(&b, "\n[host.%q]\n  capabilities = %s\n", e.URL, caps)
			if e.OverridePath {
				b.WriteString("  override_path = true\n")
			}
		}
		out[shost] = b.String()
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, errors.New("the rendered registries.conf cannot be given to containerd:\n  " + strings.Join(errs, "\n  "))
	}
	return out, nil
}

func sameEntries(a, b []hostEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func urls(es []hostEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.URL)
	}
	return out
}

// WriteContainerdHosts writes the hosts.toml files of ContainerdHosts under dir (dir/<host>/hosts.toml) and
// returns what it wrote, for the log.
func WriteContainerdHosts(dir string, hosts map[string]string) (string, error) {
	var b strings.Builder
	for _, h := range sortedKeys(hosts) {
		p := filepath.Join(dir, h, "hosts.toml")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(hosts[h]), 0o644); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s:\n%s", p, hosts[h])
	}
	return b.String(), nil
}

// MirrorPlan is what the mirror serves and where, from the rendered registries.conf: every image the node pulls
// must be named by digest and go first to one mirror host (the mirror machine's name and port).
type MirrorPlan struct {
	Host  string   // the mirror's host name, as registries.conf names it
	Port  int      //
	Serve []string // repository@digest, each image's mirror reference on that host
	// Expect is each image the node pulls → the repository@digest it must be pulled as from the mirror.
	Expect map[string]string
}

// PlanMirror resolves the images through registries.conf (CRI-O's order) and checks each is by digest and goes
// first to a mirror, all to one host:port.
func PlanMirror(conf []byte, images []string) (*MirrorPlan, error) {
	if conf == nil {
		return nil, errors.New("the render wrote no /etc/containers/registries.conf: the install-config's imageDigestSources name no mirror")
	}
	pulls, err := registries.Resolve(conf, images)
	if err != nil {
		return nil, err
	}
	plan := &MirrorPlan{Expect: map[string]string{}}
	var errs []string
	served := map[string]bool{}
	for _, p := range pulls {
		r := p.Reachable()
		if !p.Digest || len(r) == 0 || !r[0].Mirror {
			errs = append(errs, fmt.Sprintf("%s: by digest %v, first source %v: not pulled by digest through a mirror", p.Image, p.Digest, r))
			continue
		}
		host, path, err := splitRef(r[0].Ref)
		if err != nil {
			return nil, err
		}
		name, portStr, err := net.SplitHostPort(host)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: mirror %s names no port (the harness's registry needs one)", p.Image, host))
			continue
		}
		port, _ := strconv.Atoi(portStr)
		if plan.Host == "" {
			plan.Host, plan.Port = name, port
		} else if plan.Host != name || plan.Port != port {
			errs = append(errs, fmt.Sprintf("%s: mirror %s, another than %s:%d (the harness has one mirror machine)", p.Image, host, plan.Host, plan.Port))
			continue
		}
		_, digest, _ := strings.Cut(r[0].Ref, "@")
		want := path + "@" + digest
		plan.Expect[p.Image] = want
		if !served[want] {
			served[want] = true
			plan.Serve = append(plan.Serve, want)
		}
	}
	if len(errs) > 0 {
		return nil, errors.New("the mirror case's images:\n  " + strings.Join(errs, "\n  "))
	}
	sort.Strings(plan.Serve)
	return plan, nil
}

// MirrorRequest is one line of oci-registry's request log (tools/oci/cmd/oci-registry: Entry).
type MirrorRequest struct {
	Time   time.Time `json:"time"`
	Remote string    `json:"remote"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Status int       `json:"status"`
	Bytes  int64     `json:"bytes"`
	Agent  string    `json:"agent"`
}

// ReadMirrorLog reads the registry's request log.
func ReadMirrorLog(path string) ([]MirrorRequest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []MirrorRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r MirrorRequest
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// CheckMirrorPulls checks the registry's log against the plan: every expected repository@digest's manifest was
// fetched (GET, 200) by digest; no manifest was asked for by tag, nor any repository the plan does not name; no
// request failed. It returns, for the log, each image's manifest GET.
func CheckMirrorPulls(log []MirrorRequest, expect map[string]string) (string, error) {
	repos := map[string]bool{}
	got := map[string]MirrorRequest{}
	for _, want := range expect {
		repo, _, _ := strings.Cut(want, "@")
		repos[repo] = true
	}
	var errs []string
	for _, r := range log {
		rest, ok := strings.CutPrefix(r.Path, "/v2/")
		if !ok {
			errs = append(errs, fmt.Sprintf("%s %s: not the distribution API", r.Method, r.Path))
			continue
		}
		if rest == "" {
			continue // the API version check
		}
		if r.Status >= 400 {
			errs = append(errs, fmt.Sprintf("%s %s: %d", r.Method, r.Path, r.Status))
		}
		var repo, kind, ref string
		for _, k := range []string{"/manifests/", "/blobs/"} {
			if i := strings.LastIndex(rest, k); i >= 0 {
				repo, kind, ref = rest[:i], strings.Trim(k, "/"), rest[i+len(k):]
				break
			}
		}
		if kind == "" {
			errs = append(errs, fmt.Sprintf("%s %s: neither a manifest nor a blob", r.Method, r.Path))
			continue
		}
		if !repos[repo] {
			errs = append(errs, fmt.Sprintf("%s %s: a repository the mirror does not serve (%s)", r.Method, r.Path, repo))
		}
		if !strings.HasPrefix(ref, "sha256:") {
			errs = append(errs, fmt.Sprintf("%s %s: a %s by tag %q, not by digest", r.Method, r.Path, kind, ref))
			continue
		}
		if kind == "manifests" && r.Method == "GET" && r.Status == 200 {
			if _, ok := got[repo+"@"+ref]; !ok {
				got[repo+"@"+ref] = r
			}
		}
	}
	var b strings.Builder
	for _, img := range sortedKeys(expect) {
		r, ok := got[expect[img]]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: its manifest %s was never fetched (GET) from the mirror", img, expect[img]))
			continue
		}
		fmt.Fprintf(&b, "\n  %s: GET /v2/%s at %s by %s (%s)", img, strings.Replace(expect[img], "@", "/manifests/", 1), r.Time.Format("15:04:05.000"), r.Remote, r.Agent)
	}
	if len(errs) > 0 {
		return "", errors.New(strings.Join(errs, "\n  "))
	}
	return b.String(), nil
}

// Mirror is the mirror machine: a network namespace on the node's switch (its holder, by PID) and the registry
// in it (by PID).
type Mirror struct {
	Addrs  []NodeAddress
	Log    string // the registry's request log
	holder *exec.Cmd
	reg    *exec.Cmd
	out    *os.File
}

// StartMirror makes the mirror machine from the node's network namespace (LinkWorker refuses any other) with
// addrs and starts oci-registry there on port, serving plan's images from the layout; it waits (bounded) until
// the registry answers /v2/ from the node's network namespace. logDir gets mirror.log (requests) and
// mirror.out (its output).
func StartMirror(ctx context.Context, addrs []NodeAddress, binDir, layout string, plan *MirrorPlan, logDir string) (*Mirror, error) {
	holder := exec.Command("sleep", "infinity")
	holder.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Setpgid: true}
	if err := holder.Start(); err != nil {
		return nil, fmt.Errorf("the mirror's namespace: %w", err)
	}
	m := &Mirror{Addrs: addrs, holder: holder, Log: filepath.Join(logDir, "mirror.log")}
	netns := fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid)
	if err := LinkWorker(ctx, holder.Process.Pid, mirrorLink); err != nil {
		m.Stop()
		return nil, err
	}
	if err := addressPeer(ctx, netns, addrs); err != nil {
		m.Stop()
		return nil, fmt.Errorf("mirror: %w", err)
	}
	out, err := openLog(filepath.Join(logDir, "mirror.out"))
	if err != nil {
		m.Stop()
		return nil, err
	}
	m.out = out
	args := []string{"--net=" + netns, filepath.Join(binDir, "oci-registry"), "-listen", ":" + strconv.Itoa(plan.Port), "-layout", layout, "-log", m.Log}
	for _, s := range plan.Serve {
		args = append(args, "-serve", s)
	}
	// nsenter enters the namespace and execs the registry: the PID is the registry's.
	m.reg = nodeCommand(context.Background(), nil, append([]string{"nsenter"}, args...)...)
	m.reg.Stdout, m.reg.Stderr = out, out
	if err := m.reg.Start(); err != nil {
		m.Stop()
		return nil, fmt.Errorf("oci-registry: %w", err)
	}
	addr := net.JoinHostPort(addrs[0].IP.String(), strconv.Itoa(plan.Port))
	err = poll(ctx, time.Minute, 200*time.Millisecond, func(context.Context) (bool, error) {
		if m.reg.ProcessState != nil {
			return false, fmt.Errorf("oci-registry exited: %s", tail(filepath.Join(logDir, "mirror.out"), 20))
		}
		_, err := HTTPGet("", addr, "/v2/", 2*time.Second)
		return err == nil, err
	})
	if err != nil {
		m.Stop()
		return nil, fmt.Errorf("the mirror at %s: %w\n%s", addr, err, tail(filepath.Join(logDir, "mirror.out"), 20))
	}
	return m, nil
}

// PID is the registry's process.
func (m *Mirror) PID() int { return m.reg.Process.Pid }

// StopRegistry stops the registry by its PID (SIGTERM; SIGKILL after 10 s) and says whether it exited on its own.
func (m *Mirror) StopRegistry() (clean bool) {
	if m.reg == nil {
		return true
	}
	forced := stopProcess(m.reg, 10*time.Second)
	clean = !forced && m.reg.ProcessState != nil && m.reg.ProcessState.Success()
	m.reg = nil
	return clean
}

// Stop ends the registry and the namespace's holder (by PID): the namespace and its link go with it.
func (m *Mirror) Stop() {
	m.StopRegistry()
	if m.holder != nil && m.holder.Process != nil {
		m.holder.Process.Kill()
		m.holder.Wait()
		m.holder = nil
	}
	if m.out != nil {
		m.out.Close()
		m.out = nil
	}
}

// addressPeer puts addrs on eth0 in the network namespace at netns (a machine LinkWorker linked), with lo and eth0
// up and a default route per family.
func addressPeer(ctx context.Context, netns string, addrs []NodeAddress) error {
	cmds := [][]string{{"link", "set", "lo", "up"}, {"link", "set", "eth0", "up"}}
	fam := map[bool]bool{}
	for _, a := range addrs {
		if a.IP.Is4() {
			cmds = append(cmds, []string{"-4", "addr", "add", a.String(), "dev", "eth0"})
		} else {
			cmds = append(cmds, []string{"-6", "addr", "add", a.String(), "dev", "eth0", "nodad"})
		}
		fam[a.IP.Is4()] = true
	}
	for _, is4 := range []bool{true, false} {
		if !fam[is4] {
			continue
		}
		f := "-6"
		if is4 {
			f = "-4"
		}
		cmds = append(cmds, []string{f, "route", "add", "default", "dev", "eth0"})
	}
	for _, c := range cmds {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, err := exec.CommandContext(cctx, "nsenter", append([]string{"--net=" + netns, "ip"}, c...)...).CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(c, " "), err, out)
		}
	}
	return nil
}

// MirrorHostsLines are the lines the node's /etc/hosts gets for the mirror's name (Overrides): each address.
func MirrorHostsLines(name string, addrs []NodeAddress) string {
	var b strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, name)
	}
	return b.String()
}

// sortedKeys are a map's keys, sorted.
func sortedKeys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// mirrorSpec is the mirror case's part of the inner spec.
type mirrorSpec struct {
	Layout  string `json:"layout"`  // the OCI layout the registry serves (MirrorLayout.Dir)
	Agnhost string `json:"agnhost"` // the workload's image by digest (MirrorLayout.AgnhostPullSpec)
}
