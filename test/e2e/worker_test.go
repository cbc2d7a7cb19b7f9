package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The worker end to end (seed 004, issue 27), day 2: once the control-plane node's reboot passed its checks, the
// test does what an admin does: `render-static worker` on the render directory, the update it makes applied on
// the control-plane node with aio-update, the worker's worker.ign laid by Ignition into a root of its own, and the
// worker booted there in network, mount and PID namespaces of its own (started by the control-plane node's test
// process, PID 1 of that node's namespaces), linked to the control-plane node by a veth pair on a switch, a network
// namespace of the control-plane node's test (netns.go): nothing in the host's. Then: its Node carries the worker role and its
// kubelet heartbeats into it; the rendered CSR approver approves its serving certificate; the scheduler places a
// host-network pod on it (it tolerates every taint: it checks the kubelet, not the pod network); its log and an
// exec reach it through the API (kube-apiserver -> the worker's kubelet over that certificate); the worker
// reboots (its namespaces ended, new ones on the same root) and all of it works again; `render-static renew
// --force` and `aio-update apply` renew every leaf of the control plane, which rolls etcd and kube-apiserver, and
// the worker still works.

// workerPhase is the inner phase of a worker's boot.
const workerPhase = "worker"

// workerSpec is the worker a control-plane case adds on day 2.
type workerSpec struct {
	Name  string   `json:"name"`
	IPs   string   `json:"ips"`   // as --node-ip
	Addrs []string `json:"addrs"` // CIDR: each IP with its machine network's prefix
}

// workerPodName is the host-network pod the test runs on the worker.
const workerPodName = "on-worker"

// innerAddWorker: day 2 on the running control-plane node n (see the comment at the top).
func innerAddWorker(t *testing.T, spec *innerSpec, n *Node, cs *kubernetes.Clientset) {
	tm := newTimings("upstream/" + spec.Case + " (worker " + spec.Worker.Name + ")")
	defer func() { t.Log(tm.String()) }()
	ctx := context.Background()
	w := spec.Worker
	renderDir := filepath.Dir(filepath.Dir(spec.Kubeconfig))
	tm.step("render-static-worker", func() {
		argv := []string{spec.CLI, "worker", "--dir", renderDir, "--node-name", w.Name, "--node-ip", w.IPs}
		out, err := RunLogged(ctx, 5*time.Minute, filepath.Join(n.LogDir(), "worker.log"), nil, argv...)
		t.Logf("%s:\n%s", strings.Join(argv[1:], " "), out)
		if err != nil {
			t.Fatal(err)
		}
	})
	copyUpdate(t, tm, "update:", filepath.Join(renderDir, "update"), "/root/aio-update-"+w.Name)
	applyUpdate(t, n, tm, "update:", "/root/aio-update-"+w.Name)
	checkApproverKnows(t, w)
	checkDeclaredNode(t, cs, w)

	root := filepath.Join(spec.Work, "root-"+w.Name)
	tm.step("ignition", func() {
		ign := filepath.Join(renderDir, "workers", w.Name, "worker.ign")
		if err := ValidateIgnition(ctx, ign); err != nil {
			t.Fatal(err)
		}
		res, err := Ignite(ctx, ign, root, filepath.Join(spec.Work, "ignition-"+w.Name))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ignition laid %s into %s in %.1fs", ign, root, res.Duration.Seconds())
	})
	etcdImage := staticPodImage(t, "etcd")

	// The first boot.
	wk := startWorker(t, spec, n, root, 1)
	registered := waitWorkerHeartbeat(t, cs, w, wk.kubeletStart)
	checkWorkerNode(t, cs, w, root)
	_, approved, err := waitServingCSR(cs, w.Name, 3*time.Minute)
	if err != nil {
		t.Fatalf("the worker's serving CSR was not approved and issued: %v\ncsr-approver log:\n%s", err, tail(filepath.Join(n.LogDir(), "csr-approver.log"), 20))
	}
	ns := checkNamespace(t, cs, true)
	running := runWorkerPod(t, cs, ns, w, etcdImage, wk.kubeletStart)
	t.Logf("FIGURE worker %s: kubelet start -> Node registered %.1fs -> serving CSR approved %.1fs -> first pod Running %.1fs",
		spec.Case, registered.Sub(wk.kubeletStart).Seconds(), approved.Sub(wk.kubeletStart).Seconds(), running.Sub(wk.kubeletStart).Seconds())
	tm.add("kubelet->pod-running", running.Sub(wk.kubeletStart))
	checkWorkerPodReached(t, spec, cs, ns, w)
	if podNetworkRendered(root) {
		tm.step("across-nodes", func() { checkAcrossNodes(t, spec, n, cs, w, wk.kubeletStart, wk.netns()) })
	}

	// A reboot: the worker's namespaces end with its processes; new ones on the same root.
	tm.step("reboot", func() { wk.stop(t) })
	wk = startWorker(t, spec, n, root, 2)
	waitWorkerHeartbeat(t, cs, w, wk.kubeletStart)
	again := waitPodRunningSince(t, cs, ns, workerPodName, wk.kubeletStart)
	t.Logf("FIGURE worker %s: after its reboot, kubelet start -> the pod Running again %.1fs", spec.Case, again.Sub(wk.kubeletStart).Seconds())
	tm.add("reboot:kubelet->pod-running", again.Sub(wk.kubeletStart))
	checkWorkerPodReached(t, spec, cs, ns, w)
	if podNetworkRendered(root) {
		tm.step("reboot:across-nodes", func() { checkAcrossNodes(t, spec, n, cs, w, wk.kubeletStart, wk.netns()) })
	}

	// Every leaf of the control plane renewed, its update applied (etcd and kube-apiserver roll): the worker
	// still works.
	renewAndCopy(t, spec, n, tm, "renew", "--force")
	applyUpdate(t, n, tm, "renew:", updateDir)
	applied := time.Now()
	tm.add("apply->readyz", waitReadyz(t, n, cs, 4*time.Minute))
	checkLeasesAdvance(t, cs, applied, "kube-node-lease", w.Name)
	checkWorkerPodReached(t, spec, cs, ns, w)
	checkPodNotRestarted(t, cs, ns, workerPodName, wk.kubeletStart)
	tm.step("stop", func() { wk.stop(t) })
}

