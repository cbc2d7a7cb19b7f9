package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/registries"
)

// The real node: Debian's containerd and runc and an upstream kubelet built from the module proxy, started
// inside the inner test's private network, mount and PID namespaces on the root real Ignition laid aio.ign into.
// The paths aio.ign writes are bind-mounted at their real places (/etc/kubernetes, /var/lib/kubelet, ...), so
// the kubelet reads the rendered kubelet.service's ExecStart, the rendered kubelet.conf and the rendered static
// pods exactly where a node would. What the harness must change is listed once, in overrides.go.

// Node is one boot of the node. Mount, StartContainerd, ImportImages and StartKubelet bring it up; Stop takes it
// down by PID, in reverse order.
type Node struct {
	Root     string // the root Ignition laid aio.ign into: the node's disk
	Work     string // this boot's harness files: overlay upper dirs, containerd config, logs
	BinDir   string // the upstream binaries (kubelet, kubectl, ...)
	NodeName string
	Logf     func(string, ...any)
	// HostView, for a node that starts workers (worker.go), is where Mount binds the host's own directories it
	// overlays, before it overlays them; a worker's mount namespace is a copy of that node's, and its overlays take
	// their lower layer there (Lower), so that it sees the host's directories and its own root, not the other node's.
	HostView string
	Lower    string
	// CgroupRoot, for a worker, is its kubelet's cgroupRoot (overrides.go): two kubelets on one machine share the
	// cgroup hierarchies, so each owns a subtree of its own.
	CgroupRoot string
	// Nameserver is the node's /etc/resolv.conf nameserver (overrides.go): its primary IP.
	Nameserver string
	// ExtraHosts are lines the node's /etc/hosts gets (overrides.go): the mirror's name in the mirror case.
	ExtraHosts string
	// ExtraImages are images the node pulls besides the rendered ones (the test's workload), for containerd's
	// registry hosts (StartContainerd).
	ExtraImages []string
	// RegistryHosts is containerd's registry config_path when the render wrote /etc/containers/registries.conf.
	RegistryHosts string
	// The mirror case (mirror.go): what the mirror serves, and the mirror machine in the first boot.
	MirrorPlan *MirrorPlan
	Mirror     *Mirror

	CRISocket    string // where the rendered kubelet.conf points its runtime endpoint (containerd listens there)
	PauseImage   string // the sandbox image the rendered CRI-O drop-in names
	CNIConfDir   string // containerd's CNI conf_dir: the rendered CRI-O network_dir
	CNIBinDir    string // containerd's CNI bin_dir, where the harness puts Debian's plugins (overrides.go)
	KubeletArgv  []string
	KubeletStart time.Time // the kubelet's first start in this boot
	// KubeletRestarts are the later starts (the node's own scripts restart it through systemctl: standins.go).
	KubeletRestarts []time.Time

	containerd *exec.Cmd
	logs       []*os.File

	events eventLog // what the harness saw happen (timeline.go)

	mu          sync.Mutex
	kubelet     *exec.Cmd
	kubeletDown bool            // stopped on request (systemctl stop): not a failure
	unitsRan    map[string]bool // the oneshot units that ran to their end in this boot (units.go)
}

// LogDir holds containerd.log and kubelet.log of this boot.
func (n *Node) LogDir() string { return filepath.Join(n.Work, "logs") }

// nodeTops are the directories whose entries Ignition lays out and the node sees at their real places. Each is
// overlaid (host content below, this boot's changes in Work) so mount points can be made without touching the
// host, then every entry of <Root>/<top> is bind-mounted over it.
var nodeTops = []string{"etc", "opt", "usr/local", "var/lib", "home", "root"}

// ignitionSeeds are files the harness seeded into the root for Ignition itself (ignition.go): the host's
// copies stay visible to the node's processes.
var ignitionSeeds = map[string]bool{"etc/passwd": true, "etc/group": true, "etc/shadow": true, "etc/gshadow": true, "etc/selinux": true}

