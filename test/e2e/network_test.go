package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// Issue 37, a workload runs: on the node's existing boots (no boot of its own), once its control plane is up:
// the Node Ready (the rendered CNI configuration, containerd running Debian's reference plugins), CoreDNS's
// Deployment Ready, a 2-replica agnhost netexec Deployment Running, a client pod (agnhost netexec too) reaching
// its ClusterIP Service by <svc>.<ns>.svc.cluster.local in each family of the cluster (one Service per family),
// a NodePort reached on each node IP from a machine outside the node's network namespace (outside.go), and a pod
// reaching that machine (its server sees the node's IP: the egress masquerade). The reboot does it all again on
// the pods the API kept, with new sandboxes. With a worker (worker_test.go): pods on both nodes reach each other,
// and a Service with an endpoint on each node is reached from each node (from a pod there and from the node's
// own network namespace).

// The test workload's names.
const (
	workloadNS   = "e2e-workload"
	webApp       = "web"    // the 2-replica netexec Deployment
	clientPod    = "client" // the client pod, on the control-plane node
	nodePortSvc  = "web-nodeport"
	netexecPort  = 8080
	outsidePort  = 8080
	outsideShift = 3 // the outside machine's address: the node's + 3 (the day-2 worker has + 1)
)

// podNetworkRendered says whether the root has the built-in pod network (issue 37's render): its unit.
func podNetworkRendered(root string) bool {
	_, err := os.Stat(filepath.Join(root, "etc", "systemd", "system", PodNetworkUnit+".service"))
	return err == nil
}

// waitNodeReady waits (bounded) until the Node's Ready condition is True, heartbeated after since; it returns when
// the harness saw it and the condition's transition time.
func waitNodeReady(t *testing.T, cs *kubernetes.Clientset, name string, since time.Time, timeout time.Duration) (seen, transition time.Time) {
	t.Helper()
	var last string
	err := poll(context.Background(), timeout, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = fmt.Sprintf("%s (%s: %s)", c.Status, c.Reason, c.Message)
				transition = c.LastTransitionTime.Time
				return c.Status == corev1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Node %s not Ready (last: %s): %v", name, last, err)
	}
	return time.Now(), transition
}

// waitDeploymentReady waits (bounded) until every replica of the Deployment is updated and Ready, each pod Running
// with containers started after since (this boot's); it returns when the harness saw it and the pods.
func waitDeploymentReady(t *testing.T, cs *kubernetes.Clientset, ns, name string, since time.Time, timeout time.Duration) (time.Time, []corev1.Pod) {
	t.Helper()
	var last string
	var pods []corev1.Pod
	err := poll(context.Background(), timeout, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		last = fmt.Sprintf("%d/%d ready", d.Status.ReadyReplicas, want)
		if d.Status.ObservedGeneration < d.Generation || d.Status.ReadyReplicas != want || d.Status.UpdatedReplicas != want {
			return false, nil
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return false, err
		}
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, nil
		}
		pods = pods[:0]
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) && startedSince(&p, since) {
				pods = append(pods, p)
			}
		}
		last += fmt.Sprintf(", %d pods Running and Ready since the boot", len(pods))
		return int32(len(pods)) == want, nil
	})
	if err != nil {
		t.Fatalf("Deployment %s/%s not Ready (last: %s): %v", ns, name, last, err)
	}
	return time.Now(), pods
}

// startedSince: every container of the pod runs, started after since.
func startedSince(p *corev1.Pod, since time.Time) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil || c.State.Running.StartedAt.Time.Before(since.Truncate(time.Second)) {
			return false
		}
	}
	return true
}

// workloadImage is agnhost's image as the network checks' pods name it: AgnhostImage, or in the mirror case
// (mirror.go) the same image by digest, pulled through the mirror (TestInner sets it from the spec).
var workloadImage = AgnhostImage

