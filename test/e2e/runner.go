package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// Runner runs the static pods of an Ignition root as plain processes, the way a kubelet would run them on the
// node, without a kubelet, a container runtime or images:
//
//   - pods come from <Root>/etc/kubernetes/manifests, ordered etcd → kube-apiserver →
//     kube-controller-manager → kube-scheduler → the rest;
//   - an image is replaced by the local binary named after the image's component (its repository's last path
//     element: registry.k8s.io/kube-apiserver:v1.34.3 → kube-apiserver; a command whose first word names
//     another local binary, such as etcdctl, uses that one);
//   - each container gets a private mount namespace and a tmpfs root in which every hostPath volume, re-rooted
//     under Root, is bind-mounted at its mountPath (container.go), so paths in flags and config files need no
//     rewriting;
//   - env: value, $(VAR) expansion, fieldRef (metadata.name/namespace/uid/labels/annotations, spec.nodeName,
//     spec.serviceAccountName, status.hostIP(s)/podIP(s) = the node IPs) and resourceFieldRef;
//   - init containers run to completion first, then the containers start and the runner waits for their
//     startup and readiness probes (httpGet over HTTP/HTTPS, tcpSocket; liveness when there is neither);
//   - every container's output goes to <LogDir>/<pod>_<container>.log;
//   - Stop stops them in reverse order, one at a time, by PID: SIGTERM to the process group, SIGKILL after a
//     bound.
//
// It refuses to start in the host's network namespace (CheckPrivateNetns).
type Runner struct {
	Root     string   // the Ignition root
	BinDir   string   // local binaries standing in for images
	WorkDir  string   // scratch: container roots, emptyDirs, specs
	LogDir   string   // container logs
	NodeName string   // spec.nodeName; static pod names get "-<NodeName>" as the kubelet's mirror pods do
	NodeIPs  []string // status.hostIP(s)/podIP(s); the first is the primary
	Hosts    string   // the container's /etc/hosts
	Logf     func(string, ...any)

	StartTimeout time.Duration // per pod, until every container is ready (default 3 min)
	InitTimeout  time.Duration // per init container (default 2 min)
	StopGrace    time.Duration // SIGTERM → SIGKILL (default 15 s, or the pod's grace period when shorter)

	mu      sync.Mutex
	Pods    []*Pod
	started []*Process
	t0      time.Time
}

// Pod is a static pod as the runner sees it.
type Pod struct {
	File string      // manifest file name
	Name string      // metadata.name + "-" + node name
	Spec *corev1.Pod // as read
	UID  string
}

// Process is one started container.
type Process struct {
	Pod       *Pod
	Container *corev1.Container
	Init      bool
	Binary    string // the local binary standing in for the image
	LogPath   string
	Spec      *ContainerSpec
	Cmd       *exec.Cmd
	Started   time.Time
	Ready     time.Duration // after Started

	done     chan struct{}
	exitErr  error
	exitedAt time.Time
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.exitErr
	default:
		return false, nil
	}
}

// Name is <pod>/<container>.
func (p *Process) Name() string { return p.Pod.Name + "/" + p.Container.Name }

func (r *Runner) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

// LoadPods reads and orders the static pods.
func (r *Runner) LoadPods() error {
	dir := filepath.Join(r.Root, "etc", "kubernetes", "manifests")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("static pod manifests: %w", err)
	}
	var pods []*Pod
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml") || strings.HasSuffix(e.Name(), ".json")) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		var p corev1.Pod
		if err := yaml.UnmarshalStrict(data, &p); err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
		if p.Kind != "Pod" || p.Name == "" {
			return fmt.Errorf("%s: not a named Pod (kind %q)", e.Name(), p.Kind)
		}
		if p.Namespace == "" {
			p.Namespace = "default"
		}
		pods = append(pods, &Pod{File: e.Name(), Name: p.Name + "-" + r.NodeName, Spec: &p, UID: fmt.Sprintf("%016x", rand.Uint64())})
	}
	if len(pods) == 0 {
		return fmt.Errorf("no static pods in %s", dir)
	}
	sort.SliceStable(pods, func(i, j int) bool {
		oi, oj := podOrder(pods[i].Spec), podOrder(pods[j].Spec)
		if oi != oj {
			return oi < oj
		}
		return pods[i].File < pods[j].File
	})
	r.Pods = pods
	return nil
}

