// Package rendertest renders an install-config through the whole pipeline (pkg/pipeline: validate, one engine run
// of every registered component to revision 1, export) once per test binary and configuration, for the component
// packages' tests, and reads the result back: the node's files, the static pods, the paths a container sees, the
// kubeconfigs. The output directory (rootfs/, manifests/, aio.ign) is what pkg/conformance compares with the
// operators' reference (CheckConformance). It is for tests only: import it from _test.go files.
package rendertest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/treetest"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/conformance"
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

// Repo is the path of a repository file from a package directory two levels below the repository root.
func Repo(p string) string { return filepath.Join("..", "..", p) }

// ReferenceDir is the conformance reference, part of the repository (testdata/conformance/README.md): the
// install-config the real operators were given and what they produced for it.
const ReferenceDir = "testdata/conformance/sno"

// Reference is the path of a file of the conformance reference (ReferenceDir) from a package directory two levels
// below the repository root: "install-config.yaml", "expected/...".
func Reference(p string) string { return Repo(path.Join(ReferenceDir, p)) }

// ExpectedDir is the operators' reference output.
func ExpectedDir() string { return Reference("expected") }

// InstallConfig is the install-config of the conformance reference.
func InstallConfig() string { return Reference("install-config.yaml") }

// Render is one render's state and output.
type Render struct {
	Inputs    *clusterconfig.Inputs
	Settled   *pipeline.Settled
	Cluster   *loops.Cluster
	Result    *loops.Result
	Revisions map[string]int
	Tree      *export.Tree
	Dir       string // the output directory: aio.ign, rootfs/, manifests/, trace.txt
	Took      time.Duration
	// CPU is the processor time the process spent during the render (user and system, every thread): unlike
	// Took, it does not grow when other processes share the machine.
	CPU   time.Duration
	files Files
}

// Component returns a component of the render by name.
func (r *Render) Component(name string) pipeline.Component { return r.Settled.Component(name) }

// File returns a node file of the render (with or without the leading slash).
func (r *Render) File(p string) (export.File, bool) { return r.files.File(p) }

// Files are the node files of a render by path (with the leading slash).
type Files map[string]export.File

// FilesOf indexes the files of a tree.
func FilesOf(tree *export.Tree) Files {
	fs := Files{}
	for _, f := range tree.Files() {
		fs[f.Path] = f
	}
	return fs
}

// ReadDir reads the regular files below root (a node root: an installer's output, a render's rootfs) as Files:
// by their path below root with the leading slash, with permission bits and contents.
func ReadDir(t testing.TB, root string) Files {
	t.Helper()
	files := Files{}
	for rel, f := range treetest.Read(t, root) {
		if f.Mode.IsRegular() {
			files["/"+rel] = export.File{Path: "/" + rel, Mode: f.Mode.Perm(), Contents: f.Contents}
		}
	}
	return files
}

// File returns a node file (with or without the leading slash).
func (fs Files) File(p string) (export.File, bool) {
	f, ok := fs["/"+strings.TrimPrefix(p, "/")]
	return f, ok
}

// Pod decodes the static pod manifest /etc/kubernetes/manifests/<file>.
func (fs Files) Pod(file string) (*corev1.Pod, error) {
	f, ok := fs.File(path.Join(export.PodManifestDir, file))
	if !ok {
		return nil, fmt.Errorf("the render has no %s/%s", export.PodManifestDir, file)
	}
	return resourceread.ReadPodV1(f.Contents)
}

// Pipeline renders in memory as render-static does: validate the options, run the engine, export.
func Pipeline(o pipeline.Options) (*clusterconfig.Inputs, *pipeline.Settled, *pipeline.Output, error) {
	in, err := pipeline.Validate(o)
	if err != nil {
		return nil, nil, nil, err
	}
	eng, err := pipeline.Settle(context.Background(), in)
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := pipeline.Export(context.Background(), eng)
	if err != nil {
		return nil, nil, nil, err
	}
	return in, eng, out, nil
}

var renders Once[string, *Render]

// Get renders an install-config for node sno-0 with the given node IPs and infrastructure name sno-x7k2p, once
// per process (later calls return the same render, or the same error). Its output directory lives until the
// process ends.
func Get(config, nodeIPs string) (*Render, error) {
	return renders.Get(config+" "+nodeIPs, func() (*Render, error) { return render(config, nodeIPs) })
}

