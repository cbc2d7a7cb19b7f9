package etcd_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// The etcd scripts (manifests/etcd/scripts, laid down in etcd-certs/configmaps/etcd-scripts) run for real here: on
// a node root holding the render's etcd files, chrooted into it in a private mount namespace, so that their
// absolute paths (/etc/kubernetes, /var/lib/etcd) are the test's. Only etcdctl, etcdutl, crictl and podman are
// stand-ins (stubFake); every other command is the host's, from an explicit list (scriptTools), so a script that
// starts to need another one fails here rather than on a node.

const scriptsDir = "etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-scripts"

// scriptTools are the host commands the scripts and the stand-ins may use (the PATH has nothing else).
var scriptTools = []string{"bash", "cat", "chmod", "cp", "date", "find", "gzip", "id", "ls", "mkdir", "mv", "realpath", "rm", "sleep", "sort", "tail", "tar"}

// stubFake stands in for etcdctl, etcdutl, crictl and podman (by the name it is called as). It records every call in
// /stub/calls.log and plays the kubelet and etcd: etcd runs exactly while /etc/kubernetes/manifests/etcd-pod.yaml
// exists, and every health check keeps a copy of that manifest (/stub/health-N.yaml), so the test sees which pod
// answered. etcdctl refuses to run unless the client certificate etcd.env names is there (as the script hands it
// over); podman maps its -v mounts back to host paths and refuses a path argument no mount covers.
const stubFake = `#!/tools/bin/bash
set -u
shopt -s nullglob
log() { printf '%s\n' "$*" >>/stub/calls.log; }
manifest=/etc/kubernetes/manifests/etcd-pod.yaml
client() {
  local v
  for v in ETCDCTL_CACERT ETCDCTL_CERT ETCDCTL_KEY ETCDCTL_ENDPOINTS; do
    [ -n "${!v:-}" ] || { echo "stub: $v is not set" >&2; exit 3; }
  done
  for v in ETCDCTL_CACERT ETCDCTL_CERT ETCDCTL_KEY; do
    [ -s "${!v}" ] || { echo "stub: $v=${!v}: no such file" >&2; exit 3; }
  done
}
etcd() {
  local tool=$1
  shift
  log "$tool $*"
  case "$tool ${1:-} ${2:-}" in
  "etcdctl snapshot save")
    client
    [ -f "$manifest" ] || { echo "stub: etcd is not running" >&2; exit 1; }
    echo "snapshot of $ETCDCTL_ENDPOINTS" >"$3" ;;
  "etcdctl endpoint health")
    client
    [ -f "$manifest" ] || exit 1
    local seen=(/stub/health-*.yaml)
    cp "$manifest" "/stub/health-$((${#seen[@]} + 1)).yaml" ;;
  "etcdutl snapshot status")
    [ -s "$3" ] || exit 1
    echo "| HASH | REVISION | TOTAL KEYS |" ;;
  *)
    echo "stub: unexpected $tool $*" >&2
    exit 5 ;;
  esac
}
case "${0##*/}" in
etcdctl | etcdutl) etcd "${0##*/}" "$@" ;;
crictl)
  log "crictl $*"
  if [ -f "$manifest" ]; then echo 0123456789ab; fi ;;
id)
  echo 1000 ;;
podman)
  log "podman $*"
  [ "${1:-}" = run ] || exit 5
  shift
  tool="" mounts=()
  while [ $# -gt 0 ]; do
    case "$1" in
    --rm | --privileged) shift ;;
    --network | --authfile) shift 2 ;;
    --entrypoint) tool=$2; shift 2 ;;
    -v) mounts+=("$2"); shift 2 ;;
    -e) [ -n "${!2:-}" ] || { echo "stub: podman -e $2: not set" >&2; exit 3; }; shift 2 ;;
    -*) echo "stub: podman: unexpected option $1" >&2; exit 5 ;;
    *) break ;;
    esac
  done
  log "image $1"
  shift
  for a in "$@"; do
    case "$a" in /*)
      covered=""
      for m in "${mounts[@]}"; do in=${m#*:}; in=${in%%:*}; case "$a" in "$in"/*) covered=1 ;; esac; done
      [ -n "$covered" ] || { echo "stub: podman: $a is not mounted into the container" >&2; exit 6; } ;;
    esac
  done
  for m in "${mounts[@]}"; do
    host=${m%%:*} in=${m#*:}
    in=${in%%:*}
    for v in ETCDCTL_CACERT ETCDCTL_CERT ETCDCTL_KEY; do
      case "${!v}" in "$in"/*) export "$v=$host${!v#"$in"}" ;; esac
    done
  done
  etcd "$tool" "$@" ;;
*)
  exit 5 ;;
esac
`

