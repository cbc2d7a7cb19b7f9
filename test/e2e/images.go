package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Nothing can be pulled here, so every image the node runs is built locally from the binaries of build.go,
// under the exact name the rendered static pods (and the rendered CRI-O drop-in, for the pause image) use,
// by oci-image (tools/oci: go-containerregistry) into one archive that containerd imports.

// ImageComponent is the component an image runs: its repository's last element without tag, digest or an
// OpenShift prefix (registry.k8s.io/kube-apiserver:v1.34.3 → kube-apiserver).
func ImageComponent(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	base := path.Base(image)
	if i := strings.Index(base, ":"); i >= 0 {
		base = base[:i]
	}
	for _, p := range []string{"origin-", "ose-"} {
		base = strings.TrimPrefix(base, p)
	}
	return base
}

// ImageFiles are the files of an image: binary name in BinDir (or an absolute path on this machine) → path in the
// image. The first is the entrypoint.
type ImageFiles []struct{ Binary, Path string }

// AgnhostImage is the test workload's image (issue 37): agnhost netexec as the server, and the client, of the
// network checks, under the name Kubernetes v1.34.3's conformance suite gives it (test/utils/image/manifest.go).
const AgnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.56"

// imageContent says what an image built here holds: the pause image the sandbox process; etcd's image etcd and
// etcdctl (as registry.k8s.io/etcd does); kube-proxy's its binary and the iptables-nft userspace it runs (as
// registry.k8s.io/kube-proxy's distroless-iptables base does: iptablesFiles); CoreDNS's /coredns and agnhost's
// /agnhost (their upstream images' entrypoints; the rendered Deployment and the test's pods pass only args); any
// other the binary its component names, in /usr/local/bin (where the upstream images keep it; the rendered pods
// call it by name).
func imageContent(image, pauseImage string, have func(string) bool) (ImageFiles, error) {
	if image == pauseImage {
		return componentContent(image, "pause", have)
	}
	return componentContent(image, ImageComponent(image), have)
}

// componentContent is the content of the image (named image, for errors) of a component: "pause" the sandbox
// process, "etcd" etcd and etcdctl, the others as imageContent says. The mirror case (mirror.go) names its images
// by the render's --images keys, not by their names (all are in one release repository, by digest).
func componentContent(image, comp string, have func(string) bool) (ImageFiles, error) {
	if comp == "pause" {
		return ImageFiles{{"pause", "/pause"}}, nil
	}
	if comp == "etcd" {
		return ImageFiles{{"etcd", "/usr/local/bin/etcd"}, {"etcdctl", "/usr/local/bin/etcdctl"}}, nil
	}
	if !have(comp) {
		return nil, fmt.Errorf("image %s: no local binary %q to build it from (the e2e node runs only images built here)", image, comp)
	}
	switch comp {
	case "coredns", "agnhost":
		return ImageFiles{{comp, "/" + comp}}, nil
	case "kube-proxy":
		ipt, err := iptablesFiles()
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", image, err)
		}
		return append(ImageFiles{{comp, "/usr/local/bin/" + comp}}, ipt...), nil
	}
	return ImageFiles{{comp, "/usr/local/bin/" + comp}}, nil
}

// iptablesTools are the commands kube-proxy's iptables mode runs (k8s.io/kubernetes pkg/util/iptables), each a
// name xtables-nft-multi answers to (it dispatches on its argv[0]).
var iptablesTools = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

// iptablesFiles is the iptables-nft userspace of this machine (Debian's iptables package), for kube-proxy's
// image: xtables-nft-multi under each of iptablesTools' names in /usr/sbin (copies: the image writer makes regular
// files only), its match and target extensions (/usr/lib/x86_64-linux-gnu/xtables, which libxtables loads by
// path, so ldd cannot name them), and the shared libraries ldd names for all of them, at the paths ldd gives.
// The nft backend, not the legacy one: RHCOS's and the upstream image's default, and the kernel's nf_tables
// tables are per network namespace like the legacy ones.
func iptablesFiles() (ImageFiles, error) {
	const multi = "/usr/sbin/xtables-nft-multi"
	if _, err := os.Stat(multi); err != nil {
		return nil, fmt.Errorf("%s: %w (Debian's iptables package: run hack/install-test-deps.sh)", multi, err)
	}
	var files ImageFiles
	for _, n := range iptablesTools {
		files = append(files, struct{ Binary, Path string }{multi, "/usr/sbin/" + n})
	}
	exts, _ := filepath.Glob("/usr/lib/x86_64-linux-gnu/xtables/*.so")
	if len(exts) == 0 {
		return nil, fmt.Errorf("no iptables extensions in /usr/lib/x86_64-linux-gnu/xtables (Debian's libxtables12)")
	}
	libs := map[string]bool{}
	for _, f := range append([]string{multi}, exts...) {
		if f != multi {
			files = append(files, struct{ Binary, Path string }{f, f})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, "ldd", f).CombinedOutput()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %w\n%s", f, err, out)
		}
		l, err := lddLibraries(string(out))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, lib := range l {
			libs[lib] = true
		}
	}
	sorted := make([]string, 0, len(libs))
	for lib := range libs {
		sorted = append(sorted, lib)
	}
	sort.Strings(sorted)
	for _, lib := range sorted {
		files = append(files, struct{ Binary, Path string }{lib, lib})
	}
	return files, nil
}

