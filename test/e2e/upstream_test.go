package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// The end-to-end test: `render-static --flavor upstream` renders an install-config into aio.ign; Debian's real
// Ignition lays it into a root (the node's disk); a real kubelet and containerd boot it inside private network,
// mount and PID namespaces (node.go); client-go checks the cluster; the node is stopped and booted again on the
// same disk (reboot).

type upstreamCase struct {
	name, installConfig, nodeIPs string // nodeIPs as --node-ip takes them: primary first
	// worker, when set, are the IPs (as --node-ip) of a worker that joins the node on day 2, in its reboot
	// (worker_test.go).
	worker string
	// mirror makes the case the mirror-only one (issue 38, mirror.go): its render gets a release file naming every
	// image by digest under ReleaseSource, nothing is imported, the first boot pulls everything from the harness's
	// mirror (the install-config's imageDigestSources), and the reboot runs with the mirror stopped.
	mirror bool
}

var upstreamCases = []upstreamCase{
	{"ipv4", "install-config-ipv4.yaml", "192.168.126.10", "192.168.126.11", false},
	{"ipv6", "install-config-ipv6.yaml", "fd2e:6f44:5dd8:c956::14", "fd2e:6f44:5dd8:c956::15", false},
	// The mirror-only case shares the dual stack boots (no boot of its own: cost).
	{"dualstack", "install-config-dualstack.yaml", "192.168.126.10,fd2e:6f44:5dd8:c956::14", "", true},
}

// upstreamWorkerName is the name of the worker a case adds.
const upstreamWorkerName = "worker-0"

const upstreamNodeName = "master-0"

// moduleRoot is the product module (test/e2e is two levels down).
func moduleRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "render-static")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	return root
}

// buildRenderStatic builds the CLI of this checkout into dir.
func buildRenderStatic(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := GoTool()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "render-static")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, "./cmd/render-static")
	cmd.Dir = moduleRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/render-static: %v\n%s", err, b)
	}
	return out
}

