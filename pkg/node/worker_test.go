package node

import (
	"context"
	"crypto/x509"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/podnetwork"
)

// workerOf is a worker beside the test config's control-plane node: the next address of each of its IPs.
func workerOf(in *clusterconfig.Inputs, name string) clusterconfig.Worker {
	w := clusterconfig.Worker{Name: name}
	for _, ip := range in.NodeIPs {
		w.IPs = append(w.IPs, ip.Next())
	}
	return w
}

// TestWorkerTree: a worker's worker.ign lays down its kubelet and CRI-O and nothing of the control plane: the
// control-plane node's kubelet.conf but for the address (its own IPs' families) and, for an upstream kubelet,
// registerNode false (its Node is declared by the control plane); kubelet.service with its name, IPs and the
// worker role (OpenShift's kubelet) or none of the restricted labels (upstream), no taint; /etc/hosts with api
// and api-int on the control-plane node; a client certificate for system:node:<worker> of its own key, signed by
// kube-controller-manager's CSR signer; every unit parses strictly, and the tree packs into a valid Ignition
// config. For each IP family and flavor.
func TestWorkerTree(t *testing.T) {
	ctx := context.Background()
	for _, tc := range testConfigs[:3] {
		for _, flavor := range []clusterconfig.Flavor{clusterconfig.FlavorOpenShift, clusterconfig.FlavorUpstream} {
			t.Run(tc.name+"/"+string(flavor), func(t *testing.T) {
				f := newFixture(t, tc.config, tc.nodeIPs, true)
				f.in.Flavor = flavor
				w := workerOf(f.in, "worker-0")
				f.in.Workers = []clusterconfig.Worker{w}
				f.converge(t)
				cp := f.tree(t)
				tr, err := f.n.WorkerTree(ctx, w)
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]int{KubeletConfigPath: 0644, KubeletClientCAPath: 0644, KubeletKubeconfigPath: 0600, PullSecretPath: 0600,
					CRIODropinPath: 0644, HostsPath: 0644, "/etc/hostname": 0644,
					// The built-in pod network's (pkg/podnetwork), every node's.
					podnetwork.ConflistPath: 0644, podnetwork.RoutesPath: 0644, podnetwork.KubeProxyPodPath: 0644,
					podnetwork.KubeProxyConfigPath: 0644, podnetwork.KubeProxyKubeconfigPath: 0600, PodNetworkScript: 0755}
				// The install-config's user inputs are every node's (the encapsulated MachineConfig: the worker pool's).
				userInputs := []string{RegistriesConfPath, UserCATrustAnchorPath, WorkloadPinningPath, CRIOWorkloadPinningPath, EncapsulatedMachineConfigPath}
				for _, fl := range cp.Files() {
					if slices.Contains(userInputs, fl.Path) {
						want[fl.Path] = int(fl.Mode.Perm())
					}
				}
				got := map[string]int{}
				for _, fl := range tr.Files() {
					got[fl.Path] = int(fl.Mode.Perm())
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("worker files %v, want %v", got, want)
				}
				if h := fileOf(t, tr, "/etc/hostname"); string(h.Contents) != "worker-0\n" {
					t.Errorf("/etc/hostname %q", h.Contents)
				}
				for _, same := range append([]string{KubeletClientCAPath, PullSecretPath, CRIODropinPath}, userInputs[:4]...) {
					if _, ok := want[same]; !ok {
						continue
					}
					if a, b := fileOf(t, tr, same).Contents, fileOf(t, cp, same).Contents; string(a) != string(b) {
						t.Errorf("%s differs from the control-plane node's", same)
					}
				}

				cfg := decodeKubeletConfigStrict(t, fileOf(t, tr, KubeletConfigPath).Contents)
				cpCfg := decodeKubeletConfigStrict(t, fileOf(t, cp, KubeletConfigPath).Contents)
				if cfg.Address != tc.address {
					t.Errorf("kubelet address %s, want %s", cfg.Address, tc.address)
				}
				declared := flavor == clusterconfig.FlavorUpstream
				if (cfg.RegisterNode != nil && !*cfg.RegisterNode) != declared || cpCfg.RegisterNode != nil {
					t.Errorf("registerNode %v (control plane %v), want false only for the upstream worker", cfg.RegisterNode, cpCfg.RegisterNode)
				}
				cfg.RegisterNode = nil
				if !reflect.DeepEqual(cfg, cpCfg) {
					t.Errorf("the worker's kubelet.conf is not the control-plane node's:\n%s\n%s", fileOf(t, tr, KubeletConfigPath).Contents, fileOf(t, cp, KubeletConfigPath).Contents)
				}

				u := unitOf(t, tr, KubeletUnit)
				if !u.Enabled || !strings.Contains(u.Contents, "Kubelet of the worker node worker-0") {
					t.Errorf("kubelet.service enabled %v:\n%s", u.Enabled, u.Contents)
				}
				ips := make([]string, len(w.IPs))
				for i, ip := range w.IPs {
					ips[i] = ip.String()
				}
				labels := "node-role.kubernetes.io/worker,node.openshift.io/os_id=rhcos"
				if declared {
					labels = "node.openshift.io/os_id=rhcos"
				}
				for _, flag := range []string{"--hostname-override=worker-0", "--node-ip=" + strings.Join(ips, ","), "--node-labels=" + labels + " "} {
					if !strings.Contains(u.Contents, flag) {
						t.Errorf("kubelet.service has no %s:\n%s", flag, u.Contents)
					}
				}
				if strings.Contains(u.Contents, "register-with-taints") {
					t.Errorf("a worker registers with a taint:\n%s", u.Contents)
				}
				if h := string(fileOf(t, tr, HostsPath).Contents); !strings.Contains(h, tc.apiHosts+"\n") || !strings.Contains(h, "control-plane node sno-0") {
					t.Errorf("/etc/hosts:\n%s", h)
				}

				cert, server, _ := kubeconfigClientCert(t, fileOf(t, tr, KubeletKubeconfigPath).Contents)
				cpCert, cpServer, _ := kubeconfigClientCert(t, fileOf(t, cp, KubeletKubeconfigPath).Contents)
				if cert.Subject.CommonName != "system:node:worker-0" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
					t.Errorf("worker client certificate subject %s", cert.Subject)
				}
				if server != cpServer || !strings.Contains(server, "api-int.") {
					t.Errorf("worker kubeconfig server %s, control plane's %s", server, cpServer)
				}
				roots := x509.NewCertPool()
				roots.AddCert(f.signer.cert)
				if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
					t.Errorf("the worker's client certificate does not chain to the CSR signer: %v", err)
				}
				if reflect.DeepEqual(cert.PublicKey, cpCert.PublicKey) {
					t.Error("the worker's kubelet has the control-plane node's key")
				}

				for _, un := range tr.Units() {
					if _, err := parseUnit(un.Name, un.Contents, nodeCommands(tr)); un.Contents != "" && err != nil {
						t.Error(err)
					}
				}
				if _, err := export.Ignition(tr, export.IgnitionOptions{}); err != nil {
					t.Errorf("worker.ign: %v", err)
				}

				// The control-plane node's CSR approver lists the worker with its own IPs.
				nodes := string(fileOf(t, cp, ApproverNodesPath).Contents)
				if !strings.Contains(nodes, "\nworker-0 "+strings.Join(ips, " ")+"\n") {
					t.Errorf("the approver's nodes:\n%s", nodes)
				}
				if _, err := f.n.WorkerTree(ctx, clusterconfig.Worker{Name: "worker-9", IPs: []netip.Addr{w.IPs[0].Next()}}); err == nil {
					t.Error("WorkerTree of a node that is no worker of the render")
				}
			})
		}
	}
}