// scriptNode is a node root for the etcd scripts.
type scriptNode struct {
	r    *rendered
	root string
	// stubs are the stand-ins on the PATH (stubFake under these names).
	stubs []string
}

// newScriptNode lays down the render's etcd files under a fresh root, with what the other components would have
// put there: their manifests and a few revisions (kube-apiserver-pod-2 and -10: the newest is 10, not 2), etcd's
// data, the kubelet's pull secret.
func newScriptNode(t *testing.T) *scriptNode {
	t.Helper()
	for _, tool := range []string{"unshare", "chroot", "mount"} {
		testtools.Tool(t, tool)
	}
	r := render(t, ipv4)
	n := &scriptNode{r: r, root: filepath.Join(t.TempDir(), "root"), stubs: []string{"etcdctl", "etcdutl", "crictl", "podman"}}
	for p, f := range r.files {
		n.write(t, p, f.Mode.Perm(), f.Contents)
	}
	for _, m := range []string{"kube-apiserver-pod.yaml", "kube-controller-manager-pod.yaml", "kube-scheduler-pod.yaml"} {
		n.write(t, "etc/kubernetes/manifests/"+m, 0600, []byte("# stand-in "+m+"\n"))
	}
	for _, d := range []string{"kube-apiserver-pod-2", "kube-apiserver-pod-10", "kube-apiserver-pod-latest", "kube-scheduler-pod-3"} {
		n.write(t, "etc/kubernetes/static-pod-resources/"+d+"/configmaps/config/config.yaml", 0644, []byte("# "+d+"\n"))
	}
	n.write(t, "var/lib/etcd/member/snap/db", 0600, []byte("etcd data before\n"))
	n.write(t, "var/lib/kubelet/config.json", 0600, []byte(`{"auths":{}}`+"\n"))
	n.write(t, "stub/fake", 0755, []byte(stubFake))
	for _, d := range []string{"dev", "usr", "tmp", "tools/bin", "stub/bin"} {
		if err := os.MkdirAll(n.path(d), 0755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range scriptTools {
		p := testtools.Tool(t, tool)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if !strings.HasPrefix(p, "/usr/") {
			t.Fatalf("%s is %s, not under /usr (the node root mounts only /usr from the host)", tool, p)
		}
		if err := os.Symlink(p, n.path("tools/bin/"+tool)); err != nil {
			t.Fatal(err)
		}
	}
	// /bin, /lib, ... as on the host: links into /usr (merged /usr); the dynamic loader is found through them.
	for _, d := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		if target, err := os.Readlink("/" + d); err == nil {
			if err := os.Symlink(target, n.path(d)); err != nil {
				t.Fatal(err)
			}
		} else if fi, err := os.Stat("/" + d); err == nil && fi.IsDir() {
			t.Fatalf("/%s is a directory, not a link into /usr: this test's node root cannot use the host's tools", d)
		}
	}
	return n
}

func (n *scriptNode) path(p string) string { return filepath.Join(n.root, p) }

func (n *scriptNode) write(t *testing.T, p string, mode os.FileMode, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(n.path(p)), 0755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.path(p), data, mode); err != nil {
		t.Fatal(err)
	}
}

func (n *scriptNode) read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(n.path(p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (n *scriptNode) exists(p string) bool {
	_, err := os.Lstat(n.path(p))
	return err == nil
}

// glob returns the node paths (relative) matching pattern.
func (n *scriptNode) glob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(n.path(pattern))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = strings.TrimPrefix(m[i], n.root+"/")
	}
	return m
}

