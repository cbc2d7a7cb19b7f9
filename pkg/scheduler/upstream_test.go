package scheduler_test

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/upstreamtest"
	"github.com/render-static/render-static/pkg/scheduler"
)

// Tests of --flavor upstream: the kube-scheduler pod is a flag-only pod for the upstream image whose every flag is a
// flag of kube-scheduler v1.34.3 (--kubeconfig the only deprecated one) and whose every file is one the render lays
// down (the files the OpenShift pod names); the rest of the render is the OpenShift flavor's.

var updateUpstreamFlags = flag.Bool("update-upstream-flags", false,
	"rewrite testdata/upstream/kube-scheduler-flags.txt from the e2e-built kube-scheduler's --help")

const (
	upstreamFlagList = "testdata/upstream/kube-scheduler-flags.txt"
	upstreamVersion  = "Kubernetes v1.34.3"
	upstreamImage    = "registry.k8s.io/kube-scheduler:v1.34.3"
)

// allowedDeprecated: kube-scheduler v1.34 has no other flag for its client connection than the deprecated
// --kubeconfig (its replacement is --config); kubeadm v1.34 passes it too.
var allowedDeprecated = map[string]bool{"kubeconfig": true}

func renderUpstream(t *testing.T, c upstreamtest.Case) *upstreamtest.Render {
	t.Helper()
	sno(t) // skips (or fails) without ../shared, like the OpenShift flavor's tests
	r, err := upstreamtest.Get(c)
	if err != nil {
		t.Fatalf("upstream render of %s: %v", c.InstallConfig, err)
	}
	return r
}

func loadUpstreamFlags(t *testing.T) *upstreamtest.FlagList {
	t.Helper()
	l, err := upstreamtest.LoadFlagList(upstreamFlagList)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Flags) < 50 || len(l.Values["cipher-suite"]) < 10 || len(l.Values["tls-version"]) < 4 || !l.Deprecated["kubeconfig"] {
		t.Fatalf("%s is incomplete: %d flags, %d cipher suites, %d TLS versions, --kubeconfig deprecated %v", upstreamFlagList,
			len(l.Flags), len(l.Values["cipher-suite"]), len(l.Values["tls-version"]), l.Deprecated["kubeconfig"])
	}
	return l
}

// upstreamFileFlags are the flags whose values name files kube-scheduler reads.
var upstreamFileFlags = map[string]bool{
	"kubeconfig": true, "authentication-kubeconfig": true, "authorization-kubeconfig": true,
	"tls-cert-file": true, "tls-private-key-file": true,
}