// TestWorkerNodes: for an upstream kubelet, which may not set its role, the control plane declares each worker's
// Node: its name and labels (the worker role, the kubelet's hostname, os and arch, RHCOS), nothing else; for
// OpenShift's kubelet, none.
func TestWorkerNodes(t *testing.T) {
	in := testInputs(t, "examples/sno/install-config.yaml", "192.168.126.10")
	in.Workers = []clusterconfig.Worker{workerOf(in, "worker-0"), {Name: "worker-1", IPs: []netip.Addr{netip.MustParseAddr("192.168.126.20")}}}
	in.Flavor = clusterconfig.FlavorOpenShift
	if ms, err := WorkerNodes(in); err != nil || len(ms) != 0 {
		t.Errorf("openshift: %d Nodes declared (%v), want none", len(ms), err)
	}
	in.Flavor = clusterconfig.FlavorUpstream
	ms, err := WorkerNodes(in)
	if err != nil || len(ms) != 2 {
		t.Fatalf("upstream: %d Nodes (%v), want 2", len(ms), err)
	}
	want := `apiVersion: v1
kind: Node
metadata:
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: worker-1
    kubernetes.io/os: linux
    node-role.kubernetes.io/worker: ""
    node.openshift.io/os_id: rhcos
  name: worker-1
`
	if string(ms[1].YAML) != want || ms[1].GVK.Kind != "Node" || !strings.HasSuffix(ms[1].File, "_node_worker-1.yaml") {
		t.Errorf("%s:\n%s\nwant:\n%s", ms[1].File, ms[1].YAML, want)
	}
}

// TestControlPlaneRoleWithWorkers: asked for no workers, the control-plane node runs workloads (the worker role,
// no taint); with day-1 workers it does not (installer: mastersSchedulable false), so it registers with the
// master NoSchedule taint, as the machine-config operator's master kubelet does, and without the worker role.
func TestControlPlaneRoleWithWorkers(t *testing.T) {
	for _, replicas := range []int64{0, 1} {
		in := testInputs(t, "examples/sno/install-config.yaml", "192.168.126.10")
		in.InstallConfig.Compute[0].Replicas = &replicas
		labels, flags := NodeLabels(in), strings.Join(kubeletFlags(in), " ")
		worker, taint := slices.Contains(labels, RoleWorker), strings.Contains(flags, "--register-with-taints=node-role.kubernetes.io/master=:NoSchedule")
		if worker != (replicas == 0) || taint != (replicas > 0) || !slices.Contains(labels, RoleMaster) {
			t.Errorf("%d workers: labels %v, flags %s", replicas, labels, flags)
		}
	}
}