// run runs a script of the render's etcd-scripts as root in the node root (bounded: a minute) and returns its
// output and exit code. The mount namespace is private, so nothing is mounted on the host.
func (n *scriptNode) run(t *testing.T, script string, args ...string) (string, int) {
	t.Helper()
	if err := os.RemoveAll(n.path("stub/bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(n.path("stub/bin"), 0755); err != nil {
		t.Fatal(err)
	}
	for _, s := range n.stubs {
		if err := os.Symlink("/stub/fake", n.path("stub/bin/"+s)); err != nil {
			t.Fatal(err)
		}
	}
	mount, chroot := testtools.Tool(t, "mount"), testtools.Tool(t, "chroot")
	setup := `set -eu
mount --bind /usr "$ROOT/usr"
mount -o remount,bind,ro "$ROOT/usr"
: >"$ROOT/dev/null"
mount --bind /dev/null "$ROOT/dev/null"
exec "$CHROOT" "$ROOT" /tools/bin/bash "$@"`
	setup = strings.ReplaceAll(setup, "mount ", mount+" ")
	unshare := []string{"--mount", "--propagation", "private"}
	if os.Geteuid() != 0 {
		unshare = append([]string{"--map-root-user"}, unshare...)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, testtools.Tool(t, "unshare"), append(unshare, testtools.Tool(t, "true"))...).CombinedOutput(); err != nil {
		testtools.Missing(t, "the etcd scripts' tests need a private mount namespace (root, or user namespaces): unshare: %v %s", err, out)
	}
	argv := append(append(unshare, testtools.Tool(t, "bash"), "-c", setup, "setup", "/"+scriptsDir+"/"+script), args...)
	cmd := exec.CommandContext(ctx, testtools.Tool(t, "unshare"), argv...)
	cmd.Env = []string{"ROOT=" + n.root, "CHROOT=" + chroot, "PATH=/stub/bin:/tools/bin", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case ctx.Err() != nil:
		t.Fatalf("%s %v did not end within a minute:\n%s", script, args, out)
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return "", 0
}

// calls returns the stand-ins' calls so far and forgets them.
func (n *scriptNode) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(n.path("stub/calls.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	os.Remove(n.path("stub/calls.log"))
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// healthChecks returns the etcd manifests that answered the health checks so far, in order, and forgets them.
func (n *scriptNode) healthChecks(t *testing.T) []string {
	t.Helper()
	var out []string
	for i := 1; n.exists("stub/health-" + strconv.Itoa(i) + ".yaml"); i++ {
		p := "stub/health-" + strconv.Itoa(i) + ".yaml"
		out = append(out, n.read(t, p))
		os.Remove(n.path(p))
	}
	return out
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// tarDirs lists the top-level directories of a .tar.gz and returns one file's contents.
func tarDirs(t *testing.T, p, file string) ([]string, string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(z)
	var dirs []string
	var contents string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		top, _, _ := strings.Cut(strings.TrimPrefix(h.Name, "./"), "/")
		if !slices.Contains(dirs, top) {
			dirs = append(dirs, top)
		}
		if h.Name == file {
			var b bytes.Buffer
			if _, err := io.Copy(&b, tr); err != nil {
				t.Fatal(err)
			}
			contents = b.String()
		}
	}
	slices.Sort(dirs)
	return dirs, contents
}

// TestClusterBackupAndRestore: cluster-backup.sh saves a snapshot through etcdctl with the node's etcd client
// certificate and the newest revision of every static pod with the etcd certificates (0600 both);
// cluster-restore.sh stops the control plane and etcd, moves etcd's data aside, puts the resources back, lets the
// restore pod answer first and the regular etcd pod after it, and starts everything again.
func TestClusterBackupAndRestore(t *testing.T) {
	n := newScriptNode(t)
	out, code := n.run(t, "cluster-backup.sh", "/backup")
	if code != 0 {
		t.Fatalf("cluster-backup.sh: exit %d\n%s", code, out)
	}
	snaps, tars := n.glob(t, "backup/snapshot_*.db"), n.glob(t, "backup/static_kuberesources_*.tar.gz")
	if len(snaps) != 1 || len(tars) != 1 || strings.TrimSuffix(strings.TrimPrefix(snaps[0], "backup/snapshot_"), ".db") !=
		strings.TrimSuffix(strings.TrimPrefix(tars[0], "backup/static_kuberesources_"), ".tar.gz") {
		t.Fatalf("backup holds %v %v, want one snapshot and one resource archive of the same time\n%s", snaps, tars, out)
	}
	env := n.r.file(t, scriptsDir+"/etcd.env")
	endpoints := ""
	for _, l := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(l, "export ETCDCTL_ENDPOINTS="); ok {
			endpoints = strings.Trim(v, `"'`)
		}
	}
	if got := n.read(t, snaps[0]); endpoints == "" || got != "snapshot of "+endpoints+"\n" {
		t.Errorf("snapshot %q, want etcdctl's of %q (etcd.env)", got, endpoints)
	}
	for _, p := range []string{snaps[0], tars[0]} {
		if m := mode(t, n.path(p)); m != 0600 {
			t.Errorf("%s has mode %o, want 0600", p, m)
		}
	}
	dirs, config := tarDirs(t, n.path(tars[0]), "kube-apiserver-pod-10/configmaps/config/config.yaml")
	if want := []string{"etcd-certs", "etcd-pod-1", "kube-apiserver-pod-10", "kube-scheduler-pod-3"}; !slices.Equal(dirs, want) {
		t.Errorf("resource archive holds %v, want %v", dirs, want)
	}
	if config != "# kube-apiserver-pod-10\n" {
		t.Errorf("kube-apiserver-pod-10's config.yaml in the archive: %q", config)
	}
	if calls := n.calls(t); len(calls) != 2 || calls[0] != "etcdctl snapshot save /"+snaps[0] ||
		calls[1] != "etcdutl snapshot status /"+snaps[0]+" --write-out=table" {
		t.Errorf("calls %q", calls)
	}

	// Between backup and restore: etcd's data and kube-apiserver's newest revision change.
	n.write(t, "var/lib/etcd/member/snap/db", 0600, []byte("etcd data after the backup\n"))
	n.write(t, "etc/kubernetes/static-pod-resources/kube-apiserver-pod-10/configmaps/config/config.yaml", 0644, []byte("changed\n"))
	manifests := map[string]string{}
	for _, p := range n.glob(t, "etc/kubernetes/manifests/*") {
		manifests[p] = n.read(t, p)
	}
	out, code = n.run(t, "cluster-restore.sh", "/backup")
	if code != 0 {
		t.Fatalf("cluster-restore.sh: exit %d\n%s", code, out)
	}
	aside := n.glob(t, "var/lib/etcd-before-restore-*")
	if len(aside) != 1 || n.read(t, aside[0]+"/member/snap/db") != "etcd data after the backup\n" {
		t.Errorf("etcd's data moved aside: %v\n%s", aside, out)
	}
	if left := n.glob(t, "var/lib/etcd/*"); len(left) != 0 {
		t.Errorf("/var/lib/etcd still holds %v", left)
	}
	if got := n.read(t, "var/lib/etcd-backup/snapshot.db"); got != n.read(t, snaps[0]) || mode(t, n.path("var/lib/etcd-backup/snapshot.db")) != 0600 {
		t.Errorf("the restore pod's inbox holds %q, want the backup's snapshot, 0600", got)
	}
	if got := n.read(t, "etc/kubernetes/static-pod-resources/kube-apiserver-pod-10/configmaps/config/config.yaml"); got != "# kube-apiserver-pod-10\n" {
		t.Errorf("kube-apiserver-pod-10's config.yaml after the restore: %q", got)
	}
	for p, want := range manifests {
		if got := n.read(t, p); got != want {
			t.Errorf("%s after the restore differs from before", p)
		}
	}
	if stopped := n.glob(t, "etc/kubernetes/manifests-stopped/*"); len(stopped) != 0 {
		t.Errorf("still stopped: %v", stopped)
	}
	restorePod := string(n.r.file(t, "etc/kubernetes/static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/pod.yaml"))
	if h := n.healthChecks(t); len(h) != 2 || h[0] != restorePod || h[1] != manifests["etc/kubernetes/manifests/etcd-pod.yaml"] {
		t.Errorf("%d health checks; want the restore pod's, then the regular etcd pod's", len(h))
	}
}

// TestClusterBackupWithPodman: without etcdctl and etcdutl on the node, cluster-backup.sh runs them from etcd.env's
// image with podman, on the host network, with the cert directory where etcd.env expects it, the backup directory
// at the same place and the kubelet's pull secret.
func TestClusterBackupWithPodman(t *testing.T) {
	n := newScriptNode(t)
	n.stubs = []string{"crictl", "podman"}
	out, code := n.run(t, "cluster-backup.sh", "/backup")
	if code != 0 {
		t.Fatalf("cluster-backup.sh: exit %d\n%s", code, out)
	}
	snaps := n.glob(t, "backup/snapshot_*.db")
	if len(snaps) != 1 {
		t.Fatalf("backup holds %v\n%s", snaps, out)
	}
	image := n.r.in.Images.Image("etcd")
	prefix := "podman run --rm --network host --privileged --entrypoint %s -v /etc/kubernetes/static-pod-resources/etcd-certs:/etc/kubernetes/static-pod-certs:ro " +
		"-e ETCDCTL_CACERT -e ETCDCTL_CERT -e ETCDCTL_KEY -e ETCDCTL_ENDPOINTS -v /backup:/backup --authfile /var/lib/kubelet/config.json " + image
	want := []string{
		strings.Replace(prefix, "%s", "etcdctl", 1) + " snapshot save /" + snaps[0], "image " + image, "etcdctl snapshot save /" + snaps[0],
		strings.Replace(prefix, "%s", "etcdutl", 1) + " snapshot status /" + snaps[0] + " --write-out=table", "image " + image, "etcdutl snapshot status /" + snaps[0] + " --write-out=table",
	}
	if calls := n.calls(t); !slices.Equal(calls, want) {
		t.Errorf("calls\n %q\nwant\n %q", calls, want)
	}

	// Neither the tools nor podman: a clear error.
	n.stubs = []string{"crictl"}
	if out, code := n.run(t, "cluster-backup.sh", "/backup2"); code != 1 || !strings.Contains(out, "neither etcdctl nor podman is installed") {
		t.Errorf("without etcdctl and podman: exit %d\n%s", code, out)
	}
}

// TestQuorumRestoreAndDisable: quorum-restore.sh lets the quorum-restore pod answer on etcd's own data, then the
// regular pod; disable-etcd.sh moves etcd's manifest to manifests-stopped and waits for etcd to stop.
func TestQuorumRestoreAndDisable(t *testing.T) {
	n := newScriptNode(t)
	etcdPod := n.read(t, "etc/kubernetes/manifests/etcd-pod.yaml")
	out, code := n.run(t, "quorum-restore.sh")
	if code != 0 {
		t.Fatalf("quorum-restore.sh: exit %d\n%s", code, out)
	}
	quorumPod := string(n.r.file(t, "etc/kubernetes/static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/quorum-restore-pod.yaml"))
	if h := n.healthChecks(t); len(h) != 2 || h[0] != quorumPod || h[1] != etcdPod {
		t.Errorf("%d health checks; want the quorum-restore pod's, then the regular etcd pod's\n%s", len(h), out)
	}
	if n.read(t, "etc/kubernetes/manifests/etcd-pod.yaml") != etcdPod || n.read(t, "var/lib/etcd/member/snap/db") != "etcd data before\n" {
		t.Errorf("after quorum-restore.sh: the regular etcd pod and etcd's data are not in place")
	}
	if !n.exists("etc/kubernetes/manifests/kube-apiserver-pod.yaml") {
		t.Errorf("quorum-restore.sh stopped kube-apiserver")
	}

	out, code = n.run(t, "disable-etcd.sh")
	if code != 0 || n.exists("etc/kubernetes/manifests/etcd-pod.yaml") || n.read(t, "etc/kubernetes/manifests-stopped/etcd-pod.yaml") != etcdPod {
		t.Errorf("disable-etcd.sh: exit %d; etcd's manifest not moved to manifests-stopped\n%s", code, out)
	}
	if calls := n.calls(t); !slices.Contains(calls, "crictl ps -q --label io.kubernetes.pod.namespace=openshift-etcd --name ^etcd$") {
		t.Errorf("disable-etcd.sh did not wait for etcd through crictl: %q", calls)
	}
}

// TestEtcdScriptsRefuse: usage errors (a wrong number of arguments, or an option) exit 2 with the script's usage
// line (etcd-common-tools' start_script); not root, no etcd.env, no backup in DIR, no etcd member exit 1 with
// a message saying so, before anything is stopped or written.
func TestEtcdScriptsRefuse(t *testing.T) {
	n := newScriptNode(t)
	n.write(t, "empty/.keep", 0644, nil)
	before := n.glob(t, "etc/kubernetes/manifests/*")
	for _, c := range []struct {
		name, script string
		args         []string
		stubs        []string
		prepare      func()
		code         int
		says         string
	}{
		{"backup without DIR", "cluster-backup.sh", nil, nil, nil, 2, "usage: /" + scriptsDir + "/cluster-backup.sh DIR\n"},
		{"backup with an option", "cluster-backup.sh", []string{"-h"}, nil, nil, 2, "usage:"},
		{"restore with two DIRs", "cluster-restore.sh", []string{"/a", "/b"}, nil, nil, 2, "usage: /" + scriptsDir + "/cluster-restore.sh DIR\n"},
		{"restore with an option", "cluster-restore.sh", []string{"--help"}, nil, nil, 2, "usage:"},
		{"quorum-restore with an argument", "quorum-restore.sh", []string{"x"}, nil, nil, 2, "usage: /" + scriptsDir + "/quorum-restore.sh\n"},
		{"disable with an argument", "disable-etcd.sh", []string{"x"}, nil, nil, 2, "usage: /" + scriptsDir + "/disable-etcd.sh\n"},
		{"disable with an option", "disable-etcd.sh", []string{"-h"}, nil, nil, 2, "usage:"},
		{"not root", "cluster-backup.sh", []string{"/backup"}, []string{"id"}, nil, 1, "must run as root"},
		{"restore from a missing DIR", "cluster-restore.sh", []string{"/nonexistent"}, nil, nil, 1, "/nonexistent does not exist"},
		{"restore without a backup", "cluster-restore.sh", []string{"/empty"}, nil, nil, 1, "no snapshot_*.db in /empty"},
		{"quorum-restore without a member", "quorum-restore.sh", nil, nil, func() { os.RemoveAll(n.path("var/lib/etcd/member")) }, 1, "no etcd member in /var/lib/etcd"},
		{"backup without etcd.env", "cluster-backup.sh", []string{"/backup"}, nil, func() { os.Remove(n.path(scriptsDir + "/etcd.env")) }, 1, "etcd.env is missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n.stubs = append([]string{"etcdctl", "etcdutl", "crictl"}, c.stubs...)
			if c.prepare != nil {
				c.prepare()
			}
			out, code := n.run(t, c.script, c.args...)
			if code != c.code || !strings.Contains(out, c.says) {
				t.Errorf("exit %d, want %d saying %q:\n%s", code, c.code, c.says, out)
			}
			if after := n.glob(t, "etc/kubernetes/manifests/*"); !slices.Equal(after, before) || n.exists("backup") || n.exists("etc/kubernetes/manifests-stopped") {
				t.Errorf("manifests %v (before %v), or a backup or manifests-stopped appeared", after, before)
			}
			if calls := n.calls(t); len(calls) != 1 || calls[0] != "" {
				t.Errorf("calls %q", calls)
			}
		})
	}
}