// SNO renders the conformance install-config (node sno-0, 192.168.126.10, infrastructure name sno-x7k2p).
func SNO() (*Render, error) { return Get(InstallConfig(), NodeIP) }

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
	in, eng, o, err := Pipeline(pipeline.Options{InstallConfig: config, NodeIP: nodeIPs, NodeName: NodeName, Dir: out,
		CertValidity: certs.DefaultLeafValidity, InfraID: InfraID})
	if err != nil {
		return nil, err
	}
	if err := o.Write(out); err != nil {
		return nil, err
	}
	r := &Render{Inputs: in, Settled: eng, Cluster: eng.Cluster, Result: eng.Result, Revisions: eng.Revisions,
		Tree: o.Tree, Dir: out, Took: time.Since(start), CPU: cpuTime() - startCPU, files: FilesOf(o.Tree)}
	return r, nil
}

// Pod decodes the static pod manifest /etc/kubernetes/manifests/<file> of the render.
func (r *Render) Pod(file string) (*corev1.Pod, error) { return r.files.Pod(file) }

// PodAndExpected returns the render's static pod /etc/kubernetes/manifests/<file> and decodes the reference's
// pods/<file> (what the operator renders) into want.
func (r *Render) PodAndExpected(t testing.TB, file string, want any) *corev1.Pod {
	t.Helper()
	pod, err := r.Pod(file)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path.Join(ExpectedDir(), "pods", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, want); err != nil {
		t.Fatalf("pods/%s of the reference: %v", file, err)
	}
	return pod
}

// HostPath resolves a path inside a container of pod to the node path the installer wrote it to, through the
// container's volume mounts and the pod's hostPath volumes (MountedPath).
func HostPath(pod *corev1.Pod, container, p string) (string, error) {
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name != container {
			continue
		}
		host, _, err := MountedPath(pod, &c, p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", pod.Name, err)
		}
		return host, nil
	}
	return "", fmt.Errorf("%s has no container %s", pod.Name, container)
}

// Container is the pod's container name (init containers aside), nil if it has none.
func Container(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// Dig is the value at fields of a decoded YAML or JSON object; nil where a field is missing or a value on the way
// is not an object.
func Dig(m map[string]interface{}, fields ...string) interface{} {
	v, _, _ := unstructured.NestedFieldNoCopy(m, fields...)
	return v
}

// MountedPath maps a path inside container c of pod to the node path through the longest volume mount of c that
// contains it and the pod's hostPath volume, and returns it with the volume.
func MountedPath(pod *corev1.Pod, c *corev1.Container, p string) (string, *corev1.Volume, error) {
	var best *corev1.VolumeMount
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		if (p == m.MountPath || strings.HasPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/")) && (best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = m
		}
	}
	if best == nil {
		return "", nil, fmt.Errorf("%s is under no volume mount of container %s", p, c.Name)
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Name != best.Name {
			continue
		}
		if v.HostPath == nil {
			return "", v, fmt.Errorf("%s: volume %s is not a hostPath", p, v.Name)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, strings.TrimSuffix(best.MountPath, "/")), "/")
		return path.Join(v.HostPath.Path, best.SubPath, rel), v, nil
	}
	return "", nil, fmt.Errorf("%s: no volume %s", p, best.Name)
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
	return CheckKubeconfig(func(p string) ([]byte, error) { return r.ContainerFile(pod, k.Container, p) }, r.File, Kubeconfig{
		Path: k.Path, Server: k.Server, User: k.User, ServerName: k.ServerName, ServingCertFile: k.ServingCertFile,
		ClientCAFile: k.ClientCAFile, Groups: k.Groups})
}

// Kubeconfig is what a kubeconfig a container reads must be.
type Kubeconfig struct {
	Path            string // as the container sees it
	Server          string
	User            string   // the client certificate's common name
	ServerName      string   // the name kube-apiserver's serving certificate must verify for
	ServingCertFile string   // node path of that serving certificate
	ClientCAFile    string   // node path of kube-apiserver's client CA bundle
	Groups          []string // the client certificate's organizations, if any
}

// CheckKubeconfig verifies a kubeconfig a container reads (read: a file as the container sees it; file: a node
// file of the render): its server; that its CA (a file the container sees) verifies kube-apiserver's serving
// certificate for the server name; that its client certificate and key (files the container sees) belong
// together, are the user's (and groups', if any) and chain to kube-apiserver's client CA.
func CheckKubeconfig(read func(string) ([]byte, error), file func(string) (export.File, bool), k Kubeconfig) error {
	raw, err := read(k.Path)
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
	caPEM, err := read(cluster.CertificateAuthority)
	if err != nil {
		return fmt.Errorf("%s: certificate-authority: %w", k.Path, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s: certificate-authority %s holds no certificate", k.Path, cluster.CertificateAuthority)
	}
	serving, err := Certificate(file, k.ServingCertFile)
	if err != nil {
		return err
	}
	if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: k.ServerName}); err != nil {
		return fmt.Errorf("%s: its CA does not verify kube-apiserver for %s: %w", k.Path, k.ServerName, err)
	}
	certPEM, err := read(user.ClientCertificate)
	if err != nil {
		return fmt.Errorf("%s: client-certificate: %w", k.Path, err)
	}
	keyPEM, err := read(user.ClientKey)
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
	clientCA, ok := file(k.ClientCAFile)
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