// Mount builds the node's view of the filesystem in this (private) mount namespace: the rendered paths at their
// real places, a fresh /run (tmpfs, as after a boot), /var/log on the node's disk, /proc of the node's PID
// namespace, /etc/resolv.conf pointing nowhere, and /usr/bin with the kubelet and kubectl (overrides.go). It
// refuses outside private network, mount and PID namespaces. Call ConfigureNetns first: once /proc is remounted,
// /proc/1 is this process and the host references are gone.
func (n *Node) Mount() error {
	for _, check := range []func() error{CheckPrivateNetns, CheckPrivateMntns, CheckPrivatePidns} {
		if err := check(); err != nil {
			return err
		}
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	// The node's own disk: directories Ignition does not write but the node keeps across boots.
	for _, d := range []string{"var/lib/etcd", "var/lib/containerd", "var/lib/kubelet", "var/log", "etc/kubernetes/manifests"} {
		if err := os.MkdirAll(filepath.Join(n.Root, d), 0o755); err != nil {
			return err
		}
	}
	if n.HostView != "" {
		for _, top := range overlaid() {
			// Not recursive: the directory itself, as an overlay's lower layer takes it (without what is mounted below).
			dst := filepath.Join(n.HostView, top)
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			if err := syscall.Mount("/"+top, dst, "", syscall.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind /%s over %s: %w", top, dst, err)
			}
		}
	}
	for _, top := range overlaid() {
		if err := n.overlay("/" + top); err != nil {
			return err
		}
	}
	for _, top := range nodeTops {
		entries, err := os.ReadDir(filepath.Join(n.Root, top))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			rel := top + "/" + e.Name()
			if ignitionSeeds[rel] || (top == "usr/local" && e.Name() == "go") {
				continue
			}
			if err := bind(filepath.Join(n.Root, rel), "/"+rel); err != nil {
				return err
			}
		}
	}
	if err := bind(filepath.Join(n.Root, "var/log"), "/var/log"); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", "/run", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=755"); err != nil {
		return fmt.Errorf("tmpfs on /run: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("proc on /proc: %w", err)
	}
	return applyFileOverrides(n)
}

// overlaid are the directories Mount overlays: nodeTops, /usr/bin and /usr/libexec (the CNI plugins, overrides.go).
func overlaid() []string { return append(append([]string{}, nodeTops...), "usr/bin", "usr/libexec") }

// overlay mounts an overlay over dir: the host's dir read-only below (from Lower when set), this boot's changes in
// Work above.
func (n *Node) overlay(dir string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("overlay %s: not a directory on this machine", dir)
	}
	lower := dir
	if n.Lower != "" {
		lower = filepath.Join(n.Lower, dir)
		if st, err := os.Stat(lower); err != nil || !st.IsDir() {
			return fmt.Errorf("overlay %s: the host's directory is not at %s", dir, lower)
		}
	}
	base := filepath.Join(n.Work, "overlay", strings.ReplaceAll(strings.Trim(dir, "/"), "/", "_"))
	upper, work := filepath.Join(base, "upper"), filepath.Join(base, "work")
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	if err := syscall.Mount("overlay", dir, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay on %s: %w", dir, err)
	}
	return nil
}

// bind bind-mounts src over dst, creating dst (a directory or an empty file, like src) when missing.
func bind(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
		if st.IsDir() {
			err = os.MkdirAll(dst, 0o755)
		} else {
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				err = os.WriteFile(dst, nil, 0o644)
			}
		}
		if err != nil {
			return fmt.Errorf("mount point %s: %w", dst, err)
		}
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s over %s: %w", src, dst, err)
	}
	return nil
}

// writeFile writes a file of the node's view (under an overlay), replacing what is there.
func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	os.Remove(path)
	return os.WriteFile(path, data, mode)
}