// podOrder: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, then the rest.
func podOrder(p *corev1.Pod) int {
	for _, n := range []string{p.Labels["component"], p.Labels["app"], p.Name} {
		switch {
		case n == "":
		case strings.Contains(n, "etcd"):
			return 0
		case strings.Contains(n, "apiserver"):
			return 1
		case strings.Contains(n, "controller-manager"):
			return 2
		case strings.Contains(n, "scheduler"):
			return 3
		}
	}
	return 4
}

// ImageComponent is the component an image stands for: its repository's last path element without tag or
// digest, and without an origin-/ose- prefix (quay.io/openshift/origin-hyperkube:4.20 → hyperkube).
func ImageComponent(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	base := path.Base(image)
	if i := strings.Index(base, ":"); i >= 0 {
		base = base[:i]
	}
	for _, p := range []string{"origin-", "ose-"} {
		base = strings.TrimPrefix(base, p)
	}
	return base
}

// binaryFor picks the local binary for a container: the command's first word when it names a local binary
// (etcdctl in an etcd image), else the image's component.
func (r *Runner) binaryFor(c *corev1.Container) (string, error) {
	have := func(n string) bool {
		st, err := os.Stat(filepath.Join(r.BinDir, n))
		return err == nil && st.Mode().IsRegular()
	}
	comp := ImageComponent(c.Image)
	if len(c.Command) > 0 {
		if b := path.Base(c.Command[0]); have(b) {
			return b, nil
		}
		if b := path.Base(c.Command[0]); b == "sh" || b == "bash" {
			return "", fmt.Errorf("container %s runs a shell (%s); the runner runs binaries only (flag-only pods)", c.Name, strings.Join(c.Command, " "))
		}
		return "", fmt.Errorf("container %s: no local binary for command %q (image %s) in %s", c.Name, c.Command[0], c.Image, r.BinDir)
	}
	if have(comp) {
		return comp, nil
	}
	return "", fmt.Errorf("container %s: no local binary for image %s (component %q) in %s", c.Name, c.Image, comp, r.BinDir)
}

// Start runs every pod: init containers to completion, then the containers, waiting for readiness pod by pod.
// On error the caller still calls Stop (it stops what was started).
func (r *Runner) Start(ctx context.Context) error {
	if err := CheckPrivateNetns(); err != nil {
		return err
	}
	if r.StartTimeout == 0 {
		r.StartTimeout = 3 * time.Minute
	}
	if r.InitTimeout == 0 {
		r.InitTimeout = 2 * time.Minute
	}
	if r.StopGrace == 0 {
		r.StopGrace = 15 * time.Second
	}
	if len(r.NodeIPs) == 0 {
		return fmt.Errorf("no node IPs")
	}
	if r.Pods == nil {
		if err := r.LoadPods(); err != nil {
			return err
		}
	}
	for _, d := range []string{r.WorkDir, r.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	r.t0 = time.Now()
	for _, p := range r.Pods {
		t := time.Now()
		for i := range p.Spec.Spec.InitContainers {
			c := &p.Spec.Spec.InitContainers[i]
			if err := r.runInit(ctx, p, c); err != nil {
				return err
			}
		}
		var procs []*Process
		for i := range p.Spec.Spec.Containers {
			pr, err := r.start(p, &p.Spec.Spec.Containers[i], false)
			if err != nil {
				return err
			}
			procs = append(procs, pr)
		}
		wctx, cancel := context.WithTimeout(ctx, r.StartTimeout)
		for _, pr := range procs {
			if err := r.waitReady(wctx, pr); err != nil {
				cancel()
				return err
			}
		}
		cancel()
		r.logf("pod %s ready %.1fs after its start (t=%.1fs)", p.Name, time.Since(t).Seconds(), time.Since(r.t0).Seconds())
	}
	r.logf("all %d pods ready, t=%.1fs", len(r.Pods), time.Since(r.t0).Seconds())
	return nil
}

func (r *Runner) runInit(ctx context.Context, p *Pod, c *corev1.Container) error {
	pr, err := r.start(p, c, true)
	if err != nil {
		return err
	}
	timer := time.NewTimer(r.InitTimeout)
	defer timer.Stop()
	select {
	case <-pr.done:
	case <-timer.C:
		r.stopProcess(pr, 5*time.Second)
		return fmt.Errorf("init container %s did not finish within %s", pr.Name(), r.InitTimeout)
	case <-ctx.Done():
		r.stopProcess(pr, 5*time.Second)
		return ctx.Err()
	}
	if pr.exitErr != nil {
		return fmt.Errorf("init container %s failed: %v\n%s", pr.Name(), pr.exitErr, tail(pr.LogPath, 30))
	}
	r.logf("init container %s done in %.1fs", pr.Name(), pr.exitedAt.Sub(pr.Started).Seconds())
	return nil
}

// start builds the container's view and starts it through the container shim (the test binary itself,
// re-executed with EnvContainer, in a new mount namespace and process group; it dies with us).
func (r *Runner) start(p *Pod, c *corev1.Container, init bool) (*Process, error) {
	bin, err := r.binaryFor(c)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", p.Name, err)
	}
	spec, err := r.containerSpec(p, c, bin)
	if err != nil {
		return nil, fmt.Errorf("pod %s container %s: %w", p.Name, c.Name, err)
	}
	prefix := ""
	if init {
		prefix = "init-"
	}
	return r.startSpec(p, c, init, safeName(p.Name+"_"+prefix+c.Name), spec)
}