// workDir is a scratch directory: t.TempDir(), or a kept one under $RENDER_STATIC_E2E_WORK.
func workDir(t *testing.T) string {
	if base := os.Getenv("RENDER_STATIC_E2E_WORK"); base != "" {
		d := filepath.Join(base, strings.ReplaceAll(t.Name(), "/", "_"))
		os.RemoveAll(d)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("work directory (kept): %s", d)
		return d
	}
	d := t.TempDir()
	// Ignition writes core's ssh key as core (uid 1000): the root's ancestors must be traversable, and
	// t.TempDir makes them 0700.
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

type installConfigNames struct {
	BaseDomain string `json:"baseDomain"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Networking struct {
		MachineNetwork []struct {
			CIDR string `json:"cidr"`
		} `json:"machineNetwork"`
	} `json:"networking"`
	ImageDigestSources []struct {
		Mirrors []string `json:"mirrors"`
	} `json:"imageDigestSources"`
}

// cli is the render-static under test: $RENDER_STATIC_E2E_CLI, or this checkout built once per test binary.
var cliOnce struct {
	path string
}

func renderStaticCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RENDER_STATIC_E2E_CLI"); p != "" {
		return p
	}
	if cliOnce.path == "" {
		dir, err := os.MkdirTemp("", "render-static-e2e-cli-")
		if err != nil {
			t.Fatal(err)
		}
		cliOnce.path = buildRenderStatic(t, dir)
	}
	return cliOnce.path
}

func TestUpstreamE2E(t *testing.T) {
	preconditions(t)
	tm0 := newTimings("upstream (outer, shared)")
	var cli string
	tm0.step("build-render-static", func() { cli = renderStaticCLI(t) })
	var bins *BuildResult
	tm0.step("build-upstream", func() { bins = binaries(t) })
	t.Log(tm0.String())
	PrintOverrides(t.Logf)
	for _, c := range upstreamCases {
		t.Run(c.name, func(t *testing.T) {
			if only := os.Getenv("RENDER_STATIC_E2E_CASES"); only != "" && !strings.Contains(","+only+",", ","+c.name+",") {
				t.Skipf("not in RENDER_STATIC_E2E_CASES=%s", only)
			}
			spec := prepareUpstreamCase(t, cli, bins, c)
			tm := newTimings("upstream/" + c.name + " (outer)")
			if c.name == fleetJobCase {
				tm.step("prepare-fleet-job", func() {
					var err error
					spec.Fleet, err = PrepareFleetJob(context.Background(), moduleRoot(t), cli, bins.BinDir, filepath.Join(spec.Work, "fleet"), fleetJobSites)
					if err != nil {
						t.Fatalf("preparing the fleet Job: %v", err)
					}
				})
			}
			// One case shows a reboot half-way through aiokube; the others let it finish on the first boot and
			// print when (the IPv4 figure comes from TestUpstreamE2EPowerOff's first boot).
			spec.InterruptAiokube = c.name == interruptAiokubeCase
			spec.Conformance = c.name == conformanceCase
			spec.Phase = "boot"
			tm.step("first-boot", func() { runInner(t, spec, 15*time.Minute) })
			spec.Phase = "reboot"
			reboot := 15 * time.Minute
			if spec.Worker != nil {
				reboot += 20 * time.Minute // the worker: two boots, the control plane's renewal
			}
			tm.step("reboot", func() { runInner(t, spec, reboot) })
			t.Log(tm.String())
		})
	}
}

// prepareUpstreamCase renders an install-config of testdata/upstream with --flavor upstream and the openshift
// flavor, validates aio.ign, lays it into the node's disk with Ignition, builds the images its pods name, and
// returns the inner test's spec.
func prepareUpstreamCase(t *testing.T, cli string, bins *BuildResult, c upstreamCase) *innerSpec {
	t.Helper()
	tm := newTimings("upstream/" + c.name + " (prepare)")
	work := workDir(t)
	icPath := filepath.Join("testdata", "upstream", c.installConfig)
	var ic installConfigNames
	if err := readYAML(icPath, &ic); err != nil {
		t.Fatal(err)
	}
	// Each node IP gets the prefix length of the machine network that holds it.
	var networks []string
	for _, mn := range ic.Networking.MachineNetwork {
		networks = append(networks, mn.CIDR)
	}
	addrs, err := nodeAddrs(c.nodeIPs, networks)
	if err != nil {
		t.Fatalf("%s: %v", icPath, err)
	}
	var worker *workerSpec
	if c.worker != "" {
		waddrs, err := nodeAddrs(c.worker, networks)
		if err != nil {
			t.Fatalf("%s: worker: %v", icPath, err)
		}
		worker = &workerSpec{Name: upstreamWorkerName, IPs: c.worker, Addrs: waddrs}
	}
	// The node's static network, as a keyfile nmcli makes: aio.ign lays it down (live_test.go checks the live ISO's
	// side); the node here runs no NetworkManager, its addresses are the test's own.
	keyfile := testtools.Keyfile(t, work, "node-"+c.name+".nmconnection", addrs...)
	var mirror *MirrorLayout
	var releaseArgs []string
	if c.mirror {
		tm.step("mirror-images", func() {
			var err error
			if mirror, err = BuildMirrorLayout(context.Background(), bins.BinDir, t.Logf); err != nil {
				t.Fatal(err)
			}
			releaseArgs = mirrorReleaseArgs(t, work, mirror)
		})
	}
	render := func(flavor, out string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		args := []string{"--flavor", flavor, "--install-config", icPath, "--node-ip", c.nodeIPs, "--node-name", upstreamNodeName, "--dir", out}
		if flavor == "upstream" {
			args = append(args, upstreamRenderArgs[c.name]...)
			args = append(args, releaseArgs...)
			args = append(args, "--install-device", "/dev/vda", "--network-keyfile", keyfile)
		}
		cmd := exec.CommandContext(ctx, cli, args...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("render-static --flavor %s: %v\n%s", flavor, err, b)
		}
		t.Logf("render-static --flavor %s:\n%s", flavor, b)
		return string(b)
	}
	out := filepath.Join(work, "aio")
	tm.step("render", func() {
		said := render("upstream", out)
		if mirror != nil {
			// The render's summary says where the node pulls from (issue 38): every image by digest through the
			// install-config's mirror.
			host, _, _ := strings.Cut(ic.ImageDigestSources[0].Mirrors[0], "/")
			if want := "images, all by digest through " + host; !strings.Contains(said, want) {
				t.Errorf("the render's summary does not say %q", want)
			}
		}
	})
	openshift := filepath.Join(work, "aio-openshift")
	tm.step("render-openshift", func() { render("openshift", openshift) })
	ign := filepath.Join(out, "aio.ign")
	tm.step("validate", func() {
		if err := ValidateIgnition(context.Background(), ign); err != nil {
			t.Fatal(err)
		}
	})
	root := filepath.Join(work, "root")
	tm.step("ignition", func() {
		res, err := Ignite(context.Background(), ign, root, filepath.Join(work, "ignition"))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ignition laid %s into %s in %.1fs", ign, root, res.Duration.Seconds())
		want, _ := os.ReadFile(keyfile)
		laid := filepath.Join(root, "etc/NetworkManager/system-connections", filepath.Base(keyfile))
		if got, err := os.ReadFile(laid); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: not the keyfile given (%v)", laid, err)
		} else if st, _ := os.Stat(laid); st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", laid, st.Mode().Perm())
		}
	})
	var images string
	var mspec *mirrorSpec
	if mirror != nil {
		// Nothing to import: the node pulls every image from the mirror.
		mspec = &mirrorSpec{Layout: mirror.Dir, Agnhost: mirror.AgnhostPullSpec()}
	} else {
		tm.step("images", func() {
			var err error
			images, err = BuildImages(context.Background(), root, bins.BinDir, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Log(tm.String())
	return &innerSpec{Mirror: mspec,
		Case: c.name, Root: root, Work: work, BinDir: bins.BinDir, Images: images, NodeName: upstreamNodeName,
		NodeAddrs: addrs, Kubeconfig: filepath.Join(out, "auth", "kubeconfig"), Domain: ic.Metadata.Name + "." + ic.BaseDomain,
		OpenShiftPods: filepath.Join(openshift, "rootfs", "etc", "kubernetes", "manifests"), Worker: worker, CLI: cli,
	}
}

// interruptAiokubeCase is the case whose first boot stops aiokube half-way and whose reboot finishes it.
const interruptAiokubeCase = "ipv4"

// conformanceCase is the case whose reboot runs Kubernetes' [sig-network] DNS and Services conformance specs
// (about 3 minutes: one case, sharing its boot).
const conformanceCase = "ipv4"

// The fleet's Indexed Job runs on the first boot of one case (it tests the Job and the image, not the network
// family): fleetJobSites sites over the example's four shards, so that shard 0 renders two of them.
const (
	fleetJobCase  = "ipv4"
	fleetJobSites = 5
)

// TestUpstreamE2EBrokenFlag renders the IPv4 case, breaks one flag of kube-scheduler's rendered pod on the
// node's disk, and expects the boot to fail with kube-scheduler's own log, read through the CRI.
func TestUpstreamE2EBrokenFlag(t *testing.T) {
	preconditions(t)
	cli := renderStaticCLI(t)
	bins := binaries(t)
	c := upstreamCases[0]
	c.worker = ""
	spec := prepareUpstreamCase(t, cli, bins, c)
	spec.Phase = "broken"
	breakContainerArg(t, spec.Root, "kube-scheduler=--no-such-flag=1")
	var out strings.Builder
	err := runNode(t, spec, 10*time.Minute, func(f string, a ...any) { fmt.Fprintf(&out, f+"\n", a...) })
	if err == nil {
		t.Fatalf("the boot with a broken kube-scheduler flag passed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "kube-scheduler") || !strings.Contains(out.String(), "unknown flag: --no-such-flag") {
		t.Fatalf("the failure does not carry kube-scheduler's log:\n%s", out.String())
	}
	t.Logf("failed as expected with kube-scheduler's log (%v)", err)
}

// unitCommand reads a rendered unit's ExecStart and Environment (systemd quoting). It returns nil when the unit
// does not exist.
func unitCommand(t *testing.T, unitPath string) (argv, env []string) {
	f, err := os.Open(unitPath)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			env = append(env, systemdWords(v)...)
		}
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok && argv == nil {
			argv = systemdWords(strings.TrimLeft(v, "-@+!:"))
		}
	}
	if argv == nil {
		t.Fatalf("%s has no ExecStart", unitPath)
	}
	return argv, env
}
