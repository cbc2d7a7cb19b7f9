package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A machine on the node's network that is not the node (issue 37's checks: a NodePort reached from outside the
// node's network namespace, a pod reaching an address of the machine network outside the node): a network
// namespace of its own, linked to the node's like a worker (LinkWorker: a veth pair whose host end is on the bridge
// inside the node's network namespace, nothing in the host's), with an address of the machine network in each of
// the node's families, and an HTTP server there that answers with its name and records who called.

// outsideLink is the name of the outside machine's end of its link in the node's network namespace.
const outsideLink = "aio-out"

// OutsideName is what the outside machine's HTTP server answers.
const OutsideName = "outside"

// Outside is the machine: its namespace's holder process (by PID), its addresses, the calls its server got.
type Outside struct {
	Addrs  []NodeAddress
	holder *exec.Cmd
	srv    *http.Server
	mu     sync.Mutex
	peers  []string // the remote addresses of the calls, in order
}

// NetnsPath is the outside machine's network namespace.
func (o *Outside) NetnsPath() string { return fmt.Sprintf("/proc/%d/ns/net", o.holder.Process.Pid) }

// StartOutside makes the outside machine from the node's network namespace (it refuses from any other, as
// LinkWorker does), with addrs, and its HTTP server on port.
func StartOutside(ctx context.Context, addrs []NodeAddress, port int) (*Outside, error) {
	// A process holds the new network namespace (sleep, ended by its PID in Stop; it ends with the node's PID
	// namespace at the latest, whose init this test is).
	holder := exec.Command("sleep", "infinity")
	holder.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Setpgid: true}
	if err := holder.Start(); err != nil {
		return nil, fmt.Errorf("the outside machine's namespace: %w", err)
	}
	o := &Outside{Addrs: addrs, holder: holder}
	if err := LinkWorker(ctx, holder.Process.Pid, outsideLink); err != nil {
		o.Stop()
		return nil, err
	}
	if err := addressPeer(ctx, o.NetnsPath(), addrs); err != nil {
		o.Stop()
		return nil, fmt.Errorf("outside: %w", err)
	}
	var l net.Listener
	err := poll(ctx, 10*time.Second, 100*time.Millisecond, func(context.Context) (bool, error) {
		return true, InNetns(o.NetnsPath(), func() error {
			var err error
			l, err = net.Listen("tcp", net.JoinHostPort("::", strconv.Itoa(port)))
			return err
		})
	})
	if err != nil {
		o.Stop()
		return nil, fmt.Errorf("outside: listen: %w", err)
	}
	o.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.peers = append(o.peers, r.RemoteAddr)
		o.mu.Unlock()
		fmt.Fprint(w, OutsideName)
	})}
	go o.srv.Serve(l)
	return o, nil
}

// Peers are the remote addresses the server saw (the source addresses after the node's masquerade).
func (o *Outside) Peers() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.peers...)
}

// Stop ends the server and the namespace's holder (by PID): the namespace and its link go with it.
func (o *Outside) Stop() {
	if o.srv != nil {
		o.srv.Close()
	}
	if o.holder != nil && o.holder.Process != nil {
		o.holder.Process.Kill()
		o.holder.Wait()
	}
}

// InNetns runs f on an OS thread that entered the network namespace at path: sockets f creates (net.Dial,
// net.Listen) belong to that namespace, wherever they are used later. The thread goes back to this process's own
// namespace before it is handed back to the Go runtime. It must not end instead: a process this test started with
// Pdeathsig (the kubelet, containerd: nodeCommand) is killed when the thread that forked it exits, and any thread
// may have. Only when going back fails is it left locked, to end with its goroutine.
func InNetns(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer self.Close()
		fd, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer fd.Close()
		if err := unix.Setns(int(fd.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("back from %s: %w (the thread ends)", path, err) // still locked: it exits with this goroutine
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// HTTPGet does one GET of path at addr (host:port) over a connection made in the network namespace at netns ("" for
// this process's own), bounded by timeout, and returns the body of a 200 answer.
func HTTPGet(netns, addr, path string, timeout time.Duration) (string, error) {
	var conn net.Conn
	dial := func() error {
		var err error
		conn, err = net.DialTimeout("tcp", addr, timeout)
		return err
	}
	var err error
	if netns == "" {
		err = dial()
	} else {
		err = InNetns(netns, dial)
	}
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	host, _, _ := net.SplitHostPort(addr)
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET http://%s%s: %s: %s", addr, path, resp.Status, body)
	}
	return string(body), nil
}

// OutsideAddrs are the outside machine's addresses: the node's, each moved on by offset in its machine network.
func OutsideAddrs(node []NodeAddress, offset int) ([]NodeAddress, error) {
	var out []NodeAddress
	for _, a := range node {
		ip := a.IP
		for i := 0; i < offset; i++ {
			ip = ip.Next()
		}
		if !netip.PrefixFrom(a.IP, a.Prefix).Masked().Contains(ip) {
			return nil, fmt.Errorf("%s + %d leaves its machine network", a, offset)
		}
		out = append(out, NodeAddress{IP: ip, Prefix: a.Prefix})
	}
	return out, nil
}