// startSpec starts a container spec through the shim (see start).
func (r *Runner) startSpec(p *Pod, c *corev1.Container, init bool, id string, spec *ContainerSpec) (*Process, error) {
	cdir := filepath.Join(r.WorkDir, "containers", id)
	spec.Root = filepath.Join(cdir, "root")
	if err := os.MkdirAll(spec.Root, 0o755); err != nil {
		return nil, err
	}
	specPath := filepath.Join(cdir, "spec.json")
	data, _ := json.MarshalIndent(spec, "", "  ")
	if err := os.WriteFile(specPath, data, 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.LogDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(r.LogDir, id+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = []string{EnvContainer + "=" + specPath}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	bin := filepath.Base(spec.Argv[0])
	pr := &Process{Pod: p, Container: c, Init: init, Binary: bin, LogPath: logPath, Spec: spec, Cmd: cmd, done: make(chan struct{})}
	fmt.Fprintf(logFile, "# %s %s: %s\n", time.Now().UTC().Format(time.RFC3339Nano), pr.Name(), strings.Join(spec.Argv, " "))
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", pr.Name(), err)
	}
	pr.Started = time.Now()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		pr.exitErr, pr.exitedAt = err, time.Now()
		close(pr.done)
	}()
	r.mu.Lock()
	r.started = append(r.started, pr)
	r.mu.Unlock()
	r.logf("started %s (pid %d: %s) t=%.1fs", pr.Name(), cmd.Process.Pid, strings.Join(spec.Argv[:min(len(spec.Argv), 1)], " "), time.Since(r.t0).Seconds())
	return pr, nil
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == ':' {
			return '_'
		}
		return r
	}, s)
}

