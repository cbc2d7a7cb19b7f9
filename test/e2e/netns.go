package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Environment variables between the test that creates the namespaces (outer) and the test binary it
// re-executes inside them (inner).
const (
	// EnvInner names the JSON file describing the inner run; set only in the re-executed test binary.
	EnvInner = "RENDER_STATIC_E2E_INNER"
	// EnvHostNetns carries the outer process's network namespace link (net:[N]), a second reference besides
	// /proc/1/ns/net, which a sandbox may not let us read.
	EnvHostNetns = "RENDER_STATIC_E2E_HOST_NETNS"
	// EnvHostMntns is the same for the mount namespace.
	EnvHostMntns = "RENDER_STATIC_E2E_HOST_MNTNS"
	// EnvHostPidns is the same for the PID namespace.
	EnvHostPidns = "RENDER_STATIC_E2E_HOST_PIDNS"
)

// nsLink reads /proc/<pid>/ns/<kind> ("net:[4026531833]").
func nsLink(pid, kind string) (string, error) {
	return os.Readlink(filepath.Join("/proc", pid, "ns", kind))
}

// hostNamespaceRefs returns the links that stand for the host's namespace of a kind: /proc/1/ns/<kind> when
// readable; otherwise (a sandbox may deny it even to root) that of the oldest ancestor whose link is readable;
// plus the link the creating process passed down in env (EnvHostNetns/EnvHostMntns).
func hostNamespaceRefs(kind, env string) []string {
	var refs []string
	if l, err := nsLink("1", kind); err == nil {
		refs = append(refs, l)
	} else {
		oldest := ""
		pid := os.Getppid()
		for i := 0; i < 64 && pid > 1; i++ {
			if l, err := nsLink(strconv.Itoa(pid), kind); err == nil {
				oldest = l
			}
			next, err := parentPID(pid)
			if err != nil {
				break
			}
			pid = next
		}
		if oldest != "" {
			refs = append(refs, oldest)
		}
	}
	// The creating process's own namespace, and (a worker started by a node) the references it was given in turn:
	// a comma-separated list, so that a nested node refuses every namespace above it, the host's first.
	for _, v := range strings.Split(os.Getenv(env), ",") {
		if v != "" {
			refs = append(refs, v)
		}
	}
	return refs
}

func parentPID(pid int) (int, error) {
	p, err := readProc(pid)
	return p.ppid, err
}

// proc is a line of /proc/<pid>/stat, in the numbers of this process's PID namespace.
type proc struct {
	pid, ppid, pgrp, tpgid int
	state                  byte
	comm                   string
}

// readProc reads /proc/<pid>/stat (the command may contain spaces and parentheses).
func readProc(pid int) (proc, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return proc{}, err
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return proc{}, fmt.Errorf("bad stat for %d", pid)
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 6 {
		return proc{}, fmt.Errorf("bad stat for %d", pid)
	}
	p := proc{pid: pid, comm: s[open+1 : end], state: f[0][0]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgrp, _ = strconv.Atoi(f[2])
	p.tpgid, _ = strconv.Atoi(f[5])
	return p, nil
}

// readProcs reads every process of /proc (those of this process's PID namespace and the ones below it).
func readProcs() map[int]proc {
	out := map[int]proc{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, err := readProc(pid); err == nil {
				out[pid] = p
			}
		}
	}
	return out
}

// checkPrivate refuses when this process's namespace of kind is the host's or cannot be told apart from it.
func checkPrivate(kind, env string) error {
	self, err := nsLink("self", kind)
	if err != nil {
		return fmt.Errorf("refusing: cannot read /proc/self/ns/%s: %w", kind, err)
	}
	refs := hostNamespaceRefs(kind, env)
	if len(refs) == 0 {
		return fmt.Errorf("refusing: no reference for the host's %s namespace (/proc/1/ns/%s and every ancestor unreadable, %s unset)", kind, kind, env)
	}
	for _, r := range refs {
		if r == self {
			return fmt.Errorf("refusing to run in the host's %s namespace (%s): the harness must run inside the private namespaces it creates (see netns.go)", kind, self)
		}
	}
	return nil
}