// nodeCommand is argv as the node runs it: the node's PATH and HOME, then env; in its own process group, and it
// dies with this process (the PID namespace's init).
func nodeCommand(ctx context.Context, env []string, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// openLog opens a log file for appending, creating it and its directory.
func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// start starts a node process with its output in LogDir/<name>.log. It is a child of this process (the PID
// namespace's init), dies with it, and is stopped by its PID.
func (n *Node) start(name string, argv, env []string) (*exec.Cmd, error) {
	f, err := openLog(filepath.Join(n.LogDir(), name+".log"))
	if err != nil {
		return nil, err
	}
	n.logs = append(n.logs, f)
	cmd := nodeCommand(context.Background(), env, argv...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	n.Logf("started %s (pid %d): %s", name, cmd.Process.Pid, strings.Join(argv, " "))
	return cmd, nil
}

// StartContainerd writes containerd's configuration (overrides.go says why each setting) and starts it, then
// waits (bounded) for its socket.
func (n *Node) StartContainerd(ctx context.Context) error {
	if err := n.registryHosts(); err != nil {
		return err
	}
	cfg, err := containerdConfig(n)
	if err != nil {
		return err
	}
	path := filepath.Join(n.Work, "containerd.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(n.CRISocket), 0o755); err != nil {
		return err
	}
	n.containerd, err = n.start("containerd", []string{"containerd", "--config", path}, nil)
	if err != nil {
		return err
	}
	return poll(ctx, 30*time.Second, 100*time.Millisecond, func(context.Context) (bool, error) {
		if n.containerd.ProcessState != nil {
			return false, fmt.Errorf("containerd exited: %s", tail(filepath.Join(n.LogDir(), "containerd.log"), 20))
		}
		_, err := os.Stat(n.CRISocket)
		return err == nil, nil
	})
}

// registryHosts gives containerd, which does not read /etc/containers/registries.conf, the registry hosts the
// rendered one sends the node's images to (mirror.go: ContainerdHosts), as hosts.toml files under
// Work/certs.d (RegistryHosts). Without a rendered registries.conf it does nothing: each image comes from its own
// registry, containerd's default.
func (n *Node) registryHosts() error {
	conf, err := RegistriesConf("/")
	if err != nil || conf == nil {
		return err
	}
	images, err := NodePullImages("/", n.ExtraImages...)
	if err != nil {
		return err
	}
	pulls, err := registries.Resolve(conf, images)
	if err != nil {
		return fmt.Errorf("the rendered /etc/containers/registries.conf: %w", err)
	}
	hosts, err := ContainerdHosts(pulls, mirrorScheme)
	if err != nil {
		return err
	}
	dir := filepath.Join(n.Work, "certs.d")
	written, err := WriteContainerdHosts(dir, hosts)
	if err != nil {
		return err
	}
	n.RegistryHosts = dir
	n.Logf("containerd's registry hosts, from the rendered /etc/containers/registries.conf for %d images:\n%s", len(images), written)
	return nil
}

// ImportImages imports an image archive into containerd's k8s.io namespace (the CRI plugin's).
func (n *Node) ImportImages(ctx context.Context, archive string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", "--address", n.CRISocket, "--namespace", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w\n%s", archive, err, out)
	}
	n.Logf("imported %s:\n%s", filepath.Base(archive), strings.TrimSpace(string(out)))
	return nil
}

// KubeletUnit is what the rendered kubelet.service says to run.
type KubeletUnit struct {
	Pre   [][]string // ExecStartPre, in order
	Start []string   // ExecStart
}

// ReadKubeletUnit parses the rendered kubelet.service (continuation lines joined, systemd quoting).
func ReadKubeletUnit(root string) (*KubeletUnit, error) {
	p := filepath.Join(root, "etc", "systemd", "system", "kubelet.service")
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	u := &KubeletUnit{}
	joined := strings.ReplaceAll(string(data), "\\\n", " ")
	sc := bufio.NewScanner(strings.NewReader(joined))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "ExecStartPre="); ok {
			u.Pre = append(u.Pre, systemdWords(strings.TrimLeft(v, "-@+!:")))
		}
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			u.Start = systemdWords(strings.TrimLeft(v, "-@+!:"))
		}
	}
	if len(u.Start) == 0 {
		return nil, fmt.Errorf("%s has no ExecStart", p)
	}
	return u, nil
}