// netexecContainer is agnhost netexec on netexecPort, Ready when it answers /healthz.
func netexecContainer() corev1.Container {
	return corev1.Container{Name: "netexec", Image: workloadImage, Args: []string{"netexec", "--http-port=" + strconv.Itoa(netexecPort)},
		Ports: []corev1.ContainerPort{{ContainerPort: netexecPort, Name: "http"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(netexecPort)}},
			PeriodSeconds: 1}}
}

// netexecPod is a netexec pod on the named node (test infrastructure: it tolerates every taint, so that the check
// does not depend on the scheduling rule of the control-plane node).
func netexecPod(name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.PodSpec{
		NodeSelector:                  map[string]string{"kubernetes.io/hostname": node},
		Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		AutomountServiceAccountToken:  ptr(false),
		TerminationGracePeriodSeconds: ptr(int64(1)),
		Containers:                    []corev1.Container{netexecContainer()},
	}}
}

// createIfAbsent creates an object unless it exists (the reboot finds the first boot's).
func createIfAbsent(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create %s: %v", what, err)
	}
}

// families are the IP families of the node's addresses, primary first ("IPv4", "IPv6").
func families(addrs []NodeAddress) []corev1.IPFamily {
	var out []corev1.IPFamily
	for _, a := range addrs {
		f := corev1.IPv6Protocol
		if a.IP.Is4() {
			f = corev1.IPv4Protocol
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func svcName(f corev1.IPFamily) string { return "web-" + strings.ToLower(string(f)) }

// ensureWorkload creates (unless the first boot did) the namespace, the 2-replica netexec Deployment, one ClusterIP
// Service per family, a dual-stack-if-possible NodePort Service and the client pod on the node.
func ensureWorkload(t *testing.T, cs *kubernetes.Clientset, node string, fams []corev1.IPFamily) {
	t.Helper()
	ctx := context.Background()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNS}}, metav1.CreateOptions{})
	createIfAbsent(t, "namespace "+workloadNS, err)
	// The namespace's default ServiceAccount (kube-controller-manager) must exist before a pod is admitted.
	if err := poll(ctx, time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(workloadNS).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("namespace %s: no default ServiceAccount: %v", workloadNS, err)
	}
	labels := map[string]string{"app": webApp}
	c := netexecContainer()
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: webApp}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			// The scheduler places them: on the single node, the control-plane node takes workloads.
			Containers: []corev1.Container{c}, TerminationGracePeriodSeconds: ptr(int64(1))}}}}
	_, err = cs.AppsV1().Deployments(workloadNS).Create(ctx, dep, metav1.CreateOptions{})
	createIfAbsent(t, "deployment "+webApp, err)
	port := []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(netexecPort)}}
	for _, f := range fams {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svcName(f)}, Spec: corev1.ServiceSpec{
			Selector: labels, Ports: port, IPFamilies: []corev1.IPFamily{f}, IPFamilyPolicy: ptr(corev1.IPFamilyPolicySingleStack)}}
		_, err = cs.CoreV1().Services(workloadNS).Create(ctx, svc, metav1.CreateOptions{})
		createIfAbsent(t, "service "+svc.Name, err)
	}
	np := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: nodePortSvc}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
		Selector: labels, Ports: port, IPFamilyPolicy: ptr(corev1.IPFamilyPolicyPreferDualStack)}}
	_, err = cs.CoreV1().Services(workloadNS).Create(ctx, np, metav1.CreateOptions{})
	createIfAbsent(t, "service "+nodePortSvc, err)
	_, err = cs.CoreV1().Pods(workloadNS).Create(ctx, netexecPod(clientPod, node, map[string]string{"app": clientPod}), metav1.CreateOptions{})
	createIfAbsent(t, "pod "+clientPod, err)
}