// staticPodImage is the image of a container of the node's static pods (the images the harness built are the
// only ones a node has).
func staticPodImage(t *testing.T, container string) string {
	t.Helper()
	pods, err := StaticPods("/")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			if c.Name == container {
				return c.Image
			}
		}
	}
	t.Fatalf("no container %s in the static pods", container)
	return ""
}

// checkApproverKnows: after the update, the control-plane node's CSR approver lists the worker with its IPs.
func checkApproverKnows(t *testing.T, w *workerSpec) {
	t.Helper()
	b, err := os.ReadFile("/etc/kubernetes/aio-csr-approver.nodes")
	if err != nil {
		t.Fatal(err)
	}
	want := w.Name + " " + strings.ReplaceAll(w.IPs, ",", " ")
	if !slices.Contains(strings.Split(string(b), "\n"), want) {
		t.Fatalf("the approver's node list has no line %q after the update:\n%s", want, b)
	}
	t.Logf("the control-plane node's CSR approver lists %q", want)
}

// checkDeclaredNode: after the update, and before the worker boots, its Node exists when the control plane
// declares it (an upstream kubelet may not set its role itself), with the worker role and no status yet.
func checkDeclaredNode(t *testing.T, cs *kubernetes.Clientset, w *workerSpec) {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Get(context.Background(), w.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the update declared no Node %s: %v", w.Name, err)
	}
	if _, ok := node.Labels["node-role.kubernetes.io/worker"]; !ok || node.Status.NodeInfo.KubeletVersion != "" {
		t.Fatalf("declared Node %s: labels %v, kubelet %q: want the worker role and no kubelet yet", w.Name, node.Labels, node.Status.NodeInfo.KubeletVersion)
	}
	t.Logf("Node %s declared by the update (labels %v), no kubelet yet", w.Name, node.Labels)
}

// runningWorker is a worker's boot: the inner test process that is PID 1 of its namespaces.
type runningWorker struct {
	cmd          *exec.Cmd
	done         chan error
	stopFile     string
	host         *HostState
	kubeletStart time.Time
	stopped      bool
	logged       chan struct{} // closed once the worker's output is all in the test's log
}

