package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/render-static/render-static/pkg/components"
)

// The inner side of the e2e: one boot of the real node per run (first boot, reboot, the broken-flag boot, the
// lab), inside the namespaces runNode created.

// bootNode brings the node up: network, the node's view of the filesystem, containerd with the images, the
// kubelet. At cleanup it is stopped (by PID, in reverse order); on failure the kubelet's, containerd's and every
// container's log tails are printed first.
func bootNode(t *testing.T, spec *innerSpec, tm *timings) *Node {
	t.Helper()
	ctx := context.Background()
	tm.step("netns", func() {
		var err error
		if spec.Phase == workerPhase {
			// The control-plane node that started this worker links it (LinkWorker).
			err = JoinNetns(ctx, spec.addrs(t), time.Minute)
		} else {
			err = ConfigureNetns(ctx, spec.addrs(t))
		}
		if err != nil {
			t.Fatal(err)
		}
	})
	n := &Node{Root: spec.Root, Work: filepath.Join(spec.Work, spec.Phase), BinDir: spec.BinDir, NodeName: spec.NodeName, Logf: t.Logf,
		Lower: spec.Lower, CgroupRoot: spec.CgroupRoot, Nameserver: spec.ips()[0]}
	if spec.Worker != nil {
		n.HostView = filepath.Join(n.Work, "hostview") // the worker's overlays take the host's directories from there
	}
	var mirrorAddrs []NodeAddress
	if spec.Mirror != nil {
		tm.step("mirror-plan", func() { mirrorAddrs = planMirror(t, spec, n) })
	}
	var stopStandIns func()
	tm.step("mount", func() {
		if err := n.Mount(); err != nil {
			t.Fatal(err)
		}
		var err error
		if stopStandIns, err = n.serveStandIns(); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() {
		stopStandIns()
		if t.Failed() {
			dumpNodeLogs(t, n)
		}
		st := time.Now()
		forced := n.Stop(context.Background())
		if n.Mirror != nil {
			n.Mirror.Stop()
		}
		StopSwitch() // the workers' and the outside machine's switch, if this node made one (netns.go)
		tm.add("stop", time.Since(st))
		if len(forced) > 0 {
			t.Errorf("the node's shutdown needed force for: %v", forced)
		}
		// Generous: on a loaded machine the runtime's shims take a while to exit once their pods are removed.
		if left := n.Reap(time.Minute); len(left) > 0 {
			t.Errorf("processes left in the node's PID namespace after its shutdown (killed by PID): %v", left)
		}
		t.Log(tm.String())
	})
	// Ordered Before=kubelet.service crio.service (units.go).
	tm.step("pod-network", func() {
		ran, err := n.RunUnit(ctx, PodNetworkUnit)
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			t.Logf("%s.service is not rendered: the node has no pod network set up by its own unit", PodNetworkUnit)
		}
	})
	if spec.Mirror != nil {
		tm.step("mirror", func() { mirrorUp(t, spec, n, mirrorAddrs) })
	}
	tm.step("containerd", func() {
		if err := n.StartContainerd(ctx); err != nil {
			t.Fatal(err)
		}
		if spec.Images == "" {
			n.Logf("no image imported: the node pulls every image")
			return
		}
		if err := n.ImportImages(ctx, spec.Images); err != nil {
			t.Fatal(err)
		}
	})
	if n.CgroupRoot != "" {
		if err := MakeCgroupRoot(n.CgroupRoot); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.StartKubelet(ctx); err != nil {
		t.Fatal(err)
	}
	return n
}

// dumpNodeLogs prints the tails of the kubelet's, containerd's and every container's log.
func dumpNodeLogs(t *testing.T, n *Node) {
	for _, f := range []string{"kubelet", "containerd", "aiokube", "csr-approver"} {
		p := filepath.Join(n.LogDir(), f+".log")
		if _, err := os.Stat(p); err == nil {
			t.Logf("%s log (last 40 lines of %s):\n%s", f, p, tail(p, 40))
		}
	}
	if n.CRISocket == "" {
		return
	}
	cs, err := ListContainers(context.Background(), n.CRISocket)
	if err != nil {
		t.Logf("CRI containers: %v", err)
		return
	}
	for _, k := range cs {
		t.Logf("container %s, log (last 30 lines, through the CRI):\n%s", k, LogTail(k, 30))
	}
}

// crashLooping lists the containers that exited with an error at least twice (a static pod that cannot run,
// as opposed to one that lost a race with the API server once), each with its log's tail.
func crashLooping(ctx context.Context, n *Node) (string, error) {
	all, err := ListContainers(ctx, n.CRISocket)
	if err != nil {
		return "", err
	}
	byName := map[string][]Container{}
	for _, k := range Failed(all) {
		byName[k.Namespace+"/"+k.Pod+"/"+k.Name] = append(byName[k.Namespace+"/"+k.Pod+"/"+k.Name], k)
	}
	var b strings.Builder
	for _, name := range sortedKeys(byName) {
		if ks := byName[name]; len(ks) >= 2 {
			last := ks[len(ks)-1]
			fmt.Fprintf(&b, "container %s failed %d times; its log (through the CRI):\n%s\n", last, len(ks), LogTail(last, 25))
		}
	}
	return b.String(), nil
}

// waitAPI waits (bounded) until /readyz answers ok, failing at once when the kubelet exits or a static pod's
// container crash-loops (with its log). It returns the time from the kubelet's start.
func waitAPI(t *testing.T, n *Node, cs *kubernetes.Clientset, timeout time.Duration) time.Duration {
	t.Helper()
	err := poll(context.Background(), timeout, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := n.KubeletRunning(); err != nil {
			t.Fatal(err)
		}
		if msg, err := crashLooping(ctx, n); err == nil && msg != "" {
			t.Fatalf("a static pod cannot run:\n%s", msg)
		}
		b, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(b) == "ok", nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver never became ready: %v", err)
	}
	n.event("/readyz ok (seen by the harness)")
	d := time.Since(n.KubeletStart)
	t.Logf("FIGURE %s: /readyz ok %.1fs after the kubelet started", n.phase(), d.Seconds())
	return d
}

func (n *Node) phase() string { return filepath.Base(n.Work) }

// waitMirrorPods waits (bounded) until every static pod of the node has a mirror pod in the API that is Running
// and Ready with a status of this boot (every container it reports runs now: after a reboot the API first shows
// the status the last boot left), and returns the time from the kubelet's start.
func waitMirrorPods(t *testing.T, n *Node, cs *kubernetes.Clientset, timeout time.Duration) time.Duration {
	t.Helper()
	pods, err := StaticPods("/")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, p := range pods {
		want[p.Namespace+"/"+p.Name+"-"+n.NodeName] = false
	}
	err = poll(context.Background(), timeout, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		if msg, err := crashLooping(ctx, n); err == nil && msg != "" {
			t.Fatalf("a static pod cannot run:\n%s", msg)
		}
		running := map[string]bool{}
		for _, id := range runningContainers(t, n) {
			running[id] = true
		}
		for k := range want {
			ns, name, _ := strings.Cut(k, "/")
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				want[k] = false
				continue
			}
			_, mirror := p.Annotations["kubernetes.io/config.mirror"]
			fresh := len(p.Status.ContainerStatuses) > 0
			for _, c := range p.Status.ContainerStatuses {
				_, id, _ := strings.Cut(c.ContainerID, "://")
				fresh = fresh && running[id]
			}
			if ok := mirror && fresh && p.Status.Phase == corev1.PodRunning && podReady(p); ok && !want[k] {
				want[k] = true
				n.event("mirror pod " + k + " Running and Ready (seen through the API)")
			}
		}
		for _, ok := range want {
			if !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("mirror pods not all Running and Ready: %v (%v)", err, want)
	}
	d := time.Since(n.KubeletStart)
	t.Logf("FIGURE %s: mirror pods %v Running and Ready %.1fs after the kubelet started", n.phase(), sortedKeys(want), d.Seconds())
	return d
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unitCmd runs a rendered unit's ExecStart with its Environment (plus overrides) on the node, output to
// LogDir/<name>.log, each line stamped with the time it was written (as the journal would).
func (n *Node) unitCmd(t *testing.T, name, unit string, extraEnv ...string) *exec.Cmd {
	t.Helper()
	argv, env := unitCommand(t, filepath.Join("/etc/systemd/system", unit))
	if argv == nil {
		t.Fatalf("the render has no %s", unit)
	}
	env = overrideEnv(env, extraEnv...)
	f, err := openLog(filepath.Join(n.LogDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cmd := nodeCommand(context.Background(), env, argv...)
	w := &stampWriter{w: f}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 10 * time.Second // a client left running after its script was stopped holds the output pipe
	return cmd
}

// startCSRApprover runs the rendered CSR approver's unit every 5 s (its timer: every minute; see Overrides)
// until the test ends. Each run is bounded.
func startCSRApprover(t *testing.T, n *Node) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			cmd := n.unitCmd(t, "csr-approver", "aio-csr-approver.service")
			if err := cmd.Start(); err == nil {
				done := make(chan struct{})
				go func() { cmd.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(2 * time.Minute):
					cmd.Process.Kill()
					<-done
				case <-ctx.Done():
					stopProcess(cmd, 5*time.Second)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// aiokubeEnv shortens aiokube's waits for the test (see Overrides); every one stays bounded.
var aiokubeEnv = []string{"AIOKUBE_API_WAIT_SECONDS=120", "AIOKUBE_RETRY_SECONDS=2", "AIOKUBE_ATTEMPTS=5",
	"AIOKUBE_CRD_WAIT_SECONDS=60", "AIOKUBE_REQUEST_TIMEOUT_SECONDS=15", "AIOKUBE_TOKEN_WAIT_SECONDS=120"}

// runAiokube runs the first-boot apply to its end, as its unit would (bounded); it returns its log's last lines.
func runAiokube(t *testing.T, n *Node) (string, error) {
	t.Helper()
	ak := startAiokube(t, n)
	return ak.wait(t, 8*time.Minute)
}

// aiokubeRun is aiokube started as its unit starts it.
type aiokubeRun struct {
	n    *Node
	cmd  *exec.Cmd
	done chan error
}

// startAiokube starts aiokube as its unit does: once the kubelet started (After=kubelet.service).
func startAiokube(t *testing.T, n *Node) *aiokubeRun {
	t.Helper()
	a := &aiokubeRun{n: n, cmd: n.unitCmd(t, "aiokube", "aiokube.service", aiokubeEnv...), done: make(chan error, 1)}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.done <- a.cmd.Wait() }()
	n.event("aiokube started")
	return a
}

// wait waits (bounded; then its process group is killed) until aiokube ends; it returns its log's last lines.
func (a *aiokubeRun) wait(t *testing.T, timeout time.Duration) (string, error) {
	t.Helper()
	var err error
	select {
	case err = <-a.done:
	case <-time.After(timeout):
		syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		err = fmt.Errorf("aiokube still running after %s (killed): %v", timeout, <-a.done)
	}
	a.n.event("aiokube ended")
	return tail(filepath.Join(a.n.LogDir(), "aiokube.log"), 25), err
}

// stopHalfWay stops aiokube (by its process group, as systemd stops a unit) once it has created the namespaces and
// a few more manifests, and checks it had not finished; it returns how many manifests were done.
func (a *aiokubeRun) stopHalfWay(t *testing.T) int {
	t.Helper()
	stateDir, namespaces := aiokubeState(t)
	done := 0
	err := poll(context.Background(), 4*time.Minute, 100*time.Millisecond, func(context.Context) (bool, error) {
		select {
		case err := <-a.done:
			return false, fmt.Errorf("aiokube ended before it was stopped half-way (%v):\n%s", err, tail(filepath.Join(a.n.LogDir(), "aiokube.log"), 30))
		default:
		}
		m, _ := filepath.Glob(filepath.Join(stateDir, "done", "*"))
		done = len(m)
		return done >= namespaces+5, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(-a.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(20 * time.Second):
		syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.done
	}
	a.n.event(fmt.Sprintf("aiokube stopped half-way, %d manifests done", done))
	if _, err := os.Stat(filepath.Join(stateDir, "applied")); err == nil {
		t.Fatal("aiokube finished before it was stopped: the reboot cannot show it resumes")
	}
	t.Logf("aiokube stopped half-way (pid %d) after %d manifests (%d namespaces)", a.cmd.Process.Pid, done, namespaces)
	return done
}

// aiokubeFigures prints when aiokube had created every manifest and when it was done, from its stamped log.
func aiokubeFigures(t *testing.T, n *Node, tm *timings) {
	t.Helper()
	f, err := os.Open(filepath.Join(n.LogDir(), "aiokube.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var applied, finished time.Time
	for _, e := range UnitLogEvents(f) {
		switch {
		case e.What == "aiokube: every manifest is created":
			applied = e.At
		case strings.HasPrefix(e.What, "aiokube: done:"):
			finished = e.At
		}
	}
	if applied.IsZero() || finished.IsZero() {
		t.Fatalf("aiokube's log says no end of the apply or of the run:\n%s", tail(f.Name(), 20))
	}
	tm.add("kubelet->aiokube-applied", applied.Sub(n.KubeletStart))
	t.Logf("FIGURE %s: aiokube created every manifest %.1fs after the kubelet started (its run, tokens and clean-up included, ended at %.1fs)",
		n.phase(), applied.Sub(n.KubeletStart).Seconds(), finished.Sub(n.KubeletStart).Seconds())
}

// aiokubeState is the state directory the rendered aiokube unit names.
func aiokubeState(t *testing.T) (dir string, namespaces int) {
	_, env := unitCommand(t, "/etc/systemd/system/aiokube.service")
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "AIOKUBE_STATE_DIR="); ok {
			dir = v
		}
		if v, ok := strings.CutPrefix(e, "AIOKUBE_MANIFESTS="); ok {
			m, _ := filepath.Glob(filepath.Join(v, "00_*"))
			namespaces = len(m)
		}
	}
	if dir == "" {
		t.Fatal("aiokube.service sets no AIOKUBE_STATE_DIR")
	}
	return dir, namespaces
}

// nodeState is what the first boot leaves for the reboot to check.
type nodeState struct {
	Marker      string `json:"marker"`      // data of configmap default/e2e-reboot-marker
	AiokubeDone int    `json:"aiokubeDone"` // manifests aiokube had created when it was stopped
}

func statePath(spec *innerSpec) string { return filepath.Join(spec.Work, "state.json") }

// innerFirstBoot: the node's first boot. The kubelet runs the rendered static pods; the API comes up; the CSR
// approver runs as its timer would; aiokube starts as its unit would and is stopped half-way (the reboot must
// finish it); the mirror pods are Running and Ready; then every check of the control plane, the node's
// registration, the openshift flavor's pods against the live API, and a marker for the reboot.
func innerFirstBoot(t *testing.T, spec *innerSpec) {
	tm := newTimings("upstream/" + spec.Case + " (first boot)")
	n := bootNode(t, spec, tm)
	cs, cfg := clients(t, spec.Kubeconfig)
	ak := startAiokube(t, n)
	tm.add("kubelet->readyz", waitAPI(t, n, cs, 4*time.Minute))
	startCSRApprover(t, n)
	done := 0
	if spec.InterruptAiokube {
		done = ak.stopHalfWay(t)
	}
	mirror := waitMirrorPods(t, n, cs, 4*time.Minute)
	tm.add("kubelet->mirror-pods-ready", mirror)
	if !spec.InterruptAiokube {
		if log, err := ak.wait(t, 8*time.Minute); err != nil {
			t.Fatalf("aiokube: %v\n%s", err, log)
		}
		aiokubeFigures(t, n, tm)
	}
	// Issue 37: the workload (network_test.go). With aiokube stopped half-way, CoreDNS and kube-proxy's RBAC may not
	// exist yet: only the Node's readiness (the pod network) is checked, the rest in the reboot.
	if podNetworkRendered(spec.Root) {
		tm.step("workload", func() {
			cp := controlPlaneReady(n)
			if spec.InterruptAiokube {
				_, tr := waitNodeReady(t, cs, n.NodeName, n.KubeletStart, 3*time.Minute)
				n.eventAt(tr, "Node "+n.NodeName+" Ready (its condition's transition, a second's precision)")
				t.Logf("FIGURE %s: after the control plane's mirror pods were Ready (seen at %+.1fs): Node Ready %+.1fs; CoreDNS: aiokube was stopped half-way, checked in the reboot",
					n.phase(), cp.Sub(n.KubeletStart).Seconds(), tr.Sub(cp).Seconds())
				return
			}
			checkWorkload(t, spec, n, cs, cp)
		})
	} else {
		t.Logf("the render has no built-in pod network (%s.service): the workload checks do not apply", PodNetworkUnit)
	}
	t.Logf("TIMELINE %s (seconds after the kubelet started):%s", n.phase(), n.timeline())
	tm.step("checks", func() {
		checkNodeRegistered(t, cs, n)
		checkHealth(t, cs)
		checkKubernetesEndpoint(t, cs, spec.ips()[0])
		ns := checkNamespace(t, cs, true)
		checkLeases(t, cs)
		checkUnschedulable(t, cs, ns)
		checkSecretEncrypted(t, cs)
		checkOpenShiftDryRun(t, cs, spec.OpenShiftPods)
		checkApprovalBoundToUID(t, cs)
	})
	marker := make([]byte, 16)
	rand.Read(marker)
	st := nodeState{Marker: hex.EncodeToString(marker), AiokubeDone: done}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-reboot-marker"}, Data: map[string]string{"marker": st.Marker}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("marker: %v", err)
	}
	data, _ := json.Marshal(st)
	if err := os.WriteFile(statePath(spec), data, 0o644); err != nil {
		t.Fatal(err)
	}
	checkNoCrashLoops(t, n)
	logPeakRSS(t, n)
	if n.Mirror != nil {
		checkMirrorPulls(t, n)
	}
	_ = cfg
}

// innerReboot: the same disk booted again in new namespaces (nothing of the first boot's processes survives). The
// same cluster comes back: etcd reuses its data (the marker written before is there), aiokube finishes what it
// was stopped in, every exported object exists, the CSR approver (whose RBAC aiokube creates) approves the
// kubelet's serving CSR, the node keeps no bootstrap leftovers.
func innerReboot(t *testing.T, spec *innerSpec) {
	tm := newTimings("upstream/" + spec.Case + " (reboot)")
	var st nodeState
	if err := readYAML(statePath(spec), &st); err != nil {
		t.Fatalf("the first boot left no state: %v", err)
	}
	n := bootNode(t, spec, tm)
	cs, cfg := clients(t, spec.Kubeconfig)
	tm.add("kubelet->readyz", waitAPI(t, n, cs, 4*time.Minute))
	startCSRApprover(t, n)
	cm, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), "e2e-reboot-marker", metav1.GetOptions{})
	if err != nil || cm.Data["marker"] != st.Marker {
		t.Fatalf("the marker written before the reboot is gone or changed (%v): etcd did not reuse its data", err)
	}
	t.Logf("the marker written before the reboot is there: etcd reused its data")
	// The namespaces exist since the first boot: the mirror pods come back before aiokube runs again.
	tm.add("kubelet->mirror-pods-ready", waitMirrorPods(t, n, cs, 4*time.Minute))

	manifests := filepath.Join(filepath.Dir(filepath.Dir(spec.Kubeconfig)), "rootfs", "opt", "openshift", "manifests")
	objs, err := manifestObjects(manifests)
	if err != nil {
		t.Fatalf("exported manifests: %v", err)
	}
	if _, err := os.Stat("/etc/systemd/system/aiokube.service"); err != nil {
		t.Logf("aiokube finished on the first boot and removed itself: nothing to resume")
	} else {
		tm.step("aiokube", func() {
			log, err := runAiokube(t, n)
			t.Logf("aiokube (rerun after the reboot; %d manifests were done before):\n%s", st.AiokubeDone, log)
			if err != nil {
				t.Fatalf("aiokube after the reboot: %v", err)
			}
		})
	}
	checkObjectsExist(t, cs, cfg, objs)
	// The approver's RBAC is one of the exported manifests: only now can it approve the kubelet's serving CSR.
	checkServingCSR(t, cs, n)
	checkNoBootstrapLeftovers(t, spec)
	checkNodeLabels(t, cs, n)
	waitMirrorPods(t, n, cs, 4*time.Minute)
	checkHealth(t, cs)
	checkLeases(t, cs)
	// Issue 37: the workload again (network_test.go), the pods the API kept in new sandboxes.
	if podNetworkRendered(spec.Root) {
		tm.step("workload", func() { checkWorkload(t, spec, n, cs, controlPlaneReady(n)) })
		if spec.Conformance {
			tm.step("conformance", func() { runNetworkConformance(t, spec, n) })
		}
		logPeakRSS(t, n)
	}
	// After the serving CSR: the Job's pod logs are read through the API (API server -> kubelet).
	if spec.Fleet != nil {
		checkFleetJob(t, cs, n, spec.Fleet)
	}
	checkNoCrashLoops(t, n)
	// Day 2: a worker joins the running cluster (worker_test.go), after the Job, whose image only this node has.
	if spec.Worker != nil {
		innerAddWorker(t, spec, n, cs)
		checkNoCrashLoops(t, n)
	}
}

// innerBroken boots a node whose kube-scheduler pod has a broken flag: the boot must fail with that container's
// log, read through the CRI.
func innerBroken(t *testing.T, spec *innerSpec) {
	tm := newTimings("upstream/" + spec.Case + " (broken flag)")
	n := bootNode(t, spec, tm)
	cs, _ := clients(t, spec.Kubeconfig)
	waitAPI(t, n, cs, 4*time.Minute)
	err := poll(context.Background(), 3*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		msg, err := crashLooping(ctx, n)
		if err == nil && msg != "" {
			t.Fatalf("a static pod cannot run:\n%s", msg)
		}
		return false, nil
	})
	t.Fatalf("no container failed: %v", err)
}

// checkNoCrashLoops: no container of the node failed more than once.
func checkNoCrashLoops(t *testing.T, n *Node) {
	t.Helper()
	msg, err := crashLooping(context.Background(), n)
	if err != nil {
		t.Errorf("CRI: %v", err)
	} else if msg != "" {
		t.Errorf("containers crash-looping:\n%s", msg)
	}
}

// logPeakRSS prints the peak resident memory of the node's components.
func logPeakRSS(t *testing.T, n *Node) {
	// The registry's components (each static pod's process is named after its component), the kubelet, containerd.
	// kube-proxy (a static pod) and CoreDNS (a Deployment) of the built-in pod network (issue 37).
	rss := PeakRSS(append(components.Names(), "kubelet", "containerd", "kube-proxy", "coredns")...)
	var parts []string
	for _, k := range sortedKeys(rss) {
		parts = append(parts, fmt.Sprintf("%s=%.0fMiB", k, rss[k]))
	}
	t.Logf("FIGURE %s: peak RSS %s", n.phase(), strings.Join(parts, " "))
}

// checkNoBootstrapLeftovers is seed 002's bootstrap cleanup test: of what aio.ign laid on the node, everything
// under /opt/openshift (the first-boot apply's manifests, admin kubeconfig, state) and aiokube's own unit and
// script must be gone; the rest remains by design (listed); and nothing else may have appeared on the node's
// disk outside the runtime state of the kubelet, etcd and containerd and the logs.
func checkNoBootstrapLeftovers(t *testing.T, spec *innerSpec) {
	t.Helper()
	rootfs := filepath.Join(filepath.Dir(filepath.Dir(spec.Kubeconfig)), "rootfs")
	laid := map[string]bool{}
	filepath.WalkDir(rootfs, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(rootfs, p)
			laid[rel] = true
		}
		return nil
	})
	bootstrap := func(rel string) bool {
		return strings.HasPrefix(rel, "opt/openshift/") || strings.Contains(filepath.Base(rel), "aiokube")
	}
	runtime := []string{"var/lib/kubelet/", "var/lib/etcd/", "var/lib/containerd/", "var/log/", "etc/kubernetes/kubelet-plugins/"}
	var leftovers, unexpected []string
	byDesign := 0
	filepath.WalkDir(spec.Root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(spec.Root, p)
		switch {
		case laid[rel] && bootstrap(rel):
			leftovers = append(leftovers, rel)
		case laid[rel]:
			byDesign++
		case ignitionSeeds[rel] || strings.HasPrefix(rel, "etc/selinux/") || ignitionOwn[rel]:
		default:
			for _, r := range runtime {
				if strings.HasPrefix(rel, r) {
					return nil
				}
			}
			unexpected = append(unexpected, rel)
		}
		return nil
	})
	sort.Strings(leftovers)
	sort.Strings(unexpected)
	t.Logf("after the first-boot apply: %d files of aio.ign remain by design (kubelet, static pods and their resources, CRI-O, hosts, units, user core); runtime state under %v", byDesign, runtime)
	if len(leftovers) > 0 {
		t.Errorf("bootstrap leftovers on the node: %v", leftovers)
	}
	if len(unexpected) > 0 {
		t.Errorf("files on the node that neither aio.ign laid nor the node's runtime keeps: %v", unexpected)
	}
}

