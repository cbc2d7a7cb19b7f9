package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// The fleet's Indexed Job (issue 13) on the e2e node: examples/fleet/job.yaml, changed only where a one-node lab
// without a registry or a volume provisioner needs it (FleetJobOverrides; its pods run on the built-in pod network), renders a small site
// list with the render-static the test built, run from an image built here like the control plane's.

// FleetImage is the name the node's containerd knows the render-static image by (nothing can be pulled).
const FleetImage = "localhost/render-static:e2e"

// FleetJobOverrides are the changes FleetJobForNode makes to the example Job, each with its reason; the rest of
// the example (Indexed completion, the shard argument, the environment, security settings) runs as written.
var FleetJobOverrides = []struct{ What, Why string }{
	{"image " + FleetImage + ", imagePullPolicy Never", "nothing can be pulled here: the image is built from the test's render-static and imported into containerd"},
	{"volumes sites and out: hostPath", "the node has no volume provisioner for the example's PersistentVolumeClaims"},
	{"runAsUser 65532", "the Containerfile's USER; the image built here has no user, and runAsNonRoot needs one"},
	{"requests cpu 100m, memory 256Mi", "the example asks 2 CPUs per pod for a hub's nodes; this 2-core node runs the control plane too"},
}

// FleetJobForNode decodes the example Job strictly and applies FleetJobOverrides, with sitesDir and outDir as the
// node's paths of the sites and out volumes.
func FleetJobForNode(example []byte, sitesDir, outDir string) (*batchv1.Job, error) {
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(example, &job); err != nil {
		return nil, fmt.Errorf("the example Job: %w", err)
	}
	spec := &job.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		return nil, fmt.Errorf("the example Job has %d containers, want 1", len(spec.Containers))
	}
	c := &spec.Containers[0]
	c.Image, c.ImagePullPolicy = FleetImage, corev1.PullNever
	c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	uid := int64(65532)
	spec.SecurityContext.RunAsUser = &uid
	hostPaths := map[string]string{"sites": sitesDir, "out": outDir}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if p, ok := hostPaths[v.Name]; ok {
			v.VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: ptr(corev1.HostPathDirectory)}}
			delete(hostPaths, v.Name)
		}
	}
	if len(hostPaths) > 0 {
		return nil, fmt.Errorf("the example Job has no volume %v", hostPaths)
	}
	return &job, nil
}

// FleetShards is the number of shards the example Job renders: its completions, which its --shard argument must
// name as n.
func FleetShards(job *batchv1.Job) (int, error) {
	if job.Spec.Completions == nil || job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		return 0, fmt.Errorf("the example Job is not an Indexed Job with completions")
	}
	n := int(*job.Spec.Completions)
	want := fmt.Sprintf("--shard=$(JOB_COMPLETION_INDEX)/%d", n)
	for _, a := range job.Spec.Template.Spec.Containers[0].Args {
		if a == want {
			return n, nil
		}
	}
	return 0, fmt.Errorf("the example Job's args %v do not hold %s", job.Spec.Template.Spec.Containers[0].Args, want)
}

// ptr is a pointer to a copy of v (API fields that are optional pointers).
func ptr[T any](v T) *T { return &v }

// FleetSites writes n site folders into dir, each the install-config of examples/fleet/sites/edge-1 under its own
// cluster name with a site.yaml of its own node IP, and returns their names.
func FleetSites(repoRoot, dir string, n int) ([]string, error) {
	ic, err := os.ReadFile(filepath.Join(repoRoot, "examples", "fleet", "sites", "edge-1", "install-config.yaml"))
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(ic, []byte("\n  name: edge-1\n")) {
		return nil, fmt.Errorf("examples/fleet/sites/edge-1/install-config.yaml no longer names its cluster edge-1")
	}
	var names []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("lab-%d", i)
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(d, "install-config.yaml"), bytes.Replace(ic, []byte("\n  name: edge-1\n"), []byte("\n  name: "+name+"\n"), 1), 0o644); err != nil {
			return nil, err
		}
		site := fmt.Sprintf("nodeName: %s-0\nnodeIP: 192.168.126.%d\n", name, 20+i)
		if err := os.WriteFile(filepath.Join(d, "site.yaml"), []byte(site), 0o644); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// BuildFleetImage writes an image archive holding render-static (cli) and the shared libraries it links (ldd:
// the binary is built with cgo, as a plain go build makes it here), under FleetImage.
func BuildFleetImage(ctx context.Context, cli, binDir, archive string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ldd", cli).CombinedOutput()
	files := []string{cli + ":/usr/local/bin/render-static"}
	if err == nil {
		libs, lerr := lddLibraries(string(out))
		if lerr != nil {
			return lerr
		}
		for _, l := range libs {
			files = append(files, l+":"+l)
		}
	} else if !strings.Contains(string(out), "not a dynamic executable") {
		return fmt.Errorf("ldd %s: %w\n%s", cli, err, out)
	}
	if b, err := exec.CommandContext(ctx, filepath.Join(binDir, "oci-image"), "-o", archive, "-i", FleetImage+"="+strings.Join(files, ",")).CombinedOutput(); err != nil {
		return fmt.Errorf("oci-image: %w\n%s", err, b)
	}
	return nil
}

// lddLibraries are the absolute paths ldd's output names: "libc.so.6 => /lib/.../libc.so.6 (0x...)" and the
// loader "/lib64/ld-linux-x86-64.so.2 (0x...)"; the kernel's vDSO has no file.
func lddLibraries(out string) ([]string, error) {
	var libs []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			libs = append(libs, f[0])
		case len(f) >= 1 && strings.HasPrefix(f[0], "linux-vdso"):
		default:
			return nil, fmt.Errorf("ldd: a line not understood: %q", l)
		}
	}
	return libs, nil
}

// fleetJobSpec is what the inner first boot needs to run the fleet Job: Dir holds job.json (the adapted Job),
// images.tar (FleetImage), sites/ (Sites) and out/ (world-writable, for the pods' user).
type fleetJobSpec struct {
	Dir    string
	Sites  []string
	Shards int
}

// PrepareFleetJob builds everything the fleet Job check needs into dir: the image, the sites, the out directory
// and the adapted Job, whose volumes name dir's own paths (the node's mount namespace sees the host's /tmp).
func PrepareFleetJob(ctx context.Context, repoRoot, cli, binDir, dir string, sites int) (*fleetJobSpec, error) {
	sitesDir, outDir := filepath.Join(dir, "sites"), filepath.Join(dir, "out")
	names, err := FleetSites(repoRoot, sitesDir, sites)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(outDir, 0o777); err != nil { // the pods run as 65532
		return nil, err
	}
	example, err := os.ReadFile(filepath.Join(repoRoot, "examples", "fleet", "job.yaml"))
	if err != nil {
		return nil, err
	}
	job, err := FleetJobForNode(example, sitesDir, outDir)
	if err != nil {
		return nil, err
	}
	shards, err := FleetShards(job)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "job.json"), data, 0o644); err != nil {
		return nil, err
	}
	if err := BuildFleetImage(ctx, cli, binDir, filepath.Join(dir, "images.tar")); err != nil {
		return nil, err
	}
	return &fleetJobSpec{Dir: dir, Sites: names, Shards: shards}, nil
}
