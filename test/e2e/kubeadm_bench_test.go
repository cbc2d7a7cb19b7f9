package e2e

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// BenchmarkKubeadm compares one fresh render of the bundled example (the command RENDER_STATIC_BIN names, as
// `make bench` builds it) with the kubeadm v1.34.3 phases that make a control plane's files: `kubeadm init phase
// certs all`, `kubeconfig all`, `etcd local` and `control-plane all`, run as four commands with --rootfs in a new
// temporary directory (kubeadm chroots there: nothing is written outside it) and a configuration for the same node
// (kubeadmConfig), offline (the version given, no image pulls, no preflight). Each iteration runs both, one after
// the other, the order alternating (interleaved pairs: the machine's speed drifts). ns/op is a pair's wall time.
//
//	render-ms/op, kubeadm-ms/op          wall time of the render, of kubeadm's four phases (process starts included)
//	render-cpu-ms/op, kubeadm-cpu-ms/op  their CPU time (user + system, their child processes included: xz)
//	render/kubeadm                       the ratio of the walls (issue 42: <= 1.3)
//	render-keys, kubeadm-keys            the distinct private keys each writes (countKeys)
//	render-ms/key, kubeadm-ms/key        wall time per key
//
// kubeadm is built on first use (EnsureKubeadm, a few minutes with the e2e's Go build cache warm; cached after).
func BenchmarkKubeadm(b *testing.B) {
	bin := os.Getenv("RENDER_STATIC_BIN")
	if bin == "" {
		b.Skip("RENDER_STATIC_BIN is not set: `make bench` builds the command and sets it")
	}
	if os.Geteuid() != 0 {
		b.Skip("kubeadm's --rootfs chroots: root only")
	}
	ctx := context.Background()
	kubeadm, err := EnsureKubeadm(ctx, BuildOptions{ToolsDir: "tools", Logf: b.Logf})
	if err != nil {
		b.Fatalf("kubeadm: %v", err)
	}
	root := benchRoot(b)
	ic, err := filepath.Abs("../../examples/sno/install-config.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var renderWall, kubeadmWall, renderCPU, kubeadmCPU time.Duration
	renderKeys, kubeadmKeys := 0, 0
	render := func(i int) {
		dir := filepath.Join(root, fmt.Sprintf("render-%03d", i))
		cmd := exec.CommandContext(ctx, bin, "--install-config", ic, "--node-ip", "192.168.126.10", "--node-name", "sno-0",
			"--infra-id", "sno-x7k2p", "--dir", dir)
		w, c := run(b, cmd)
		renderWall += w
		renderCPU += c
		if renderKeys == 0 {
			renderKeys = countKeys(b, dir, "aio.ign", "live.ign")
		}
	}
	phases := func(i int) {
		rootfs := filepath.Join(root, fmt.Sprintf("kubeadm-%03d", i))
		if err := os.MkdirAll(rootfs, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rootfs, "kubeadm.yaml"), []byte(kubeadmConfig), 0o600); err != nil {
			b.Fatal(err)
		}
		for _, phase := range [][]string{{"certs", "all"}, {"kubeconfig", "all"}, {"etcd", "local"}, {"control-plane", "all"}} {
			args := append(append([]string{"init", "phase"}, phase...), "--rootfs", rootfs, "--config", "/kubeadm.yaml")
			w, c := run(b, exec.CommandContext(ctx, kubeadm, args...))
			kubeadmWall += w
			kubeadmCPU += c
		}
		if kubeadmKeys == 0 {
			kubeadmKeys = countKeys(b, filepath.Join(rootfs, "etc/kubernetes"))
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			render(i)
			phases(i)
		} else {
			phases(i)
			render(i)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / n }
	b.ReportMetric(ms(renderWall), "render-ms/op")
	b.ReportMetric(ms(kubeadmWall), "kubeadm-ms/op")
	b.ReportMetric(ms(renderCPU), "render-cpu-ms/op")
	b.ReportMetric(ms(kubeadmCPU), "kubeadm-cpu-ms/op")
	b.ReportMetric(renderWall.Seconds()/kubeadmWall.Seconds(), "render/kubeadm")
	b.ReportMetric(float64(renderKeys), "render-keys")
	b.ReportMetric(float64(kubeadmKeys), "kubeadm-keys")
	b.ReportMetric(ms(renderWall)/float64(renderKeys), "render-ms/key")
	b.ReportMetric(ms(kubeadmWall)/float64(kubeadmKeys), "kubeadm-ms/key")
}

// benchRoot is a new directory for the outputs, removed when the benchmark ends: on a memory file system
// (RENDER_STATIC_BENCH_TMPFS, else /dev/shm, as pkg/pipeline's benchmarks), so that neither side pays the disk's
// file creates, else in TMPDIR.
func benchRoot(b *testing.B) string {
	tmpfs := os.Getenv("RENDER_STATIC_BENCH_TMPFS")
	if tmpfs == "" {
		tmpfs = "/dev/shm"
	}
	d, err := os.MkdirTemp(tmpfs, "render-static-kubeadm-")
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// kubeadmConfig is the bundled example's node for kubeadm (examples/sno/install-config.yaml: cluster sno, base
// domain example.com, the service and cluster networks; the node IP and name `make bench` renders with), v1beta4 as
// kubeadm v1.34 reads it. kubernetesVersion keeps kubeadm offline (without it, it asks dl.k8s.io for the latest).
const kubeadmConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 192.168.126.10
  bindPort: 6443
nodeRegistration:
  name: sno-0
  criSocket: unix:///run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.34.3
clusterName: sno
controlPlaneEndpoint: api.sno.example.com:6443
networking:
  serviceSubnet: 172.30.0.0/16
  podSubnet: 10.128.0.0/14
  dnsDomain: cluster.local
`

// run runs cmd and returns its wall time and CPU time (user + system of the process and the children it waited
// for: wait4's rusage).
func run(b *testing.B, cmd *exec.Cmd) (wall, cpu time.Duration) {
	t := time.Now()
	out, err := cmd.CombinedOutput()
	wall = time.Since(t)
	if err != nil {
		b.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// countKeys counts the distinct private keys (by public key) in the files under dir, but for the names skipped:
// PEM blocks as they are, indented (a YAML block) or JSON-escaped, and in base64 values (a kubeconfig's
// client-key-data, a Secret's data).
func countKeys(b testing.TB, dir string, skip ...string) int {
	seen := map[string]bool{}
	var scan func(data []byte, depth int)
	scan = func(data []byte, depth int) {
		for _, v := range [][]byte{data, indent.ReplaceAll(data, []byte("\n")), bytes.ReplaceAll(data, []byte(`\n`), []byte("\n"))} {
			rest := v
			for {
				i := bytes.Index(rest, []byte("-----BEGIN "))
				if i < 0 {
					break
				}
				blk, after := pem.Decode(rest[i:])
				if blk == nil {
					rest = rest[i+len("-----BEGIN "):]
					continue
				}
				rest = after
				if pub := publicOf(blk); pub != "" {
					seen[pub] = true
				}
			}
		}
		if depth > 0 {
			return
		}
		for _, m := range base64Run.FindAll(data, -1) {
			if d, err := base64.StdEncoding.DecodeString(string(m)); err == nil && bytes.Contains(d, []byte("-----BEGIN ")) {
				scan(d, depth+1)
			}
		}
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		for _, s := range skip {
			if p == filepath.Join(dir, s) {
				return nil
			}
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		scan(data, 0)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return len(seen)
}

var (
	indent    = regexp.MustCompile(`\n[ \t]+`)
	base64Run = regexp.MustCompile(`[A-Za-z0-9+/]{64,}={0,2}`)
)

// publicOf is the DER of a private key block's public key, "" for any other block.
func publicOf(blk *pem.Block) string {
	var key any
	var err error
	switch blk.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(blk.Bytes)
	default:
		return ""
	}
	if err != nil {
		return ""
	}
	pub, err := x509.MarshalPKIXPublicKey(key.(crypto.Signer).Public())
	if err != nil {
		return ""
	}
	return string(pub)
}