// CheckPrivateNetns refuses (returns an error) when /proc/self/ns/net is the host's: the same link target as
// /proc/1/ns/net, or, where that is unreadable, as the oldest readable ancestor's or the one the creating
// process recorded. The rendered control plane talks to the node IP, api and api-int: that traffic must
// stay inside a namespace the test created.
func CheckPrivateNetns() error { return checkPrivate("net", EnvHostNetns) }

// CheckPrivateMntns is the same for the mount namespace: the harness bind-mounts over /etc/hosts.
func CheckPrivateMntns() error { return checkPrivate("mnt", EnvHostMntns) }

// CheckPrivatePidns is the same for the PID namespace: the kubelet moves every process it sees into its
// cgroups, so it must see only the node's own.
func CheckPrivatePidns() error { return checkPrivate("pid", EnvHostPidns) }

// NodeAddress is one node IP with the prefix length of its machine network.
type NodeAddress struct {
	IP     netip.Addr
	Prefix int
}

func (a NodeAddress) String() string { return netip.PrefixFrom(a.IP, a.Prefix).String() }

// ConfigureNetns sets up the private network namespace: loopback up, a veth pair (eth0, eth0p; this kernel
// has no dummy link type) with both ends inside the namespace, the node addresses on eth0 and default routes
// into it, so nothing ever leaves. It refuses unless the namespace is private and fresh (only lo).
func ConfigureNetns(ctx context.Context, addrs []NodeAddress) error {
	if err := CheckPrivateNetns(); err != nil {
		return err
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		if i.Name != "lo" {
			return fmt.Errorf("refusing: the network namespace is not fresh (it has %s)", i.Name)
		}
	}
	return addressNetns(ctx, addrs, [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"},
		{"link", "set", "eth0p", "up"},
		{"link", "set", "eth0", "up"},
	})
}

// addressNetns runs the ip commands cmds, then puts the node addresses on eth0 with default routes into it, and
// waits (bounded) until the addresses are usable.
func addressNetns(ctx context.Context, addrs []NodeAddress, cmds [][]string) error {
	have4, have6 := false, false
	for _, a := range addrs {
		if a.IP.Is4() {
			cmds = append(cmds, []string{"-4", "addr", "add", a.String(), "dev", "eth0"})
			have4 = true
		} else {
			cmds = append(cmds, []string{"-6", "addr", "add", a.String(), "dev", "eth0", "nodad"})
			have6 = true
		}
	}
	if have4 {
		cmds = append(cmds, []string{"-4", "route", "add", "default", "dev", "eth0"})
	}
	if have6 {
		cmds = append(cmds, []string{"-6", "route", "add", "default", "dev", "eth0"})
	}
	if err := runIP(ctx, cmds...); err != nil {
		return err
	}
	// IPv6 addresses can stay tentative for a moment even with nodad; wait (bounded) until they are usable.
	deadline := time.Now().Add(10 * time.Second)
	for _, a := range addrs {
		for {
			l, err := net.Listen("tcp", net.JoinHostPort(a.IP.String(), "0"))
			if err == nil {
				l.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node address %s not usable: %w", a, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// runIP runs ip (iproute2) with each argument list in turn, each bounded.
func runIP(ctx context.Context, cmds ...[]string) error {
	ip, err := exec.LookPath("ip")
	if err != nil {
		return fmt.Errorf("ip (iproute2) not on PATH: run hack/install-test-deps.sh")
	}
	for _, c := range cmds {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, err := exec.CommandContext(cctx, ip, c...).CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(c, " "), err, out)
		}
	}
	return nil
}

// The link between a control-plane node and a worker (worker.go), or the outside machine (outside.go): a switch,
// a network namespace of its own holding a bridge, takes eth0p, the other end of the control-plane node's eth0, and
// one end of a veth pair per worker, whose other end is eth0 in the worker's network namespace. Nothing of it is in
// the host's namespace: the control-plane node's test makes the switch (a process holding a new network namespace,
// in the node's PID namespace) and moves eth0p there, and each pair is made in the switch with its peer created
// straight in the worker's namespace. The bridge is not in the node's own network namespace: the pod network
// turns bridge netfilter on there (aio-pod-network), and a bridge there would hand the frames between the nodes to
// the node's iptables (kube-proxy's NodePort DNAT on a bridged frame), as no real node's switch does.
const (
	nodeBridge = "aio-br0"
	workerLink = "aio-wk"
)

// nodeSwitch is this node's switch (made by the first LinkWorker), or nil.
var nodeSwitch *exec.Cmd

// switchNetns is the switch's network namespace.
func switchNetns() string { return fmt.Sprintf("/proc/%d/ns/net", nodeSwitch.Process.Pid) }

// inSwitch runs ip commands in the switch's network namespace, each bounded.
func inSwitch(ctx context.Context, cmds ...[]string) error {
	for _, c := range cmds {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, err := exec.CommandContext(cctx, "nsenter", append([]string{"--net=" + switchNetns()}, c...)...).CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("in the switch: %s: %w: %s", strings.Join(c, " "), err, out)
		}
	}
	return nil
}

// startSwitch makes the switch: a process holding a new network namespace (no Pdeathsig: it ends by its PID in
// StopSwitch, or with the node's PID namespace), eth0p moved there onto a bridge, bridge netfilter off there.
func startSwitch(ctx context.Context) error {
	holder := exec.Command("sleep", "infinity")
	holder.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Setpgid: true}
	if err := holder.Start(); err != nil {
		return fmt.Errorf("the switch's namespace: %w", err)
	}
	nodeSwitch = holder
	if err := runIP(ctx, []string{"link", "set", "eth0p", "netns", strconv.Itoa(holder.Process.Pid)}); err != nil {
		StopSwitch()
		return err
	}
	// No multicast snooping: IPv6 neighbour solicitations must reach every port, with no querier here.
	err := inSwitch(ctx, []string{"ip", "link", "set", "lo", "up"},
		[]string{"ip", "link", "add", nodeBridge, "type", "bridge", "mcast_snooping", "0"},
		[]string{"ip", "link", "set", "eth0p", "master", nodeBridge}, []string{"ip", "link", "set", "eth0p", "up"},
		[]string{"ip", "link", "set", nodeBridge, "up"},
		[]string{"sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=0", "net.bridge.bridge-nf-call-ip6tables=0", "net.bridge.bridge-nf-call-arptables=0"})
	if err != nil {
		StopSwitch()
	}
	return err
}