// waitPodReady waits (bounded) until the pod is Running and Ready with containers of this boot; it returns it.
func waitPodReady(t *testing.T, cs *kubernetes.Clientset, ns, name string, since time.Time, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	var last string
	err := poll(context.Background(), timeout, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		var err error
		p, err = cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil {
				last += " (" + w.Reason + ": " + w.Message + ")"
			}
		}
		return p.Status.Phase == corev1.PodRunning && podReady(p) && startedSince(p, since), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not Running and Ready since the boot (last: %s): %v", ns, name, last, err)
	}
	return p
}

// dialResult is netexec's /dial answer.
type dialResult struct {
	Responses []string `json:"responses"`
	Errors    []string `json:"errors"`
}

// dialFrom asks netexec in pod (through the API server's pod proxy) to GET http://host:port/hostname tries times
// from inside the pod, and returns what answered. host may be a name: netexec resolves it in the pod, through
// the pod's DNS (the kubelet's clusterDNS: CoreDNS).
func dialFrom(ctx context.Context, cs *kubernetes.Clientset, ns, pod, host string, port, tries int) (dialResult, error) {
	var r dialResult
	b, err := cs.CoreV1().Pods(ns).ProxyGet("http", pod, strconv.Itoa(netexecPort), "dial", map[string]string{
		"request": "hostname", "protocol": "http", "host": host, "port": strconv.Itoa(port), "tries": strconv.Itoa(tries)}).DoRaw(ctx)
	if err != nil {
		return r, fmt.Errorf("%v: %s", err, b)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", b, err)
	}
	return r, nil
}

// checkDial polls (bounded) dialFrom until every try answered and the answers are all in want and, with
// wantAll, cover every one of want; it returns the answers.
func checkDial(t *testing.T, cs *kubernetes.Clientset, what, pod, host string, port int, want []string, wantAll bool) []string {
	t.Helper()
	tries := 1
	if wantAll {
		tries = 10 * len(want)
	}
	var last string
	var got []string
	t0 := time.Now()
	err := poll(context.Background(), 2*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		r, err := dialFrom(ctx, cs, workloadNS, pod, host, port, tries)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("responses %v errors %v", r.Responses, r.Errors)
		if len(r.Errors) > 0 || len(r.Responses) != tries {
			return false, nil
		}
		seen := map[string]bool{}
		for _, h := range r.Responses {
			if !slices.Contains(want, h) {
				return false, fmt.Errorf("%s answered, not one of %v", h, want)
			}
			seen[h] = true
		}
		got = sortedKeys(seen)
		return !wantAll || len(seen) == len(want), nil
	})
	if err != nil {
		t.Errorf("%s: pod %s -> http://%s: %v (last: %s)", what, pod, net.JoinHostPort(host, strconv.Itoa(port)), err, last)
		return nil
	}
	t.Logf("%s: pod %s -> http://%s answered by %v (%.1fs)", what, pod, net.JoinHostPort(host, strconv.Itoa(port)), got, time.Since(t0).Seconds())
	return got
}

// podNames are the pods' names (what netexec answers to /hostname).
func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// workloadFigures are the first boot's network figures, after the control plane's mirror pods were Ready.
type workloadFigures struct {
	NodeReady, CoreDNSReady time.Duration
}