// ignitionOwn are the files Ignition itself writes from aio.ign, besides the config's files: its result record,
// the systemd preset of the units the config enables, core's ssh key from passwd.users, and useradd's lock and
// backups of the account files.
var ignitionOwn = map[string]bool{"etc/.ignition-result.json": true, "etc/systemd/system-preset/20-ignition.preset": true,
	"home/core/.ssh/authorized_keys.d/ignition": true, "etc/.pwd.lock": true, "etc/passwd-": true, "etc/group-": true,
	"etc/shadow-": true, "etc/gshadow-": true}

// checkNodeRegistered: the node registered under its name with the render-time client certificate (no
// bootstrap CSR was needed).
func checkNodeRegistered(t *testing.T, cs *kubernetes.Clientset, n *Node) {
	t.Helper()
	ctx := context.Background()
	node, err := cs.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node %s not registered: %v", n.NodeName, err)
	}
	cn, err := kubeletClientCN(n.KubeletArgv)
	if err != nil {
		t.Fatal(err)
	}
	if cn != "system:node:"+n.NodeName {
		t.Errorf("the kubelet's render-time client certificate is for %q, want system:node:%s", cn, n.NodeName)
	}
	csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range csrs.Items {
		if c.Spec.SignerName == "kubernetes.io/kube-apiserver-client-kubelet" && c.Spec.Username != cn {
			t.Errorf("a bootstrap client CSR %s by %s: the node did not register with its render-time certificate", c.Name, c.Spec.Username)
		}
	}
	t.Logf("node %s registered (created %s) with the render-time client certificate %s", node.Name, node.CreationTimestamp.Format(time.RFC3339), cn)
}