// StopSwitch ends the switch's holder by its PID (its namespace, bridge and links go with it).
func StopSwitch() {
	if nodeSwitch != nil {
		nodeSwitch.Process.Kill()
		nodeSwitch.Wait()
		nodeSwitch = nil
	}
}

// LinkWorker connects the network namespace of process pid (a worker's, started by this control-plane node, or the
// outside machine's) to this node's network through the switch (made once): a veth pair, link in the switch and
// eth0 there. It runs in a node whose /proc is its own PID namespace's (Node.Mount), so /proc/1 is the node itself:
// it refuses unless this network namespace differs from every one its creator passed down (EnvHostNetns: the
// host's) and is a node's.
func LinkWorker(ctx context.Context, pid int, link string) error {
	self, err := nsLink("self", "net")
	if err != nil {
		return fmt.Errorf("refusing: cannot read /proc/self/ns/net: %w", err)
	}
	above := strings.Split(os.Getenv(EnvHostNetns), ",")
	if os.Getenv(EnvHostNetns) == "" {
		return fmt.Errorf("refusing: %s is not set: no reference for the host's network namespace", EnvHostNetns)
	}
	if slices.Contains(above, self) {
		return fmt.Errorf("refusing to link a worker from the host's net namespace (%s)", self)
	}
	if nodeSwitch == nil {
		if _, err := net.InterfaceByName("eth0p"); err != nil {
			return fmt.Errorf("refusing: this network namespace has no eth0p (it is not a node's, ConfigureNetns): %w", err)
		}
		if err := startSwitch(ctx); err != nil {
			return err
		}
	}
	return inSwitch(ctx, []string{"ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", strconv.Itoa(pid)},
		[]string{"ip", "link", "set", link, "master", nodeBridge}, []string{"ip", "link", "set", link, "up"})
}