// StartKubelet runs the rendered unit's ExecStartPre commands, then its ExecStart (with the flag overrides of
// overrides.go applied and printed).
func (n *Node) StartKubelet(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startKubelet(ctx)
}

func (n *Node) startKubelet(ctx context.Context) error {
	u, err := ReadKubeletUnit("/")
	if err != nil {
		return err
	}
	for _, pre := range u.Pre {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := exec.CommandContext(pctx, pre[0], pre[1:]...).CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("ExecStartPre %s: %w: %s", strings.Join(pre, " "), err, out)
		}
	}
	n.KubeletArgv = applyFlagOverrides(u.Start)
	if n.KubeletStart.IsZero() {
		n.KubeletStart = time.Now()
	} else {
		n.KubeletRestarts = append(n.KubeletRestarts, time.Now())
	}
	n.kubelet, err = n.start("kubelet", n.KubeletArgv, nil)
	n.kubeletDown = false
	return err
}

// StopKubelet stops the kubelet as systemd stops its unit (SIGTERM, SIGKILL after 20 s); its pods go on running.
func (n *Node) StopKubelet() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.kubelet != nil {
		stopProcess(n.kubelet, 20*time.Second)
		n.kubelet = nil
	}
	n.kubeletDown = true
}

// RestartKubelet starts the kubelet again (stopping it first if it runs and restart is set, as `systemctl
// restart` does; `systemctl start` of a running kubelet does nothing).
func (n *Node) RestartKubelet(ctx context.Context, restart bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.kubelet != nil {
		if !restart {
			return nil
		}
		stopProcess(n.kubelet, 20*time.Second)
		n.kubelet = nil
	}
	return n.startKubelet(ctx)
}

// KubeletRunning reports an error when the kubelet has exited, with its log's tail (not when it was stopped on
// request).
func (n *Node) KubeletRunning() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.kubeletDown {
		return nil
	}
	if n.kubelet == nil {
		return errors.New("the kubelet was not started")
	}
	var ws syscall.WaitStatus
	pid, err := syscall.Wait4(n.kubelet.Process.Pid, &ws, syscall.WNOHANG, nil)
	if err == nil && pid == n.kubelet.Process.Pid {
		n.kubelet = nil
		return fmt.Errorf("the kubelet exited (%v):\n%s", ws, tail(filepath.Join(n.LogDir(), "kubelet.log"), 30))
	}
	return nil
}

// Stop takes the node down the way a shutdown does, each step bounded and every process by its PID: the kubelet
// (SIGTERM, then SIGKILL), every pod sandbox through the CRI (its containers stop, then it is removed, so the
// runtime's shims exit), then containerd. It returns what needed force.
func (n *Node) Stop(ctx context.Context) []string {
	var forced []string
	n.mu.Lock()
	if n.kubelet != nil {
		if stopProcess(n.kubelet, 20*time.Second) {
			forced = append(forced, "kubelet")
		}
		n.kubelet = nil
	}
	n.kubeletDown = true
	n.mu.Unlock()
	if n.containerd != nil {
		if err := StopAllPods(ctx, n.CRISocket, 60*time.Second); err != nil {
			n.Logf("stopping pods through the CRI: %v", err)
			forced = append(forced, "pods")
		}
		if stopProcess(n.containerd, 20*time.Second) {
			forced = append(forced, "containerd")
		}
		n.containerd = nil
	}
	for _, f := range n.logs {
		f.Close()
	}
	n.logs = nil
	return forced
}