// checkServingCSR: the kubelet's serving CSR was approved by the rendered approver (its reason: nothing else in
// the test approves) and issued by kube-controller-manager, and the API server reaches the kubelet with it (a
// mirror pod's log through the API).
func checkServingCSR(t *testing.T, cs *kubernetes.Clientset, n *Node) {
	t.Helper()
	name, _, err := waitServingCSR(cs, n.NodeName, 3*time.Minute)
	if err != nil {
		t.Errorf("the kubelet's serving CSR was not approved and issued: %v\ncsr-approver log:\n%s", err, tail(filepath.Join(n.LogDir(), "csr-approver.log"), 20))
		return
	}
	t.Logf("kubelet serving CSR %s", name)
	pods, _ := StaticPods("/")
	for _, p := range pods {
		var logs []byte
		err := poll(context.Background(), time.Minute, 2*time.Second, func(ctx context.Context) (bool, error) {
			b, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name+"-"+n.NodeName, &corev1.PodLogOptions{Container: p.Spec.Containers[0].Name, TailLines: ptr(int64(2))}).DoRaw(ctx)
			logs = b
			return err == nil && len(b) > 0, err
		})
		if err != nil {
			body, _ := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces", p.Namespace, "pods", p.Name+"-"+n.NodeName, "log").DoRaw(context.Background())
			t.Errorf("log of %s/%s through the API (API server -> kubelet over the issued serving certificate): %v: %s", p.Namespace, p.Name, err, body)
		} else {
			t.Logf("log of %s/%s through the API: %q", p.Namespace, p.Name, strings.TrimSpace(string(logs)))
		}
		break
	}
}