// TestUpstreamPod checks the upstream kube-scheduler pod of each case: one flag-only container of the upstream
// image; flags of kube-scheduler v1.34.3 only, no OpenShift flag or feature gate, no config file; every file it names
// laid down by the render, mapped through the pod's mounts, and only the revision and the cert directory mounted
// from the node; a kubeconfig that reaches api-int as system:kube-scheduler; kubeadm's lease; the TLS profile; HTTPS
// probes on 10259.
func TestUpstreamPod(t *testing.T) {
	list := loadUpstreamFlags(t)
	for _, tc := range upstreamtest.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := renderUpstream(t, tc)
			if rev := r.Engine.Revisions[component]; rev != 1 {
				t.Errorf("revision %d, want 1", rev)
			}
			pod, err := r.Pod(podFile)
			if err != nil {
				t.Fatal(err)
			}
			if pod.Name != "openshift-kube-scheduler" || pod.Namespace != scheduler.TargetNamespace || pod.Labels["revision"] != "1" ||
				pod.Labels["component"] != "kube-scheduler" {
				t.Errorf("pod %s/%s labels %v", pod.Namespace, pod.Name, pod.Labels)
			}
			if len(pod.Spec.InitContainers) != 0 || len(pod.Spec.Containers) != 1 {
				t.Fatalf("pod has %d init containers and %d containers, want 0 and 1", len(pod.Spec.InitContainers), len(pod.Spec.Containers))
			}
			c := &pod.Spec.Containers[0]
			if c.Name != "kube-scheduler" || c.Image != upstreamImage || c.Image != r.Inputs.Images.Image(scheduler.UpstreamImage) ||
				strings.Join(c.Command, " ") != "kube-scheduler" {
				t.Errorf("container %s image %s command %v, want kube-scheduler %s [kube-scheduler]", c.Name, c.Image, c.Command, upstreamImage)
			}
			if len(c.Env) > 0 {
				t.Errorf("env %v: the upstream pod takes flags only", c.Env)
			}

			args, err := upstreamtest.ParseArgs(c.Args)
			if err != nil {
				t.Fatal(err)
			}
			upstreamtest.CheckCommandLine(t, c, []string{"openshift", "/bin/sh", "/bin/bash", "hyperkube", "config.yaml", "--config", "feature-gates"})
			upstreamtest.CheckFlags(t, args, list, "kube-scheduler v1.34.3", allowedDeprecated)
			one := func(name string) string {
				t.Helper()
				return upstreamtest.One(t, args, name)
			}

			upstreamtest.CheckFileFlags(t, r, pod, c, args, upstreamFileFlags)
			upstreamtest.CheckScratchDir(t, pod, c, one("cert-dir"))
			upstreamtest.CheckVolumes(t, r, pod, c, component)

			// All three client connections: scheduler-kubeconfig, api-int as system:kube-scheduler.
			domain := r.Inputs.InstallConfig.ClusterDomain()
			kubeconfig := one("kubeconfig")
			if a, z := one("authentication-kubeconfig"), one("authorization-kubeconfig"); a != kubeconfig || z != kubeconfig {
				t.Errorf("--authentication-kubeconfig=%s --authorization-kubeconfig=%s, want --kubeconfig's %s", a, z, kubeconfig)
			}
			if err := r.CheckKubeconfig(pod, c.Name, upstreamtest.Kubeconfig{
				Path: kubeconfig, Server: "https://api-int." + domain + ":6443", User: "system:kube-scheduler",
				ServerName: "api-int." + domain, ServingCertFile: kasCerts + "/secrets/internal-loadbalancer-serving-certkey/tls.crt",
				ClientCAFile: kasCerts + "/configmaps/client-ca/ca-bundle.crt",
			}); err != nil {
				t.Error(err)
			}

			bind := "0.0.0.0"
			if tc.Name == "ipv6" || tc.Name == "dualstack" {
				bind = "::"
			}
			want := map[string]string{
				"bind-address": bind, "secure-port": "10259", "cert-dir": "/var/run/kubernetes",
				"leader-elect": "true", "leader-elect-resource-namespace": "kube-system", "leader-elect-resource-name": "kube-scheduler",
				"permit-address-sharing": "true", "v": "2", "tls-min-version": "VersionTLS12",
			}
			for name, v := range want {
				if got := one(name); got != v {
					t.Errorf("--%s=%s, want %s", name, got, v)
				}
			}
			suites := strings.Split(one("tls-cipher-suites"), ",")
			for _, s := range suites {
				if !list.Values["cipher-suite"][s] {
					t.Errorf("cipher suite %s is not one kube-scheduler prefers (insecure: %v)", s, list.Values["insecure-cipher-suite"][s])
				}
			}
			if len(suites) < 4 || !list.Values["tls-version"][one("tls-min-version")] {
				t.Errorf("TLS profile: suites %v, min version %s", suites, one("tls-min-version"))
			}
			upstreamtest.CheckProbes(t, pod, c, r.Inputs.NodeIP().String(), 10259)
		})
	}
}