// WorkloadImages are the container images of the workloads (Deployments, DaemonSets, StatefulSets, Jobs, Pods) in
// the first-boot apply's manifests on the root (opt/openshift/manifests): CoreDNS's Deployment.
func WorkloadImages(root string) ([]string, error) {
	objs, err := manifestObjects(filepath.Join(root, "opt", "openshift", "manifests"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objs {
		var specPath []string
		switch o.GetKind() {
		case "Pod":
			specPath = []string{"spec"}
		case "Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet":
			specPath = []string{"spec", "template", "spec"}
		default:
			continue
		}
		for _, field := range []string{"initContainers", "containers"} {
			cs, _, _ := unstructured.NestedSlice(o.Object, append(append([]string{}, specPath...), field)...)
			for _, c := range cs {
				if m, ok := c.(map[string]any); ok {
					if img, ok := m["image"].(string); ok && img != "" {
						out = append(out, img)
					}
				}
			}
		}
	}
	return out, nil
}

// StaticPods reads the static pod manifests of a root (etc/kubernetes/manifests).
func StaticPods(root string) (map[string]*corev1.Pod, error) {
	files, err := filepath.Glob(filepath.Join(root, "etc", "kubernetes", "manifests", "*"))
	if err != nil {
		return nil, err
	}
	out := map[string]*corev1.Pod{}
	for _, f := range files {
		if !strings.HasSuffix(f, ".yaml") && !strings.HasSuffix(f, ".json") {
			continue
		}
		var p corev1.Pod
		if err := readYAML(f, &p); err != nil {
			return nil, err
		}
		out[filepath.Base(f)] = &p
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no static pods in %s/etc/kubernetes/manifests", root)
	}
	return out, nil
}

// BuildImages writes (or finds cached next to the binaries) the archive of every image the root's static pods,
// its CRI-O drop-in and its first-boot manifests' workloads name, and the test workload's (AgnhostImage).
func BuildImages(ctx context.Context, root, binDir string, logf func(string, ...any)) (string, error) {
	pause, err := crioPauseImage(root)
	if err != nil {
		return "", err
	}
	pods, err := StaticPods(root)
	if err != nil {
		return "", err
	}
	names := map[string]bool{pause: true, AgnhostImage: true}
	workloads, err := WorkloadImages(root)
	if err != nil {
		return "", err
	}
	for _, img := range workloads {
		names[img] = true
	}
	for _, p := range pods {
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			names[c.Image] = true
		}
	}
	have := func(b string) bool {
		st, err := os.Stat(filepath.Join(binDir, b))
		return err == nil && st.Mode().IsRegular()
	}
	var images []string
	for n := range names {
		images = append(images, n)
	}
	sort.Strings(images)
	args := []string{}
	h := sha256.New()
	for _, img := range images {
		files, err := imageContent(img, pause, have)
		if err != nil {
			return "", err
		}
		var fs []string
		for _, f := range files {
			src := f.Binary
			if !filepath.IsAbs(src) {
				src = filepath.Join(binDir, src)
			}
			fs = append(fs, src+":"+f.Path)
		}
		spec := img + "=" + strings.Join(fs, ",")
		args = append(args, "-i", spec)
		fmt.Fprintln(h, spec)
	}
	archive := filepath.Join(filepath.Dir(binDir), "images-"+hex.EncodeToString(h.Sum(nil))[:16]+".tar")
	if _, err := os.Stat(archive); err == nil {
		logf("images (cached): %s in %s", strings.Join(images, ", "), archive)
		return archive, nil
	}
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "oci-image"), append([]string{"-o", archive}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("oci-image: %w\n%s", err, out)
	}
	logf("images built in %.1fs: %s into %s", time.Since(t0).Seconds(), strings.Join(images, ", "), archive)
	return archive, nil
}

// manifestObjects reads every object in the YAML/JSON files of dir (multi-document files and Lists included).
func manifestObjects(dir string) ([]*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml") || strings.HasSuffix(e.Name(), ".json")) {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var u unstructured.Unstructured
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if u.IsList() {
				l, err := u.ToList()
				if err != nil {
					f.Close()
					return nil, fmt.Errorf("%s: %w", e.Name(), err)
				}
				for i := range l.Items {
					out = append(out, &l.Items[i])
				}
				continue
			}
			out = append(out, &u)
		}
		f.Close()
	}
	return out, nil
}