// waitServingCSR waits (bounded) until a kubelet-serving CSR of system:node:<node> is approved by the rendered
// approver (its reason: nothing else in the test approves) and issued; it returns the CSR (and who approved it),
// and when it saw it so.
func waitServingCSR(cs *kubernetes.Clientset, node string, timeout time.Duration) (string, time.Time, error) {
	var name string
	err := poll(context.Background(), timeout, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		l, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range l.Items {
			if c.Spec.SignerName != "kubernetes.io/kubelet-serving" || c.Spec.Username != "system:node:"+node {
				continue
			}
			for _, cond := range c.Status.Conditions {
				if cond.Type == "Approved" && cond.Status == corev1.ConditionTrue && cond.Reason == approverReason && len(c.Status.Certificate) > 0 {
					name = c.Name + " (approved by: " + cond.Message + ")"
					return true, nil
				}
			}
		}
		return false, nil
	})
	return name, time.Now(), err
}

// approverReason is the reason of the approvals of the rendered CSR approver (manifests/node/scripts/aio-csr-approver.sh).
const approverReason = "AIOCSRApprover"

// checkApprovalBoundToUID: kube-apiserver refuses an approval like the rendered approver's (a PUT of the approval
// subresource with metadata name, uid and resourceVersion, and the Approved condition) when the CSR under that name
// is another object than the one read (deleted and created again: another UID) or changed since (another
// resourceVersion), and takes it otherwise, changing the conditions only. The approver relies on this to approve
// only the very object it decided on.
func checkApprovalBoundToUID(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	ctx := context.Background()
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "e2e-approval-bound-to-uid"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	const name, signer = "e2e-approval-bound-to-uid", "example.com/e2e-approval-bound-to-uid"
	obj := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: signer,
		Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}}
	first, err := csrs.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := csrs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second, err := csrs.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer csrs.Delete(ctx, name, metav1.DeleteOptions{})
	approve := func(uid types.UID, rv string) error {
		body := fmt.Sprintf(`{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":%q,"uid":%q,"resourceVersion":%q},`+
			`"status":{"conditions":[{"type":"Approved","status":"True","reason":"E2EApprovalBoundToUID","message":"e2e"}]}}`, name, uid, rv)
		return cs.CertificatesV1().RESTClient().Put().AbsPath("/apis/certificates.k8s.io/v1/certificatesigningrequests", name, "approval").
			Body([]byte(body)).Do(ctx).Error()
	}
	if err := approve(first.UID, second.ResourceVersion); !apierrors.IsConflict(err) {
		t.Errorf("an approval with the UID of the CSR deleted since: %v, want a Conflict", err)
	}
	if err := approve(second.UID, first.ResourceVersion); !apierrors.IsConflict(err) {
		t.Errorf("an approval with an old resourceVersion: %v, want a Conflict", err)
	}
	if err := approve(second.UID, second.ResourceVersion); err != nil {
		t.Errorf("an approval of the object read: %v", err)
		return
	}
	got, err := csrs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved || got.Spec.SignerName != signer ||
		!bytes.Equal(got.Spec.Request, obj.Spec.Request) {
		t.Errorf("after the approval: conditions %+v, signer %s: want Approved and the spec as created", got.Status.Conditions, got.Spec.SignerName)
	}
	t.Logf("kube-apiserver refuses an approval for another UID or resourceVersion and takes the one for the object read")
}