// containerSpec assembles the container's filesystem view, environment and command.
func (r *Runner) containerSpec(p *Pod, c *corev1.Container, bin string) (*ContainerSpec, error) {
	env, err := r.containerEnv(p, c)
	if err != nil {
		return nil, err
	}
	lookup := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		lookup[k] = v
	}
	var argv []string
	exe := "/usr/local/bin/" + bin
	if len(c.Command) > 0 {
		argv = append(argv, expandAll(c.Command, lookup)...)
		if strings.HasPrefix(argv[0], "/") {
			exe = argv[0]
		} else {
			argv[0] = bin
		}
	} else {
		argv = []string{bin}
	}
	argv = append(argv, expandAll(c.Args, lookup)...)

	vols := map[string]*corev1.Volume{}
	for i := range p.Spec.Spec.Volumes {
		vols[p.Spec.Spec.Volumes[i].Name] = &p.Spec.Spec.Volumes[i]
	}
	var mounts []BindMount
	for _, vm := range c.VolumeMounts {
		v := vols[vm.Name]
		if v == nil {
			return nil, fmt.Errorf("volumeMount %s: no such volume", vm.Name)
		}
		src, isFile, err := r.volumeSource(p, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		if vm.SubPath != "" || vm.SubPathExpr != "" {
			sp := vm.SubPath
			if vm.SubPathExpr != "" {
				sp = expand(vm.SubPathExpr, lookup)
			}
			src = filepath.Join(src, filepath.Clean("/"+sp))
			st, err := os.Stat(src)
			if os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o755); err != nil {
					return nil, err
				}
				isFile = false
			} else if err != nil {
				return nil, err
			} else {
				isFile = !st.IsDir()
			}
		}
		mounts = append(mounts, BindMount{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly, File: isFile})
	}
	mounts = append(mounts, BindMount{Source: filepath.Join(r.BinDir, bin), Target: exe, ReadOnly: true, File: true})
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].Target) < depth(mounts[j].Target) })
	hosts := r.Hosts
	if hosts == "" {
		hosts = "127.0.0.1\tlocalhost\n::1\tlocalhost\n"
	}
	return &ContainerSpec{
		Files: map[string]string{
			"/etc/hosts":         hosts,
			"/etc/hostname":      r.NodeName + "\n",
			"/etc/resolv.conf":   "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
			"/etc/nsswitch.conf": "hosts: files dns\n",
			"/etc/passwd":        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
			"/etc/group":         "root:x:0:\nnogroup:x:65534:\n",
		},
		Mounts:     mounts,
		Argv:       argv,
		Env:        env,
		WorkingDir: c.WorkingDir,
	}, nil
}

func depth(p string) int { return strings.Count(filepath.Clean("/"+p), "/") }

// volumeSource resolves a volume to a host path: a hostPath re-rooted under Root (created there for
// DirectoryOrCreate/FileOrCreate and for an unset type, as a runtime would), falling back to the host's own
// path, read as is, only for system paths the Ignition root does not carry (CA bundles); an emptyDir to a
// per-pod scratch directory.
func (r *Runner) volumeSource(p *Pod, v *corev1.Volume) (string, bool, error) {
	switch {
	case v.HostPath != nil:
		hp := filepath.Clean("/" + v.HostPath.Path)
		src := r.inRoot(hp)
		typ := corev1.HostPathUnset
		if v.HostPath.Type != nil {
			typ = *v.HostPath.Type
		}
		st, err := os.Stat(src)
		if err == nil {
			return src, !st.IsDir(), nil
		}
		switch typ {
		case corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate:
			return src, false, os.MkdirAll(src, 0o755)
		case corev1.HostPathFileOrCreate:
			if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
				return "", false, err
			}
			f, err := os.OpenFile(src, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", false, err
			}
			return src, true, f.Close()
		}
		if st, err := os.Stat(hp); err == nil && isSystemPath(hp) {
			r.logf("pod %s volume %s: %s is not in the Ignition root; using the host's (read-only system path)", p.Name, v.Name, hp)
			return hp, !st.IsDir(), nil
		}
		return "", false, fmt.Errorf("hostPath %s (type %s) does not exist in the Ignition root (%s)", hp, typ, src)
	case v.EmptyDir != nil:
		d := filepath.Join(r.WorkDir, "pods", safeName(p.Name), "volumes", v.Name)
		return d, false, os.MkdirAll(d, 0o755)
	}
	return "", false, fmt.Errorf("unsupported volume source (static pods use hostPath and emptyDir)")
}

