// Package rendertest renders an install-config through the whole pipeline (pkg/pipeline: validate, one engine run
// of every registered component to revision 1, export) once per test binary and configuration, for the
// kube-controller-manager and kube-scheduler tests, and reads the result back: the node's files, the static pods,
// the kubeconfigs. The output directory (rootfs/, manifests/, aio.ign) is what pkg/conformance compares with the
// operators' reference. It is for tests only.
package rendertest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/pipeline"
)

// The conformance case.
const (
	NodeName = "sno-0"
	NodeIP   = "192.168.126.10"
	InfraID  = "sno-x7k2p"
)

// Shared is the path of ../shared from a package directory two levels below the repository root.
func Shared(p string) string { return filepath.Join("..", "..", "..", "shared", p) }

// ExpectedDir is the operators' reference output.
func ExpectedDir() string { return Shared("conformance/sno/expected") }

// Render is one render's state and output.
type Render struct {
	Inputs    *clusterconfig.Inputs
	Engine    *pipeline.Engine
	Cluster   *loops.Cluster
	Result    *loops.Result
	Revisions map[string]int
	Tree      *export.Tree
	Dir       string // the output directory: aio.ign, rootfs/, manifests/, trace.txt
	Took      time.Duration
	// CPU is the processor time the process spent during the render (user and system, every thread): unlike
	// Took, it does not grow when other processes share the machine.
	CPU   time.Duration
	files map[string]export.File
}

// Component returns a component of the render by name.
func (r *Render) Component(name string) pipeline.Component { return r.Engine.Component(name) }

// File returns a node file of the render (with or without the leading slash).
func (r *Render) File(p string) (export.File, bool) {
	f, ok := r.files["/"+strings.TrimPrefix(p, "/")]
	return f, ok
}

type cached struct {
	once sync.Once
	r    *Render
	err  error
}

var (
	mu      sync.Mutex
	renders = map[string]*cached{}
)

// Get renders an install-config for node sno-0 with the given node IPs and infrastructure name sno-x7k2p, once
// per process (later calls return the same render, or the same error). Its output directory lives until the
// process ends.
func Get(config, nodeIPs string) (*Render, error) {
	mu.Lock()
	c, ok := renders[config+" "+nodeIPs]
	if !ok {
		c = &cached{}
		renders[config+" "+nodeIPs] = c
	}
	mu.Unlock()
	c.once.Do(func() { c.r, c.err = render(config, nodeIPs) })
	return c.r, c.err
}

// SNO renders the conformance install-config (node sno-0, 192.168.126.10, infrastructure name sno-x7k2p).
func SNO() (*Render, error) { return Get(Shared("conformance/sno/install-config.yaml"), NodeIP) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func render(config, nodeIPs string) (*Render, error) {
	start, startCPU := time.Now(), cpuTime()
	dir, err := os.MkdirTemp("", "render-static-rendertest-")
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "out")
	in, err := pipeline.Validate(pipeline.Options{InstallConfig: config, NodeIP: nodeIPs, NodeName: NodeName, Dir: out,
		CertValidity: certs.DefaultLeafValidity, InfraID: InfraID})
	if err != nil {
		return nil, err
	}
	eng, err := pipeline.RunEngine(context.Background(), in)
	if err != nil {
		return nil, err
	}
	o, err := pipeline.Export(context.Background(), eng)
	if err != nil {
		return nil, err
	}
	if err := o.Write(out); err != nil {
		return nil, err
	}
	r := &Render{Inputs: in, Engine: eng, Cluster: eng.Cluster, Result: eng.Result, Revisions: eng.Revisions,
		Tree: o.Tree, Dir: out, Took: time.Since(start), CPU: cpuTime() - startCPU, files: map[string]export.File{}}
	for _, f := range o.Tree.Files() {
		r.files[f.Path] = f
	}
	return r, nil
}

// Pod decodes the static pod manifest /etc/kubernetes/manifests/<file> of the render.
func (r *Render) Pod(file string) (*corev1.Pod, error) {
	f, ok := r.File(path.Join(export.PodManifestDir, file))
	if !ok {
		return nil, fmt.Errorf("the render has no %s/%s", export.PodManifestDir, file)
	}
	return resourceread.ReadPodV1(f.Contents)
}

// HostPath resolves a path inside a container of pod to the node path the installer wrote it to, through the
// container's volume mounts and the pod's hostPath volumes.
func HostPath(pod *corev1.Pod, container, p string) (string, error) {
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name != container {
			continue
		}
		best := ""
		var mount corev1.VolumeMount
		for _, m := range c.VolumeMounts {
			mp := strings.TrimSuffix(m.MountPath, "/")
			if (p == mp || strings.HasPrefix(p, mp+"/")) && len(mp) > len(best) {
				best, mount = mp, m
			}
		}
		if best == "" {
			return "", fmt.Errorf("%s: container %s mounts nothing at %s", pod.Name, container, p)
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name == mount.Name {
				if v.HostPath == nil {
					return "", fmt.Errorf("%s: volume %s is not a host path", pod.Name, v.Name)
				}
				return path.Join(v.HostPath.Path, strings.TrimPrefix(p, best)), nil
			}
		}
		return "", fmt.Errorf("%s: no volume %s", pod.Name, mount.Name)
	}
	return "", fmt.Errorf("%s has no container %s", pod.Name, container)
}