// checkWorkload runs the single-node checks on the booted node (see the comment at the top); mirrorReady is when
// the control plane's mirror pods were seen Ready in this boot. It returns the figures.
func checkWorkload(t *testing.T, spec *innerSpec, n *Node, cs *kubernetes.Clientset, mirrorReady time.Time) workloadFigures {
	t.Helper()
	var fig workloadFigures
	since := n.KubeletStart
	_, transition := waitNodeReady(t, cs, n.NodeName, since, 3*time.Minute)
	n.eventAt(transition, fmt.Sprintf("Node %s Ready (its condition's transition, a second's precision)", n.NodeName))
	fig.NodeReady = transition.Sub(mirrorReady)
	_, dnsPods := waitDeploymentReady(t, cs, "kube-system", "coredns", since, 4*time.Minute)
	dnsReady := readySince(dnsPods)
	n.eventAt(dnsReady, "Deployment kube-system/coredns Ready: its last pod's Ready condition (a second's precision)")
	fig.CoreDNSReady = dnsReady.Sub(mirrorReady)
	label := "FIGURE " // the first boot's: after a reboot, the Node's condition may not have changed since the last boot
	if n.phase() != "boot" {
		label = ""
	}
	t.Logf(label+"%s: after the control plane's mirror pods were Ready (seen at %+.1fs): Node Ready %+.1fs, CoreDNS Ready %+.1fs (pods %v; transition times, a second's precision)",
		n.phase(), mirrorReady.Sub(n.KubeletStart).Seconds(), fig.NodeReady.Seconds(), fig.CoreDNSReady.Seconds(), podNames(dnsPods))

	addrs := spec.addrs(t)
	fams := families(addrs)
	ensureWorkload(t, cs, n.NodeName, fams)
	_, web := waitDeploymentReady(t, cs, workloadNS, webApp, since, 3*time.Minute)
	names := podNames(web)
	for _, p := range web {
		checkPodIPs(t, &p, fams)
	}
	t.Logf("Deployment %s/%s: %d replicas Running and Ready: %v", workloadNS, webApp, len(web), podIPsOf(web))
	cp := waitPodReady(t, cs, workloadNS, clientPod, since, 3*time.Minute)
	checkPodIPs(t, cp, fams)

	// The ClusterIP Services by name, through CoreDNS, each family's (dual stack: both).
	for _, f := range fams {
		host := svcName(f) + "." + workloadNS + ".svc.cluster.local"
		svc, err := cs.CoreV1().Services(workloadNS).Get(context.Background(), svcName(f), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkDial(t, cs, fmt.Sprintf("ClusterIP Service %s (%s, %s) by DNS name", svc.Name, f, svc.Spec.ClusterIP), clientPod, host, 80, names, true)
	}

	// The outside machine: a NodePort on each node IP from it; a pod reaching it (masqueraded as the node).
	oaddrs, err := OutsideAddrs(addrs, outsideShift)
	if err != nil {
		t.Fatal(err)
	}
	out, err := StartOutside(context.Background(), oaddrs, outsidePort)
	if err != nil {
		t.Fatalf("the outside machine: %v", err)
	}
	defer out.Stop()
	np, err := cs.CoreV1().Services(workloadNS).Get(context.Background(), nodePortSvc, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodePort := int(np.Spec.Ports[0].NodePort)
	for _, a := range addrs {
		addr := net.JoinHostPort(a.IP.String(), strconv.Itoa(nodePort))
		var body string
		t0 := time.Now()
		err := poll(context.Background(), 2*time.Minute, time.Second, func(context.Context) (bool, error) {
			var err error
			body, err = HTTPGet(out.NetnsPath(), addr, "/hostname", 5*time.Second)
			if err != nil {
				return false, err
			}
			if !slices.Contains(names, body) {
				return false, fmt.Errorf("answered %q, not one of %v", body, names)
			}
			return true, nil
		})
		if err != nil {
			t.Errorf("NodePort %s from the outside machine (%v): %v", addr, oaddrs, err)
		} else {
			t.Logf("NodePort %s (Service %s, families %v) from the outside machine %v: answered by %s (%.1fs)", addr, nodePortSvc, np.Spec.IPFamilies, oaddrs, body, time.Since(t0).Seconds())
		}
	}
	for i, o := range oaddrs {
		before := len(out.Peers())
		if checkDial(t, cs, "the machine network outside the node", clientPod, o.IP.String(), outsidePort, []string{OutsideName}, false) == nil {
			continue
		}
		peers := out.Peers()[before:]
		for _, p := range peers {
			host, _, _ := net.SplitHostPort(p)
			if ip, err := netip.ParseAddr(host); err != nil || ip.Unmap() != addrs[i].IP {
				t.Errorf("the outside machine saw the pod's call from %s, want the node's %s (the egress masquerade)", p, addrs[i].IP)
			}
		}
		t.Logf("the outside machine %s saw the pod's calls from %v: masqueraded as the node", o.IP, peers)
	}
	return fig
}

// checkPodIPs: the pod has an address in each of the cluster's families (the CNI bridge's host-local ranges).
func checkPodIPs(t *testing.T, p *corev1.Pod, fams []corev1.IPFamily) {
	t.Helper()
	var got []corev1.IPFamily
	for _, ip := range p.Status.PodIPs {
		if a, err := netip.ParseAddr(ip.IP); err == nil {
			f := corev1.IPv6Protocol
			if a.Is4() {
				f = corev1.IPv4Protocol
			}
			got = append(got, f)
		}
	}
	if !slices.Equal(got, fams) {
		t.Errorf("pod %s/%s: IPs %v, want one of each family %v", p.Namespace, p.Name, p.Status.PodIPs, fams)
	}
}

func podIPsOf(pods []corev1.Pod) map[string][]string {
	out := map[string][]string{}
	for _, p := range pods {
		for _, ip := range p.Status.PodIPs {
			out[p.Name] = append(out[p.Name], ip.IP)
		}
	}
	return out
}

// The cross-node workload (a worker beside the control-plane node).
const (
	acrossApp   = "across"    // the Service with an endpoint on each node
	webOnCP     = "across-cp" // its endpoint on the control-plane node
	webOnWorker = "across-w"  // its endpoint on the worker
	clientOnW   = "client-w"  // the client pod on the worker
)

// checkAcrossNodes: with the worker w up (its kubelet started at wStart, its network namespace at wNetns): the
// worker's Node Ready; pods on both nodes reach each other by pod IP (each family); a Service with an endpoint on
// each node reached by name from a pod on each node and by ClusterIP from each node's own network namespace, every
// endpoint answering.
func checkAcrossNodes(t *testing.T, spec *innerSpec, n *Node, cs *kubernetes.Clientset, w *workerSpec, wStart time.Time, wNetns string) {
	t.Helper()
	ctx := context.Background()
	seen, _ := waitNodeReady(t, cs, w.Name, wStart, 3*time.Minute)
	t.Logf("FIGURE worker %s: kubelet start -> Node %s Ready %.1fs", spec.Case, w.Name, seen.Sub(wStart).Seconds())
	// kube-proxy's static pod on the worker (its mirror pod): the kubelet may reject a static pod it admits before it
	// knows the Node's allocatable (a Node declared before its kubelet ran has none), and never retries it.
	kp := "kube-proxy-" + w.Name
	var kpState string
	if err := poll(ctx, time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("kube-system").Get(ctx, kp, metav1.GetOptions{})
		if err != nil {
			kpState = err.Error()
			return false, nil
		}
		kpState = fmt.Sprintf("%s %s: %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
		if p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("the kubelet rejected it: %s", kpState)
		}
		return p.Status.Phase == corev1.PodRunning && startedSince(p, wStart), nil
	}); err != nil {
		t.Errorf("kube-proxy's static pod on %s is not running since the boot (last: %s): %v", w.Name, kpState, err)
	}
	labels := map[string]string{"app": acrossApp}
	for _, p := range []*corev1.Pod{netexecPod(webOnCP, n.NodeName, labels), netexecPod(webOnWorker, w.Name, labels),
		netexecPod(clientOnW, w.Name, map[string]string{"app": clientOnW})} {
		_, err := cs.CoreV1().Pods(workloadNS).Create(ctx, p, metav1.CreateOptions{})
		createIfAbsent(t, "pod "+p.Name, err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: acrossApp}, Spec: corev1.ServiceSpec{Selector: labels,
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(netexecPort)}}}}
	_, err := cs.CoreV1().Services(workloadNS).Create(ctx, svc, metav1.CreateOptions{})
	createIfAbsent(t, "service "+acrossApp, err)
	fams := families(spec.addrs(t))
	onCP := waitPodReady(t, cs, workloadNS, webOnCP, n.KubeletStart, 3*time.Minute)
	onW := waitPodReady(t, cs, workloadNS, webOnWorker, wStart, 3*time.Minute)
	cw := waitPodReady(t, cs, workloadNS, clientOnW, wStart, 3*time.Minute)
	for _, p := range []*corev1.Pod{onCP, onW, cw} {
		checkPodIPs(t, p, fams)
	}
	t.Logf("pods: %s on %s %v; %s on %s %v; %s on %s %v", onCP.Name, onCP.Spec.NodeName, onCP.Status.PodIPs, onW.Name, onW.Spec.NodeName,
		onW.Status.PodIPs, cw.Name, cw.Spec.NodeName, cw.Status.PodIPs)
	if onCP.Spec.NodeName != n.NodeName || onW.Spec.NodeName != w.Name || cw.Spec.NodeName != w.Name {
		t.Fatalf("the pods are not on the nodes asked for")
	}
	// Pod to pod across the nodes, each way, each family.
	for _, ip := range onW.Status.PodIPs {
		checkDial(t, cs, "across the nodes ("+n.NodeName+" -> "+w.Name+")", clientPod, ip.IP, netexecPort, []string{webOnWorker}, false)
	}
	for _, ip := range onCP.Status.PodIPs {
		checkDial(t, cs, "across the nodes ("+w.Name+" -> "+n.NodeName+")", clientOnW, ip.IP, netexecPort, []string{webOnCP}, false)
	}
	// The Service from a pod on each node, by name: both endpoints answer.
	both := []string{webOnCP, webOnWorker}
	host := acrossApp + "." + workloadNS + ".svc.cluster.local"
	checkDial(t, cs, "Service "+acrossApp+" from "+n.NodeName, clientPod, host, 80, both, true)
	checkDial(t, cs, "Service "+acrossApp+" from "+w.Name, clientOnW, host, 80, both, true)
	// The Service from each node's own network namespace, by its ClusterIP.
	s, err := cs.CoreV1().Services(workloadNS).Get(ctx, acrossApp, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(s.Spec.ClusterIP, "80")
	for _, from := range []struct{ node, netns string }{{n.NodeName, ""}, {w.Name, wNetns}} {
		got := map[string]bool{}
		var last error
		err := poll(ctx, 2*time.Minute, 200*time.Millisecond, func(context.Context) (bool, error) {
			body, err := HTTPGet(from.netns, addr, "/hostname", 5*time.Second)
			if err != nil {
				last = err
				return false, nil
			}
			if !slices.Contains(both, body) {
				return false, fmt.Errorf("answered %q, not one of %v", body, both)
			}
			got[body] = true
			return len(got) == len(both), nil
		})
		if err != nil {
			t.Errorf("Service %s (%s) from the node %s's network namespace: answered by %v: %v (last: %v)", acrossApp, addr, from.node, sortedKeys(got), err, last)
		} else {
			t.Logf("Service %s (%s) from the node %s's network namespace: answered by %v", acrossApp, addr, from.node, sortedKeys(got))
		}
	}
}

// readySince is when the last of the pods turned Ready (their Ready conditions' transitions).
func readySince(pods []corev1.Pod) time.Time {
	var last time.Time
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.LastTransitionTime.Time.After(last) {
				last = c.LastTransitionTime.Time
			}
		}
	}
	return last
}

// controlPlaneReady is when the harness saw the last of the control plane's mirror pods (every static pod but
// kube-proxy's) Running and Ready in this boot (waitMirrorPods' events); zero if it saw none.
func controlPlaneReady(n *Node) time.Time {
	n.events.mu.Lock()
	defer n.events.mu.Unlock()
	var last time.Time
	for _, e := range n.events.events {
		if strings.HasPrefix(e.What, "mirror pod ") && !strings.Contains(e.What, "/kube-proxy-") && e.At.After(last) {
			last = e.At
		}
	}
	return last
}