func isSystemPath(p string) bool {
	for _, pre := range []string{"/etc/ssl", "/etc/pki", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates", "/etc/ca-certificates"} {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// inRoot maps an absolute node path into the Ignition root, following symlinks inside the root (an absolute
// link target is taken relative to the root, as on the node).
func (r *Runner) inRoot(p string) string {
	parts := strings.Split(strings.TrimPrefix(filepath.Clean("/"+p), "/"), "/")
	cur := "/"
	for i := 0; i < len(parts); i++ {
		if parts[i] == "" {
			continue
		}
		next := path.Join(cur, parts[i])
		full := filepath.Join(r.Root, next)
		if st, err := os.Lstat(full); err == nil && st.Mode()&os.ModeSymlink != 0 {
			if tgt, err := os.Readlink(full); err == nil && i < 40 {
				if !path.IsAbs(tgt) {
					tgt = path.Join(cur, tgt)
				}
				parts = append(strings.Split(strings.TrimPrefix(path.Clean(tgt), "/"), "/"), parts[i+1:]...)
				cur, i = "/", -1
				continue
			}
		}
		cur = next
	}
	return filepath.Join(r.Root, cur)
}

// containerEnv: a base environment (PATH, HOSTNAME), then the container's env in order, with $(VAR)
// expansion against what came before, fieldRef and resourceFieldRef.
func (r *Runner) containerEnv(p *Pod, c *corev1.Container) ([]string, error) {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=" + r.NodeName, "HOME=/root"}
	vals := map[string]string{}
	for _, e := range c.Env {
		var v string
		switch {
		case e.ValueFrom == nil:
			v = expand(e.Value, vals)
		case e.ValueFrom.FieldRef != nil:
			fv, err := r.fieldRef(p, e.ValueFrom.FieldRef.FieldPath)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			v = fv
		case e.ValueFrom.ResourceFieldRef != nil:
			rv, err := resourceFieldRef(c, e.ValueFrom.ResourceFieldRef)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			v = rv
		default:
			return nil, fmt.Errorf("env %s: unsupported valueFrom (static pods have no configMaps or secrets)", e.Name)
		}
		vals[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("envFrom is not supported in static pods")
	}
	return env, nil
}

func (r *Runner) fieldRef(p *Pod, fp string) (string, error) {
	switch fp {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Spec.Namespace, nil
	case "metadata.uid":
		return p.UID, nil
	case "spec.nodeName":
		return r.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.podIP":
		return r.NodeIPs[0], nil
	case "status.hostIPs", "status.podIPs":
		return strings.Join(r.NodeIPs, ","), nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": p.Spec.Labels, "metadata.annotations": p.Spec.Annotations} {
		if strings.HasPrefix(fp, prefix+"['") && strings.HasSuffix(fp, "']") {
			return m[fp[len(prefix)+2:len(fp)-2]], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldRef %q", fp)
}

func resourceFieldRef(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	kind, name, _ := strings.Cut(ref.Resource, ".")
	rn := corev1.ResourceName(name)
	q, ok := c.Resources.Limits[rn]
	if kind == "requests" {
		q, ok = c.Resources.Requests[rn]
	}
	if !ok { // no limit: the node's allocatable, as the kubelet does
		switch rn {
		case corev1.ResourceCPU:
			return strconv.Itoa(runtime.NumCPU()), nil
		case corev1.ResourceMemory:
			return strconv.FormatInt(memTotal(), 10), nil
		default:
			return "0", nil
		}
	}
	div := ref.Divisor
	if div.IsZero() {
		if rn == corev1.ResourceCPU {
			return strconv.FormatInt((q.MilliValue()+999)/1000, 10), nil
		}
		return strconv.FormatInt(q.Value(), 10), nil
	}
	if rn == corev1.ResourceCPU {
		return strconv.FormatInt((q.MilliValue()+div.MilliValue()-1)/div.MilliValue(), 10), nil
	}
	return strconv.FormatInt((q.Value()+div.Value()-1)/div.Value(), 10), nil
}

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fs[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// expand does Kubernetes' $(VAR) expansion: a defined $(VAR) is replaced, $$ is a literal $, anything else
// stays as written.
func expand(s string, vals map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vals[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func expandAll(in []string, vals map[string]string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, vals)
	}
	return out
}

// waitReady waits for the startup probe, then the readiness probe (the liveness probe when there is
// neither; one second of running when there is no probe at all), failing as soon as the process exits.
func (r *Runner) waitReady(ctx context.Context, pr *Process) error {
	c := pr.Container
	var probes []*corev1.Probe
	if c.StartupProbe != nil {
		probes = append(probes, c.StartupProbe)
	}
	if c.ReadinessProbe != nil {
		probes = append(probes, c.ReadinessProbe)
	}
	if len(probes) == 0 && c.LivenessProbe != nil {
		probes = append(probes, c.LivenessProbe)
	}
	if len(probes) == 0 {
		select {
		case <-pr.done:
			return r.exitedEarly(pr)
		case <-time.After(time.Second):
			pr.Ready = time.Since(pr.Started)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, pb := range probes {
		var last error
		for {
			if done, _ := pr.Exited(); done {
				return r.exitedEarly(pr)
			}
			if last = r.probe(ctx, pr, pb); last == nil {
				break
			}
			select {
			case <-pr.done:
				return r.exitedEarly(pr)
			case <-ctx.Done():
				return fmt.Errorf("%s not ready within the bound: last probe: %v\n%s", pr.Name(), last, tail(pr.LogPath, 30))
			case <-time.After(probeInterval(pb)):
			}
		}
	}
	pr.Ready = time.Since(pr.Started)
	r.logf("%s ready after %.1fs", pr.Name(), pr.Ready.Seconds())
	return nil
}

// probeInterval polls faster than the kubelet (at most every second) but never more often than 5×/s.
func probeInterval(pb *corev1.Probe) time.Duration {
	d := time.Duration(pb.PeriodSeconds) * time.Second
	if d <= 0 || d > time.Second {
		d = time.Second
	}
	return max(d/2, 200*time.Millisecond)
}

func (r *Runner) exitedEarly(pr *Process) error {
	how := "with status 0"
	if pr.exitErr != nil {
		how = pr.exitErr.Error()
	}
	return fmt.Errorf("%s exited before it was ready (%s)\n%s", pr.Name(), how, tail(pr.LogPath, 40))
}

// probe runs one probe attempt against the node IP (a hostNetwork pod's IP) or the probe's host.
func (r *Runner) probe(ctx context.Context, pr *Process, pb *corev1.Probe) error {
	timeout := time.Duration(pb.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	timeout = min(timeout, 5*time.Second)
	switch {
	case pb.HTTPGet != nil:
		g := pb.HTTPGet
		port, err := resolvePort(pr.Container, g.Port)
		if err != nil {
			return err
		}
		host := g.Host
		if host == "" {
			host = r.NodeIPs[0]
		}
		scheme := strings.ToLower(string(g.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		p := g.Path
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		u := scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + p
		client := &http.Client{Timeout: timeout, Transport: &http.Transport{
			Proxy:             nil,                                   // never a proxy: the probe stays in the namespace
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // as the kubelet does
			DisableKeepAlives: true,
		}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	case pb.TCPSocket != nil:
		port, err := resolvePort(pr.Container, pb.TCPSocket.Port)
		if err != nil {
			return err
		}
		host := pb.TCPSocket.Host
		if host == "" {
			host = r.NodeIPs[0]
		}
		d := net.Dialer{Timeout: timeout}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case pb.Exec != nil:
		return errors.New("exec probes are not supported (static pods of the control plane use httpGet)")
	case pb.GRPC != nil:
		return errors.New("grpc probes are not supported")
	}
	return errors.New("probe without a handler")
}

func resolvePort(c *corev1.Container, p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, p.StrVal)
}

// Processes returns what was started, in order.
func (r *Runner) Processes() []*Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Process(nil), r.started...)
}

// Find returns the running (non-init) process of a pod (by manifest name, pod name or component label) and
// container (empty: the first).
func (r *Runner) Find(pod, container string) *Process {
	for _, pr := range r.Processes() {
		if pr.Init {
			continue
		}
		s := pr.Pod.Spec
		if pod != s.Name && pod != pr.Pod.Name && pod != s.Labels["component"] {
			continue
		}
		if container == "" || container == pr.Container.Name {
			return pr
		}
	}
	return nil
}

// HostPath maps a path as the container sees it to the host path behind it (through its bind mounts), e.g.
// to read a certificate a flag names.
func (pr *Process) HostPath(p string) (string, error) {
	p = filepath.Clean(p)
	best := -1
	for i, m := range pr.Spec.Mounts {
		t := filepath.Clean(m.Target)
		if p == t || strings.HasPrefix(p, strings.TrimSuffix(t, "/")+"/") {
			if best < 0 || len(t) > len(filepath.Clean(pr.Spec.Mounts[best].Target)) {
				best = i
			}
		}
	}
	if best < 0 {
		return "", fmt.Errorf("%s: %s is not under any volume mount", pr.Name(), p)
	}
	m := pr.Spec.Mounts[best]
	rel, _ := filepath.Rel(filepath.Clean(m.Target), p)
	return filepath.Join(m.Source, rel), nil
}

// Flag returns the value of --name=value (or --name value) in the process's command line.
func (pr *Process) Flag(name string) (string, bool) {
	argv := pr.Spec.Argv
	for i, a := range argv {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(argv) {
			return argv[i+1], true
		}
	}
	return "", false
}

// Unexpected lists containers that ended while they should be running.
func (r *Runner) Unexpected() []string {
	var out []string
	for _, pr := range r.Processes() {
		if pr.Init {
			continue
		}
		if done, err := pr.Exited(); done {
			out = append(out, fmt.Sprintf("%s exited after %.1fs: %v", pr.Name(), pr.exitedAt.Sub(pr.Started).Seconds(), err))
		}
	}
	return out
}

// Stop stops every started process in reverse order, one at a time, by PID: SIGTERM to its process group,
// SIGKILL after the grace bound. It returns the containers that did not stop on SIGTERM.
func (r *Runner) Stop() []string {
	procs := r.Processes()
	var forced []string
	for i := len(procs) - 1; i >= 0; i-- {
		pr := procs[i]
		grace := r.StopGrace
		if g := pr.Pod.Spec.Spec.TerminationGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < grace {
			grace = max(time.Duration(*g)*time.Second, time.Second)
		}
		if !r.stopProcess(pr, grace) {
			forced = append(forced, pr.Name())
		}
	}
	return forced
}

// stopProcess returns false when SIGKILL was needed.
func (r *Runner) stopProcess(pr *Process, grace time.Duration) bool {
	if done, _ := pr.Exited(); done {
		return true
	}
	pid := pr.Cmd.Process.Pid
	t := time.Now()
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-pr.done:
		r.logf("stopped %s (pid %d) in %.1fs", pr.Name(), pid, time.Since(t).Seconds())
		return true
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-pr.done:
	case <-time.After(10 * time.Second):
		r.logf("%s (pid %d) still there 10s after SIGKILL", pr.Name(), pid)
	}
	r.logf("killed %s (pid %d) after %s", pr.Name(), pid, grace)
	return false
}

// DumpLogs writes the last lines of every container's log.
func (r *Runner) DumpLogs(w io.Writer, lines int) {
	for _, pr := range r.Processes() {
		fmt.Fprintf(w, "===== %s (%s) =====\n%s\n", pr.Name(), pr.LogPath, tail(pr.LogPath, lines))
	}
}

// RunNodeCommand runs a command of the node itself (a first-boot script such as aiokube) to completion, in a
// view of the node: the host's userland (/usr and the /bin, /lib... links, read-only) with the Ignition root
// on top (each entry of its /etc, its /usr/local and every other top-level directory bind-mounted, writable,
// so what the command changes lands in the root), the namespace's /etc/hosts, and first on PATH
// /run/e2e/bin: kubectl from the local binaries and a systemctl stand-in that logs and succeeds (no systemd
// runs here). Its output goes to <LogDir>/<name>.log.
func (r *Runner) RunNodeCommand(ctx context.Context, name string, argv, env []string, timeout time.Duration) error {
	if err := CheckPrivateNetns(); err != nil {
		return err
	}
	const tools = "/run/e2e/bin"
	spec := &ContainerSpec{Symlinks: map[string]string{}, Argv: argv,
		Env: append([]string{"PATH=" + tools + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "HOSTNAME=" + r.NodeName}, env...),
		Files: map[string]string{"/etc/hosts": r.Hosts, "/etc/resolv.conf": "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
			"/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n"},
		ExecFiles: map[string]string{tools + "/systemctl": "#!/bin/sh\n# e2e stand-in: no systemd runs in the test's namespaces\necho \"systemctl (e2e stand-in): $*\" >&2\nexit 0\n"},
	}
	spec.Mounts = append(spec.Mounts, BindMount{Source: "/usr", Target: "/usr", ReadOnly: true},
		BindMount{Source: filepath.Join(r.BinDir, "kubectl"), Target: tools + "/kubectl", ReadOnly: true, File: true})
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
		case st.Mode()&os.ModeSymlink != 0:
			tgt, _ := os.Readlink(d)
			spec.Symlinks[d] = tgt
		case st.IsDir():
			spec.Mounts = append(spec.Mounts, BindMount{Source: d, Target: d, ReadOnly: true})
		}
	}
	if st, err := os.Stat(r.inRoot("/usr/local")); err == nil && st.IsDir() {
		spec.Mounts = append(spec.Mounts, BindMount{Source: r.inRoot("/usr/local"), Target: "/usr/local"})
	}
	top, err := os.ReadDir(r.Root)
	if err != nil {
		return err
	}
	for _, e := range top {
		n := "/" + e.Name()
		switch {
		case n == "/usr" || n == "/dev" || n == "/proc" || n == "/sys" || n == "/run" || spec.Symlinks[n] != "":
		case n == "/etc":
			etc, _ := os.ReadDir(filepath.Join(r.Root, "etc"))
			for _, f := range etc {
				p := "/etc/" + f.Name()
				if _, own := spec.Files[p]; own || f.Type()&os.ModeSymlink != 0 {
					continue
				}
				spec.Mounts = append(spec.Mounts, BindMount{Source: filepath.Join(r.Root, "etc", f.Name()), Target: p, File: !f.IsDir()})
			}
		case e.IsDir():
			spec.Mounts = append(spec.Mounts, BindMount{Source: filepath.Join(r.Root, e.Name()), Target: n})
		}
	}
	sort.SliceStable(spec.Mounts, func(i, j int) bool { return depth(spec.Mounts[i].Target) < depth(spec.Mounts[j].Target) })
	p := &Pod{Name: name, Spec: &corev1.Pod{}}
	c := &corev1.Container{Name: name}
	pr, err := r.startSpec(p, c, true, name, spec)
	if err != nil {
		return err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-pr.done:
	case <-timer.C:
		r.stopProcess(pr, 5*time.Second)
		return fmt.Errorf("%s did not finish within %s\n%s", name, timeout, tail(pr.LogPath, 40))
	case <-ctx.Done():
		r.stopProcess(pr, 5*time.Second)
		return ctx.Err()
	}
	if pr.exitErr != nil {
		return fmt.Errorf("%s failed: %v\n%s", name, pr.exitErr, tail(pr.LogPath, 40))
	}
	r.logf("%s done in %.1fs", name, pr.exitedAt.Sub(pr.Started).Seconds())
	return nil
}

// Unrunnable lists the containers (init containers included) the runner has no local binary for, or that run
// a shell: what keeps a render from booting here. It loads the pods first when needed.
func (r *Runner) Unrunnable() ([]string, error) {
	if r.Pods == nil {
		if err := r.LoadPods(); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, p := range r.Pods {
		cs := append(append([]corev1.Container{}, p.Spec.Spec.InitContainers...), p.Spec.Spec.Containers...)
		for i := range cs {
			if _, err := r.binaryFor(&cs[i]); err != nil {
				out = append(out, fmt.Sprintf("%s/%s (%s)", p.File, cs[i].Name, cs[i].Image))
			}
		}
	}
	return out, nil
}

// DropUnrunnable removes the pods with a container Unrunnable lists and returns their manifest files.
func (r *Runner) DropUnrunnable() []string {
	var keep []*Pod
	var dropped []string
	for _, p := range r.Pods {
		ok := true
		for _, cs := range [][]corev1.Container{p.Spec.Spec.InitContainers, p.Spec.Spec.Containers} {
			for i := range cs {
				if _, err := r.binaryFor(&cs[i]); err != nil {
					ok = false
				}
			}
		}
		if ok {
			keep = append(keep, p)
		} else {
			dropped = append(dropped, p.File)
		}
	}
	r.Pods = keep
	return dropped
}