// Reap waits (bounded) until no other process is left in the node's PID namespace, reaping the exited ones
// (this process is the namespace's init, so the runtime's shims are re-parented to it when containerd stops), and
// SIGKILLs by PID whatever is still there at the bound, then waits (bounded again) until those are gone too, so
// that the node's cgroups are empty when this process exits. It returns what it had to kill.
func (n *Node) Reap(bound time.Duration) map[int]string {
	if n.reapUntil(bound) {
		return nil
	}
	left := NodeProcesses()
	for pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	n.reapUntil(30 * time.Second)
	return left
}

// reapUntil reaps exited children until no other process is left in the PID namespace (true) or bound passes.
func (n *Node) reapUntil(bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err != nil || pid <= 0 {
				break
			}
		}
		if len(NodeProcesses()) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopProcess sends SIGTERM to a process this test started, waits up to grace, then SIGKILLs it. It reports
// whether SIGKILL was needed.
func stopProcess(cmd *exec.Cmd, grace time.Duration) bool {
	if cmd.Process == nil {
		return false
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return false
	case <-time.After(grace):
		cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		return true
	}
}

// NodeProcesses lists the processes of the node's PID namespace other than this one: pid → command name.
func NodeProcesses() map[int]string {
	out := map[int]string{}
	for pid, p := range readProcs() {
		if pid != os.Getpid() {
			out[pid] = p.comm
		}
	}
	return out
}

// PeakRSS reads the peak resident set (VmHWM) of every node process whose command name is one of names, in MiB.
func PeakRSS(names ...string) map[string]float64 {
	out := map[string]float64{}
	for pid, comm := range NodeProcesses() {
		for _, n := range names {
			if !strings.HasPrefix(n, comm) { // comm is cut at 15 characters
				continue
			}
			f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
					kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
					if mb := kb / 1024; mb > out[n] {
						out[n] = mb
					}
				}
			}
			f.Close()
		}
	}
	return out
}

// kubeletConfigPath is the --config the rendered ExecStart passes.
func kubeletConfigPath(argv []string) string {
	for _, a := range argv {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v
		}
	}
	return ""
}

// readYAML reads a YAML (or JSON: YAML holds it) file into v.
func readYAML(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// crioPauseImage is pause_image of the rendered CRI-O drop-ins (/etc/crio/crio.conf.d/*).
func crioPauseImage(root string) (string, error) {
	v, err := crioSetting(root, "pause_image")
	if err == nil && v == "" {
		err = fmt.Errorf("no pause_image in %s/etc/crio/crio.conf.d", root)
	}
	return strings.Trim(v, `"`), err
}

// crioSetting is the value of key in the rendered CRI-O drop-ins (/etc/crio/crio.conf.d/*), as written (a string
// keeps its quotes, an array its brackets); "" when no drop-in sets it.
func crioSetting(root, key string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(root, "etc", "crio", "crio.conf.d", "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		for _, line := range strings.Split(string(data), "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
			if ok && strings.TrimSpace(k) == key {
				return strings.TrimSpace(v), nil
			}
		}
	}
	return "", nil
}

// crioStrings reads a TOML string or array of strings as CRI-O's drop-in writes them ("a" or ["a", "b"]).
func crioStrings(v string) []string {
	var out []string
	for _, f := range strings.Split(strings.Trim(strings.TrimSpace(v), "[]"), ",") {
		if f = strings.Trim(strings.TrimSpace(f), `"`); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// poll calls f every interval until it reports done, fails, or timeout passes; the last error is reported.
func poll(ctx context.Context, timeout, interval time.Duration, f func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
		done, err := f(rctx)
		rcancel()
		if done && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = errors.New("condition not met")
			}
			return fmt.Errorf("after %s: %w", timeout, last)
		case <-time.After(interval):
		}
	}
}

// systemdWords splits a unit's value the way systemd does for Environment= and ExecStart=: on whitespace,
// with "double" or 'single' quotes around a word and backslash escapes.
func systemdWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, quote, esc := false, byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			cur.WriteByte(c)
			esc = false
		case c == '\\':
			esc, in = true, true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}