// Certificate parses the first certificate of a node file (file: the render's node files).
func Certificate(file func(string) (export.File, bool), nodePath string) (*x509.Certificate, error) {
	f, ok := file(nodePath)
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

// NodeIPs is the "# node-ip:" comment of an install-config: the node IPs it is rendered with.
func NodeIPs(config string) (string, error) {
	raw, err := os.ReadFile(config)
	if err != nil {
		return "", err
	}
	m := nodeIPComment.FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("%s has no '# node-ip:' comment", config)
	}
	return string(m[1]), nil
}

var nodeIPComment = regexp.MustCompile(`(?m)^# node-ip: (\S+)`)

// SNOFor is SNO for a test: it fails the test if the render fails.
func SNOFor(t testing.TB) *Render {
	t.Helper()
	r, err := SNO()
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

// CheckConformance compares a component's part of the render (pod, config files, file list with paths and
// modes) with the operator's reference output: only the component's documented adaptations
// (manifests/<component>/conformance-adaptations.yaml) may differ, every file of FILES.txt naming the component
// and the pod are compared, and every adaptation must still be needed.
func CheckConformance(t testing.TB, r *Render, component string) {
	t.Helper()
	rep, err := conformance.Compare(conformance.Options{RenderDir: r.Dir, ExpectedDir: ExpectedDir(),
		Components: []string{component}, Images: r.Inputs.Images})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Write(&b)
	if !rep.OK() {
		t.Errorf("%s", b.String())
	} else {
		t.Log(b.String())
	}
	list, err := os.ReadFile(path.Join(ExpectedDir(), "FILES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n := 1 // the pod
	for _, l := range strings.Split(string(list), "\n") {
		if strings.Contains(l, component) {
			n++
		}
	}
	if rep.Compared < n {
		t.Errorf("only %d items compared, want at least %d", rep.Compared, n)
	}
	for _, a := range rep.Unused {
		t.Errorf("adaptation %s explains no difference: it is stale", a)
	}
}

// RevisionStatuses returns the names of the revision-status-N configmaps of a namespace.
func (r *Render) RevisionStatuses(namespace string) ([]string, error) {
	cms, err := r.Cluster.KubeInformers.ConfigMapLister().ConfigMaps(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var statuses []string
	for _, cm := range cms {
		if strings.HasPrefix(cm.Name, "revision-status-") {
			statuses = append(statuses, cm.Name)
		}
	}
	return statuses, nil
}

// LoopOrder returns the names of a component's converge loops in order (each loop closed), the target-config/<what>
// loops as one "target-config" and consecutive repeats as one.
func (r *Render) LoopOrder(component string) []string {
	var got []string
	for _, l := range r.Component(component).Converge() {
		l.Close()
		name := l.Name
		if strings.HasPrefix(name, "target-config/") {
			name = "target-config"
		}
		if len(got) == 0 || got[len(got)-1] != name {
			got = append(got, name)
		}
	}
	return got
}

// FeatureGates are the enabled and disabled gates of the render's featuregates.config.openshift.io/cluster (the
// one object every component takes its gates from), read through the components' accessor, each sorted by name.
func FeatureGates(t testing.TB, r *Render) (enabled, disabled []configv1.FeatureGateName) {
	t.Helper()
	gates, err := clusterconfig.FeatureGates(r.Cluster, r.Inputs).CurrentFeatureGates()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gates.KnownFeatures() {
		if gates.Enabled(g) {
			enabled = append(enabled, g)
		} else {
			disabled = append(disabled, g)
		}
	}
	sort.Slice(enabled, func(i, j int) bool { return enabled[i] < enabled[j] })
	sort.Slice(disabled, func(i, j int) bool { return disabled[i] < disabled[j] })
	if len(enabled) == 0 || len(disabled) == 0 {
		t.Fatalf("the render's FeatureGate has %d enabled and %d disabled gates", len(enabled), len(disabled))
	}
	return enabled, disabled
}