// JoinNetns sets up a worker's private network namespace once its control-plane node linked it (LinkWorker):
// it waits (bounded) for eth0, refuses a namespace that is the host's (or the control-plane node's) or holds any
// other link, and puts the worker's addresses on eth0 with default routes into it.
func JoinNetns(ctx context.Context, addrs []NodeAddress, wait time.Duration) error {
	if err := CheckPrivateNetns(); err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for {
		ifs, err := net.Interfaces()
		if err != nil {
			return err
		}
		eth0 := false
		for _, i := range ifs {
			switch i.Name {
			case "lo":
			case "eth0":
				eth0 = true
			default:
				return fmt.Errorf("refusing: the worker's network namespace is not fresh (it has %s)", i.Name)
			}
		}
		if eth0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the control-plane node linked no eth0 into the worker's network namespace within %s", wait)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return addressNetns(ctx, addrs, [][]string{{"link", "set", "lo", "up"}, {"link", "set", "eth0", "up"}})
}

// PrivateEtc makes every mount private to this (already private) mount namespace and bind-mounts files with
// the given contents over /etc/hosts and /etc/resolv.conf, so api.<domain> and api-int.<domain> resolve to
// the node IP for this process and its children, and no lookup tries a real name server.
func PrivateEtc(work, hosts string) error {
	if err := CheckPrivateMntns(); err != nil {
		return err
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	for name, content := range map[string]string{"hosts": hosts, "resolv.conf": "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"} {
		src := filepath.Join(work, "etc-"+name)
		if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
			return err
		}
		dst := filepath.Join("/etc", name)
		if st, err := os.Lstat(dst); err != nil || st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is missing or a symlink; cannot bind over it", dst)
		}
		if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s over %s: %w", src, dst, err)
		}
	}
	return nil
}

// HostsFile renders /etc/hosts for the namespace: localhost, and every name on the node addresses.
func HostsFile(addrs []NodeAddress, names ...string) string {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for _, a := range addrs {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(names, " "))
	}
	return b.String()
}

// InnerCommand re-executes the running test binary so that only the test named testName runs, inside new
// network, mount and PID namespaces (the equivalent of `unshare --net --mount --pid --fork`). innerSpec is a file the inner
// test reads (EnvInner). The child dies with this process (Pdeathsig).
func InnerCommand(ctx context.Context, testName, innerSpec string, timeout time.Duration) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	hostNet, err := nsLink("self", "net")
	if err != nil {
		return nil, err
	}
	hostMnt, err := nsLink("self", "mnt")
	if err != nil {
		return nil, err
	}
	hostPid, err := nsLink("self", "pid")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "-test.run=^"+testName+"$", "-test.v", "-test.count=1",
		"-test.timeout="+timeout.String())
	// This process's namespaces, and those above it (a control-plane node starting a worker passes the host's on).
	above := func(self, env string) string {
		if v := os.Getenv(env); v != "" {
			return self + "," + v
		}
		return self
	}
	cmd.Env = append(filteredEnv(EnvInner, EnvHostNetns, EnvHostMntns, EnvHostPidns),
		EnvInner+"="+innerSpec, EnvHostNetns+"="+above(hostNet, EnvHostNetns), EnvHostMntns+"="+above(hostMnt, EnvHostMntns),
		EnvHostPidns+"="+above(hostPid, EnvHostPidns))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// The inner test is the init (PID 1) of its PID namespace: when it ends, the kernel ends every process
		// of the node with it.
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	// Everything the inner test started is in its own process group or dies with it (Pdeathsig); on
	// cancellation kill the inner test binary by its PID.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	cmd.WaitDelay = 30 * time.Second
	return cmd, nil
}

// logLines sends cmd's standard output and error to logf a line at a time; the caller closes pw once cmd ended,
// and done is closed once every line was handed over.
func logLines(cmd *exec.Cmd, logf func(string, ...any)) (pw *io.PipeWriter, done chan struct{}) {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	done = make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			logf("%s", sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	return pw, done
}

// RunInner runs InnerCommand and hands every output line to logf as it comes.
func RunInner(ctx context.Context, testName, innerSpec string, timeout time.Duration, logf func(string, ...any)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	cmd, err := InnerCommand(ctx, testName, innerSpec, timeout)
	if err != nil {
		return err
	}
	pw, done := logLines(cmd, logf)
	err = cmd.Run()
	pw.Close()
	<-done
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("inner test %s failed: %v", testName, ee)
	}
	return err
}