// ContainerFile reads the file a container of pod sees at p.
func (r *Render) ContainerFile(pod *corev1.Pod, container, p string) ([]byte, error) {
	host, err := HostPath(pod, container, p)
	if err != nil {
		return nil, err
	}
	f, ok := r.File(host)
	if !ok {
		return nil, fmt.Errorf("%s (%s in container %s) is not in the render", host, p, container)
	}
	return f.Contents, nil
}

// KubeconfigCheck is what a component's kubeconfig must be.
type KubeconfigCheck struct {
	PodFile, Container, Path string // the kubeconfig as a container of the static pod sees it
	Server                   string
	User                     string   // the client certificate's common name
	ServerName               string   // a name the CA must verify kube-apiserver's serving certificate for
	ServingCertFile          string   // node path of that serving certificate
	ClientCAFile             string   // node path of kube-apiserver's client CA bundle
	Groups                   []string // the client certificate's organizations, if any
}

// CheckKubeconfig verifies a kubeconfig file: its server, that its CA (a file the container sees) verifies
// kube-apiserver's serving certificate for the server name, and that its client certificate (and key, files the
// container sees) is the user's and chains to kube-apiserver's client CA bundle.
func (r *Render) CheckKubeconfig(k KubeconfigCheck) error {
	pod, err := r.Pod(k.PodFile)
	if err != nil {
		return err
	}
	raw, err := r.ContainerFile(pod, k.Container, k.Path)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", k.Path, err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return fmt.Errorf("%s: no current context %q", k.Path, cfg.CurrentContext)
	}
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster == nil || user == nil {
		return fmt.Errorf("%s: context %s names no cluster or user", k.Path, cfg.CurrentContext)
	}
	if cluster.Server != k.Server {
		return fmt.Errorf("%s: server %s, want %s", k.Path, cluster.Server, k.Server)
	}
	caPEM, err := r.ContainerFile(pod, k.Container, cluster.CertificateAuthority)
	if err != nil {
		return fmt.Errorf("%s: certificate-authority: %w", k.Path, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s: certificate-authority %s holds no certificate", k.Path, cluster.CertificateAuthority)
	}
	serving, err := r.certificate(k.ServingCertFile)
	if err != nil {
		return err
	}
	if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: k.ServerName}); err != nil {
		return fmt.Errorf("%s: its CA does not verify kube-apiserver for %s: %w", k.Path, k.ServerName, err)
	}
	certPEM, err := r.ContainerFile(pod, k.Container, user.ClientCertificate)
	if err != nil {
		return fmt.Errorf("%s: client-certificate: %w", k.Path, err)
	}
	keyPEM, err := r.ContainerFile(pod, k.Container, user.ClientKey)
	if err != nil {
		return fmt.Errorf("%s: client-key: %w", k.Path, err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("%s: client certificate and key do not match: %w", k.Path, err)
	}
	client, err := parseFirst(certPEM)
	if err != nil {
		return fmt.Errorf("%s: client-certificate: %w", k.Path, err)
	}
	if client.Subject.CommonName != k.User {
		return fmt.Errorf("%s: client certificate for %q, want %q", k.Path, client.Subject.CommonName, k.User)
	}
	if len(k.Groups) > 0 && strings.Join(client.Subject.Organization, ",") != strings.Join(k.Groups, ",") {
		return fmt.Errorf("%s: client certificate groups %v, want %v", k.Path, client.Subject.Organization, k.Groups)
	}
	clientCA, ok := r.File(k.ClientCAFile)
	if !ok {
		return fmt.Errorf("the render has no %s", k.ClientCAFile)
	}
	clientRoots := x509.NewCertPool()
	if !clientRoots.AppendCertsFromPEM(clientCA.Contents) {
		return fmt.Errorf("%s holds no certificate", k.ClientCAFile)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: clientRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("%s: client certificate does not chain to kube-apiserver's client CA %s: %w", k.Path, k.ClientCAFile, err)
	}
	return nil
}

func (r *Render) certificate(nodePath string) (*x509.Certificate, error) {
	f, ok := r.File(nodePath)
	if !ok {
		return nil, fmt.Errorf("the render has no %s", nodePath)
	}
	c, err := parseFirst(f.Contents)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nodePath, err)
	}
	return c, nil
}

func parseFirst(pemData []byte) (*x509.Certificate, error) {
	cs, err := certs.ParseCertificates(pemData)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("no certificate")
	}
	return cs[0], nil
}