// TestUpstreamSameFilesAsOpenShift: the kubeconfig the upstream pod names is the one the OpenShift pod's
// config.yaml (clientConnection) and flags name, and the two pods mount the same node directories at the same
// places.
func TestUpstreamSameFilesAsOpenShift(t *testing.T) {
	up := renderUpstream(t, upstreamtest.Cases[0])
	openshift := sno(t)
	osPod, err := openshift.Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	osFlags := map[string]string{}
	for _, a := range osPod.Spec.Containers[0].Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		osFlags[name] = value
	}
	f, ok := openshift.File(revDir + "/configmaps/config/config.yaml")
	if !ok {
		t.Fatal("no config.yaml in the OpenShift flavor")
	}
	m := regexp.MustCompile(`"kubeconfig":"([^"]+)"`).FindStringSubmatch(string(f.Contents))
	if m == nil {
		t.Fatalf("config.yaml names no kubeconfig: %s", f.Contents)
	}
	osFlags["kubeconfig"] = m[1]
	upPod, err := up.Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	args, err := upstreamtest.ParseArgs(upPod.Spec.Containers[0].Args)
	if err != nil {
		t.Fatal(err)
	}
	same := upstreamtest.SamePathFlags(t, args, osFlags)
	if want := "authentication-kubeconfig authorization-kubeconfig cert-dir kubeconfig"; strings.Join(same, " ") != want {
		t.Errorf("path flags shared with the OpenShift pod: %v, want %s", same, want)
	}
	if o, u := upstreamtest.HostPathMounts(osPod), upstreamtest.HostPathMounts(upPod); fmt.Sprint(o) != fmt.Sprint(u) {
		t.Errorf("node directories mounted: OpenShift pod %v, upstream pod %v", o, u)
	}
}

// TestUpstreamLayoutIsTheOpenShiftFlavors: the upstream flavor lays down the same kube-scheduler files, with the
// same modes, as the OpenShift flavor; the revision's config.yaml and kubeconfig are the same; only the pod differs.
func TestUpstreamLayoutIsTheOpenShiftFlavors(t *testing.T) {
	up := renderUpstream(t, upstreamtest.Cases[0])
	openshift := sno(t)
	n := upstreamtest.CompareLayout(t, up, openshift, component)
	if n < 15 {
		t.Errorf("only %d kube-scheduler files compared", n)
	}
	for _, p := range []string{revDir + "/configmaps/config/config.yaml", revDir + "/configmaps/scheduler-kubeconfig/kubeconfig"} {
		o, _ := openshift.File(p)
		u, ok := up.File(p)
		if !ok || len(o.Contents) == 0 || string(u.Contents) != string(o.Contents) {
			t.Errorf("%s differs between the flavors", p)
		}
	}
}

// TestUpstreamFlagsParseWithTheBinary: when the e2e harness has built kube-scheduler v1.34.3, the committed flag
// list is its --help, and its own flag set parses every case's arguments (an unknown flag or a malformed value
// fails, as the last check shows). Skipped without the binary.
func TestUpstreamFlagsParseWithTheBinary(t *testing.T) {
	bin := upstreamtest.RequireBinary(t, "kube-scheduler", upstreamVersion, *updateUpstreamFlags)
	help, err := upstreamtest.Help(bin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := upstreamtest.FlagListFromHelp(help, `kube-scheduler v1.34.3, from the --help of the binary test/e2e builds (k8s.io/kubernetes v1.34.3):
flag NAME TYPE [deprecated] (TYPE bool: no value type), cipher-suite (preferred), insecure-cipher-suite, tls-version.
Regenerate with
  go test ./pkg/scheduler -run TestUpstreamFlagsParseWithTheBinary -args -update-upstream-flags`, upstreamtest.TLSValueLists)
	if err != nil {
		t.Fatal(err)
	}
	upstreamtest.CheckFlagList(t, upstreamFlagList, bin, got, *updateUpstreamFlags, "go test ./pkg/scheduler -run TestUpstreamFlagsParseWithTheBinary -args -update-upstream-flags")
	for _, tc := range upstreamtest.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			pod, err := renderUpstream(t, tc).Pod(podFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := upstreamtest.ParsesFlags(bin, pod.Spec.Containers[0].Args); err != nil {
				t.Error(err)
			}
		})
	}
	for _, bad := range [][]string{{"--config=/x.yaml", "--policy-config-file=/p"}, {"--bind-address=not-an-ip"}, {"--secure-port=x"}} {
		if err := upstreamtest.ParsesFlags(bin, bad); err == nil {
			t.Errorf("kube-scheduler accepted %v", bad)
		}
	}
}

