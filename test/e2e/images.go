package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// ImageFiles are the files of an image: binary name in BinDir → path in the image. The first is the entrypoint.
type ImageFiles []struct{ Binary, Path string }

// imageContent says what an image built here holds: the pause image the sandbox process; etcd's image etcd and
// etcdctl (as registry.k8s.io/etcd does); any other the binary its component names, in /usr/local/bin (where
// the upstream images keep it; the rendered pods call it by name).
func imageContent(image, pauseImage string, have func(string) bool) (ImageFiles, error) {
	if image == pauseImage {
		return ImageFiles{{"pause", "/pause"}}, nil
	}
	comp := ImageComponent(image)
	if comp == "etcd" {
		return ImageFiles{{"etcd", "/usr/local/bin/etcd"}, {"etcdctl", "/usr/local/bin/etcdctl"}}, nil
	}
	if !have(comp) {
		return nil, fmt.Errorf("image %s: no local binary %q to build it from (the e2e node runs only images built here)", image, comp)
	}
	return ImageFiles{{comp, "/usr/local/bin/" + comp}}, nil
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

// BuildImages writes (or finds cached next to the binaries) the archive of every image the root's static pods
// and its CRI-O drop-in name.
func BuildImages(ctx context.Context, root, binDir string, logf func(string, ...any)) (string, error) {
	pause, err := crioPauseImage(root)
	if err != nil {
		return "", err
	}
	pods, err := StaticPods(root)
	if err != nil {
		return "", err
	}
	names := map[string]bool{pause: true}
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
			fs = append(fs, filepath.Join(binDir, f.Binary)+":"+f.Path)
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