// startWorker boots the worker on root (the boot-th time): its inner test in new network, mount and PID namespaces,
// linked to this node's network (LinkWorker); it returns once the worker's kubelet started. The boot is stopped at
// the latest when the test ends.
func startWorker(t *testing.T, spec *innerSpec, n *Node, root string, boot int) *runningWorker {
	t.Helper()
	w := spec.Worker
	work := filepath.Join(spec.Work, fmt.Sprintf("%s-boot%d", w.Name, boot))
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := &innerSpec{Phase: workerPhase, Case: spec.Case, Root: root, Work: work, BinDir: spec.BinDir, Images: spec.Images,
		NodeName: w.Name, NodeAddrs: w.Addrs, Kubeconfig: spec.Kubeconfig, Domain: spec.Domain,
		Lower: n.HostView, CgroupRoot: workerCgroupRoot(w.Name), StopFile: filepath.Join(work, "stop"), StartFile: filepath.Join(work, "kubelet-started")}
	data, _ := json.MarshalIndent(ws, "", "  ")
	specPath := filepath.Join(work, "inner-worker.json")
	if err := os.WriteFile(specPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	host, err := workerScope(w.Name, filepath.Join(work, "host-state.json")).save(t.Logf)
	if err != nil {
		t.Fatalf("saving the machine's state before the worker's boot: %v", err)
	}
	cmd, err := InnerCommand(context.Background(), "TestInner", specPath, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pw, logged := logLines(cmd, func(f string, a ...any) { t.Logf("│ "+w.Name+" │ "+f, a...) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rw := &runningWorker{cmd: cmd, done: make(chan error, 1), stopFile: ws.StopFile, host: host, logged: logged}
	go func() { rw.done <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() { rw.stop(t) })
	if err := LinkWorker(context.Background(), cmd.Process.Pid, fmt.Sprintf("%s%d", workerLink, boot)); err != nil {
		t.Fatalf("linking the worker's network namespace: %v", err)
	}
	err = poll(context.Background(), 3*time.Minute, 200*time.Millisecond, func(context.Context) (bool, error) {
		select {
		case err := <-rw.done:
			rw.done <- err
			return false, fmt.Errorf("the worker's boot ended before its kubelet started: %v", err)
		default:
		}
		b, err := os.ReadFile(ws.StartFile)
		if err != nil {
			return false, nil
		}
		rw.kubeletStart, err = time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worker %s (boot %d) runs as pid %d; its kubelet started at %s", w.Name, boot, cmd.Process.Pid, rw.kubeletStart.UTC().Format(time.RFC3339Nano))
	return rw
}

// netns is the worker's network namespace, seen from its control-plane node (whose PID namespace holds the
// worker's PID 1).
func (rw *runningWorker) netns() string { return fmt.Sprintf("/proc/%d/ns/net", rw.cmd.Process.Pid) }

// stop ends the worker's boot as a shutdown does (its inner test stops the kubelet, the pods and containerd, by
// PID), bounded, killing its PID 1 (and with it its PID namespace) at the bound; then removes its cgroups.
func (rw *runningWorker) stop(t *testing.T) {
	if rw.stopped {
		return
	}
	rw.stopped = true
	os.WriteFile(rw.stopFile, nil, 0o644)
	select {
	case err := <-rw.done:
		if err != nil {
			t.Errorf("the worker's boot: %v", err)
		}
	case <-time.After(3 * time.Minute):
		t.Errorf("the worker did not stop within 3 minutes: killing its PID 1 (pid %d)", rw.cmd.Process.Pid)
		rw.cmd.Process.Signal(syscall.SIGKILL)
		<-rw.done
	}
	select {
	case <-rw.logged:
	case <-time.After(10 * time.Second):
	}
	changed, left, err := rw.host.Restore(t.Logf)
	if len(changed) > 0 {
		t.Logf("after the worker's boot: %s", strings.Join(changed, "; "))
	}
	if err != nil || len(left) > 0 {
		t.Errorf("restoring the machine after the worker's boot: %v (cgroups left: %v)", err, left)
	}
}

// innerWorker is a worker's boot (PID 1 of its namespaces): its node up, its kubelet's start time written for the
// control-plane node's test, then running until that test writes the stop file (the kubelet must keep running).
func innerWorker(t *testing.T, spec *innerSpec) {
	tm := newTimings("upstream/" + spec.Case + " (worker " + spec.NodeName + ")")
	n := bootNode(t, spec, tm)
	if err := os.WriteFile(spec.StartFile, []byte(n.KubeletStart.Format(time.RFC3339Nano)), 0o644); err != nil {
		t.Fatal(err)
	}
	err := poll(context.Background(), 25*time.Minute, 500*time.Millisecond, func(context.Context) (bool, error) {
		if err := n.KubeletRunning(); err != nil {
			return false, err
		}
		_, err := os.Stat(spec.StopFile)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the worker's kubelet: %v", err)
	}
	t.Logf("stopping the worker (asked by its control-plane node)")
}

// waitWorkerHeartbeat waits (bounded) until the worker's kubelet has written its Node's status since since (the
// kubelet's version and a Ready condition heartbeat after since), and returns when it saw it.
func waitWorkerHeartbeat(t *testing.T, cs *kubernetes.Clientset, w *workerSpec, since time.Time) time.Time {
	t.Helper()
	var last string
	err := poll(context.Background(), 3*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		node, err := cs.CoreV1().Nodes().Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = fmt.Sprintf("%s %s (%s) heartbeat %s", c.Type, c.Status, c.Reason, c.LastHeartbeatTime.UTC().Format(time.RFC3339))
				// Heartbeat times have a second's precision.
				return node.Status.NodeInfo.KubeletVersion != "" && !c.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the worker's kubelet did not write its Node's status (last: %s): %v", last, err)
	}
	seen := time.Now()
	t.Logf("Node %s: the kubelet writes its status (%s)", w.Name, last)
	return seen
}

// checkWorkerNode: the worker's Node has the worker role, its addresses, the upstream kubelet's version, and
// the kubelet authenticates with the render-time certificate of worker.ign (no bootstrap CSR of anyone).
func checkWorkerNode(t *testing.T, cs *kubernetes.Clientset, w *workerSpec, root string) {
	t.Helper()
	ctx := context.Background()
	node, err := cs.CoreV1().Nodes().Get(ctx, w.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := node.Labels["node-role.kubernetes.io/worker"]; !ok {
		t.Errorf("Node %s has no worker role: %v", w.Name, node.Labels)
	}
	for _, l := range []string{"node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane"} {
		if _, ok := node.Labels[l]; ok {
			t.Errorf("the worker's Node %s has %s", w.Name, l)
		}
	}
	var internal []string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = append(internal, a.Address)
		}
	}
	if strings.Join(internal, ",") != w.IPs {
		t.Errorf("Node %s InternalIPs %v, want %s", w.Name, internal, w.IPs)
	}
	if v := node.Status.NodeInfo.KubeletVersion; v != "v1.34.3" {
		t.Errorf("Node %s kubelet %q, want v1.34.3", w.Name, v)
	}
	cur, err := CertificatesIn(filepath.Join(root, "var/lib/kubelet/kubeconfig"))
	if err != nil || len(Leaves(cur)) == 0 {
		t.Fatalf("worker.ign laid no client certificate in the worker's kubeconfig: %v", err)
	}
	if cn := Leaves(cur)[0].Cert.Subject.CommonName; cn != "system:node:"+w.Name {
		t.Errorf("the worker's render-time client certificate is for %q", cn)
	}
	csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range csrs.Items {
		if c.Spec.SignerName == "kubernetes.io/kube-apiserver-client-kubelet" && !strings.HasPrefix(c.Spec.Username, "system:node:") {
			t.Errorf("a bootstrap client CSR %s by %s", c.Name, c.Spec.Username)
		}
	}
	t.Logf("Node %s: roles %v, InternalIP %v, kubelet %s; its kubelet authenticates as %s",
		w.Name, roles(node), internal, node.Status.NodeInfo.KubeletVersion, "system:node:"+w.Name)
}

func roles(n *corev1.Node) []string {
	var out []string
	for k := range n.Labels {
		if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// runWorkerPod creates a host-network pod that tolerates every taint (it checks the kubelet, not the pod network)
// and asks for the worker by its hostname label, as a user's workload would, not by spec.nodeName: the scheduler
// must place it. It runs an etcd on the worker's loopback (the images built here are the only ones a node has).
// It returns when the pod was seen Running.
func runWorkerPod(t *testing.T, cs *kubernetes.Clientset, ns string, w *workerSpec, image string, since time.Time) time.Time {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: workerPodName}, Spec: corev1.PodSpec{
		HostNetwork:                  true,
		NodeSelector:                 map[string]string{"kubernetes.io/hostname": w.Name},
		Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		AutomountServiceAccountToken: ptr(false),
		Containers: []corev1.Container{{Name: "etcd", Image: image, Command: []string{"etcd", "--name=on-worker", "--data-dir=/data",
			"--listen-client-urls=http://127.0.0.1:12379", "--advertise-client-urls=http://127.0.0.1:12379",
			"--listen-peer-urls=http://127.0.0.1:12380", "--initial-advertise-peer-urls=http://127.0.0.1:12380",
			"--initial-cluster=on-worker=http://127.0.0.1:12380"},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	running := waitPodRunningSince(t, cs, ns, pod.Name, since)
	p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scheduled := ""
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			scheduled = c.LastTransitionTime.UTC().Format(time.RFC3339)
		}
	}
	if p.Spec.NodeName != w.Name || scheduled == "" {
		t.Fatalf("pod %s/%s on %q (scheduled %q), want the scheduler to bind it to %s", ns, pod.Name, p.Spec.NodeName, scheduled, w.Name)
	}
	t.Logf("pod %s/%s: bound to %s by the scheduler at %s, Running", ns, pod.Name, w.Name, scheduled)
	return running
}

// waitPodRunningSince waits (bounded) until the pod's container runs, started after since; it returns when it saw it.
func waitPodRunningSince(t *testing.T, cs *kubernetes.Clientset, ns, name string, since time.Time) time.Time {
	t.Helper()
	var last string
	err := poll(context.Background(), 4*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if r := c.State.Running; r != nil && !r.StartedAt.Time.Before(since.Truncate(time.Second)) && p.Status.Phase == corev1.PodRunning {
				return true, nil
			}
			if w := c.State.Waiting; w != nil {
				last += " (" + w.Reason + ": " + w.Message + ")"
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not Running since %s (last: %s): %v", ns, name, since.UTC().Format(time.RFC3339), last, err)
	}
	return time.Now()
}

// checkPodNotRestarted: the pod's container still runs the one started after since (the control plane's roll did
// not disturb the worker's kubelet).
func checkPodNotRestarted(t *testing.T, cs *kubernetes.Clientset, ns, name string, since time.Time) {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil || c.State.Running.StartedAt.Time.Before(since.Truncate(time.Second)) || c.RestartCount > 1 {
			t.Errorf("pod %s/%s container %s: state %+v, restarts %d", ns, name, c.Name, c.State, c.RestartCount)
		}
	}
}

// checkWorkerPodReached: the pod's log and an exec into it, through the API: kube-apiserver reaches the worker's
// kubelet at the worker's IP over the serving certificate the approver approved, and the kubelet accepts
// kube-apiserver's client certificate. The exec is the user's kubectl.
func checkWorkerPodReached(t *testing.T, spec *innerSpec, cs *kubernetes.Clientset, ns string, w *workerSpec) {
	t.Helper()
	ctx := context.Background()
	var logs []byte
	err := poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		b, err := cs.CoreV1().Pods(ns).GetLogs(workerPodName, &corev1.PodLogOptions{TailLines: ptr(int64(200))}).DoRaw(ctx)
		logs = b
		return err == nil && strings.Contains(string(b), "ready to serve client requests"), err
	})
	if err != nil {
		t.Errorf("the log of %s/%s on %s through the API: %v\n%s", ns, workerPodName, w.Name, err, tailString(string(logs), 5))
	} else {
		t.Logf("log of %s/%s on %s through the API (%d bytes): etcd is ready to serve client requests", ns, workerPodName, w.Name, len(logs))
	}
	var out string
	err = poll(ctx, time.Minute, 2*time.Second, func(context.Context) (bool, error) {
		var err error
		out, err = RunLogged(ctx, 30*time.Second, "", nil, filepath.Join(spec.BinDir, "kubectl"), "--kubeconfig", spec.Kubeconfig,
			"exec", "-n", ns, workerPodName, "--", "etcdctl", "--endpoints=http://127.0.0.1:12379", "endpoint", "health")
		return err == nil && strings.Contains(out, "is healthy"), nil
	})
	if err != nil {
		t.Errorf("kubectl exec into %s/%s on %s: %v\n%s", ns, workerPodName, w.Name, err, out)
	} else {
		t.Logf("kubectl exec into %s/%s on %s: %s", ns, workerPodName, w.Name, strings.TrimSpace(out))
	}
}

// nodeAddrs are a node's IPs (as --node-ip) with the prefix of the machine network holding each.
func nodeAddrs(ips string, machineNetworks []string) ([]string, error) {
	var out []string
	for _, ip := range strings.Split(ips, ",") {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, err
		}
		bits := -1
		for _, mn := range machineNetworks {
			if p, err := netip.ParsePrefix(mn); err == nil && p.Contains(a) {
				bits = p.Bits()
			}
		}
		if bits < 0 {
			return nil, fmt.Errorf("node IP %s is in no machineNetwork", ip)
		}
		out = append(out, netip.PrefixFrom(a, bits).String())
	}
	return out, nil
}