// checkNodeLabels: the node carries the control-plane role labels (set through the API by the first-boot apply,
// as kubeadm does, when the kubelet may not set them itself).
func checkNodeLabels(t *testing.T, cs *kubernetes.Clientset, n *Node) {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Get(context.Background(), n.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master", "node-role.kubernetes.io/worker"} {
		if _, ok := node.Labels[l]; !ok {
			t.Errorf("node %s has no label %s (labels %v)", n.NodeName, l, node.Labels)
		}
	}
}

// checkOpenShiftDryRun: each static pod of the openshift flavor (which cannot run here: no OpenShift images)
// passes the live kube-apiserver's server-side validation and admission as a pod (dry run).
func checkOpenShiftDryRun(t *testing.T, cs *kubernetes.Clientset, dir string) {
	t.Helper()
	ctx := context.Background()
	pods, err := StaticPods(filepath.Dir(filepath.Dir(filepath.Dir(dir))))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sortedKeys(pods) {
		p := pods[f]
		if _, err := cs.CoreV1().Namespaces().Get(ctx, p.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// Admission needs the namespace's default ServiceAccount.
		poll(ctx, shortWait, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ServiceAccounts(p.Namespace).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
		p.ResourceVersion = ""
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("openshift flavor %s (%s/%s): the live API refuses it: %v", f, p.Namespace, p.Name, err)
		} else {
			t.Logf("openshift flavor %s (%s/%s, %d containers): server-side dry run passed", f, p.Namespace, p.Name, len(p.Spec.Containers)+len(p.Spec.InitContainers))
		}
	}
}

// checkSecretEncrypted creates a Secret through the API and reads its bytes straight from etcd with the etcd
// client library, using the client certificate, CA and endpoint the running kube-apiserver's static pod names
// (mapped through its volumes to the node's paths): they must start with k8s:enc:aescbc:v1:.
func checkSecretEncrypted(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	pods, err := StaticPods("/")
	if err != nil {
		t.Fatal(err)
	}
	var api *corev1.Pod
	var ctr *corev1.Container
	for _, p := range pods {
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == "kube-apiserver" {
				api, ctr = p, &p.Spec.Containers[i]
			}
		}
	}
	if api == nil {
		t.Fatal("no kube-apiserver container in the static pods")
	}
	flags := map[string]string{}
	for _, a := range append(append([]string{}, ctr.Command...), ctr.Args...) {
		if k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok && strings.HasPrefix(a, "--") {
			flags[k] = v
		}
	}
	hostFile := func(flag string) string {
		p, ok := flags[flag]
		if !ok {
			t.Fatalf("kube-apiserver has no --%s", flag)
		}
		return podHostPath(t, api, ctr, p)
	}
	readSecretFromEtcd(t, cs, hostFile("etcd-cafile"), hostFile("etcd-certfile"), hostFile("etcd-keyfile"),
		strings.Split(flags["etcd-servers"], ","), flags["etcd-prefix"])
}

// podHostPath maps a path inside a container to the node's path through its volume mounts (hostPath volumes).
func podHostPath(t *testing.T, p *corev1.Pod, c *corev1.Container, in string) string {
	t.Helper()
	best := ""
	var bestMount corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if (in == m.MountPath || strings.HasPrefix(in, strings.TrimSuffix(m.MountPath, "/")+"/")) && len(m.MountPath) > len(best) {
			best, bestMount = m.MountPath, m
		}
	}
	if best == "" {
		t.Fatalf("%s is in no volume of %s", in, c.Name)
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == bestMount.Name && v.HostPath != nil {
			return filepath.Join(v.HostPath.Path, bestMount.SubPath, strings.TrimPrefix(in, best))
		}
	}
	t.Fatalf("volume %s of %s is not a hostPath", bestMount.Name, c.Name)
	return ""
}