// TestUpstreamArgs: the flags of the rendered inputs are the pod's; what the flag-only scheduler cannot run is
// refused (a profile other than upstream's default plugins, a profile customization, a policy), and so is an input
// it cannot start without.
func TestUpstreamArgs(t *testing.T) {
	r := renderUpstream(t, upstreamtest.Cases[0])
	spec, _, _, err := r.Engine.Component(component).Operator().GetStaticPodOperatorState()
	if err != nil {
		t.Fatal(err)
	}
	inputs := func() scheduler.UpstreamInputs {
		var observed map[string]interface{}
		if err := yaml.Unmarshal(spec.ObservedConfig.Raw, &observed); err != nil {
			t.Fatal(err)
		}
		return scheduler.UpstreamInputs{Observed: observed, NodeIPs: r.Inputs.NodeIPs, Verbosity: 2}
	}
	args, err := scheduler.UpstreamArgs(inputs())
	if err != nil {
		t.Fatalf("the rendered inputs: %v", err)
	}
	pod, err := r.Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(args, " ") != strings.Join(pod.Spec.Containers[0].Args, " ") {
		t.Errorf("UpstreamArgs of the rendered inputs %v, the pod's %v", args, pod.Spec.Containers[0].Args)
	}
	in := inputs()
	in.Scheduler.Profile = configv1.LowNodeUtilization
	if _, err := scheduler.UpstreamArgs(in); err != nil {
		t.Errorf("LowNodeUtilization: %v", err)
	}
	for name, s := range map[string]configv1.SchedulerSpec{
		"HighNodeUtilization": {Profile: configv1.HighNodeUtilization},
		"NoScoring":           {Profile: configv1.NoScoring},
		"DRA":                 {ProfileCustomizations: configv1.ProfileCustomizations{DynamicResourceAllocation: configv1.DRAEnablementEnabled}},
		"policy":              {Policy: configv1.ConfigMapNameReference{Name: "my-policy"}},
	} {
		in := inputs()
		in.Scheduler = s
		if got, err := scheduler.UpstreamArgs(in); err == nil {
			t.Errorf("%s: %v, want an error", name, got)
		}
	}
	in = inputs()
	delete(in.Observed["servingInfo"].(map[string]interface{}), "minTLSVersion")
	if _, err := scheduler.UpstreamArgs(in); err == nil || !strings.Contains(err.Error(), "minTLSVersion") {
		t.Errorf("without servingInfo.minTLSVersion: error %v", err)
	}
	in = inputs()
	in.NodeIPs = nil
	if _, err := scheduler.UpstreamArgs(in); err == nil {
		t.Errorf("no error without node IPs")
	}
}

// TestUpstreamOpenShiftFlavorUnchanged: the OpenShift flavor still renders the operator's pod (the conformance
// tests compare it with the reference field by field).
func TestUpstreamOpenShiftFlavorUnchanged(t *testing.T) {
	pod, err := sno(t).Pod(podFile)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		names = append(names, c.Name)
		if strings.Contains(c.Image, "registry.k8s.io") {
			t.Errorf("container %s runs the upstream image %s in the OpenShift flavor", c.Name, c.Image)
		}
	}
	if want := "wait-for-host-port kube-scheduler kube-scheduler-cert-syncer kube-scheduler-recovery-controller"; strings.Join(names, " ") != want {
		t.Errorf("containers %v, want %s", names, want)
	}
	if !strings.Contains(strings.Join(pod.Spec.Containers[0].Args, " "), "--config=") {
		t.Errorf("the OpenShift pod lost --config")
	}
}
