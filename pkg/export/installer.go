package export

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/render-static/render-static/pkg/staticpod"
)

// The node paths the static-pod installer writes to.
const (
	ResourceDir    = "/etc/kubernetes/static-pod-resources"
	PodManifestDir = "/etc/kubernetes/manifests"
)

// Install lays out one revision of a static pod exactly as library-go's installer pod does on the node:
//   - revisioned content under <ResourceDir>/<pod>-<N>/{configmaps,secrets}/<name>/<key> (name without -N);
//   - unrevisioned content under <ResourceDir>/<CertDir>/{configmaps,secrets}/<name>/<key>;
//   - files are 0600; scripts (*.sh) are 0755 in configmaps and 0700 in secrets;
//   - in every value, REVISION becomes N, NODE_NAME the node name, and NODE_ENVVAR_NAME the node name with '-'
//     and '.' turned into '_';
//   - the pod configmap's pod.yaml becomes <pod>.yaml, and every other key ending in -pod.yaml keeps its name;
//     each is re-serialised as JSON without a UID (kubelets newer than 1.22) and written both into the revision
//     directory and into PodManifestDir.
//
// revision 0 lays out only the cert directory (a component without its revision yet). A missing required
// resource is an error naming it.
func Install(ctx context.Context, kube kubernetes.Interface, sp staticpod.StaticPod, revision int, nodeName string) (*Tree, error) {
	t := NewTree()
	subst := substituter(revision, nodeName)
	if revision > 0 {
		revDir := path.Join(ResourceDir, fmt.Sprintf("%s-%d", sp.PodConfigMap, revision))
		suffix := "-" + strconv.Itoa(revision)
		if err := copyResources(ctx, kube, t, sp.Namespace, revDir, sp.ConfigMaps, sp.Secrets, suffix, subst); err != nil {
			return nil, err
		}
		podCM, err := kube.CoreV1().ConfigMaps(sp.Namespace).Get(ctx, sp.PodConfigMap+suffix, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("pod configmap %s/%s: %w", sp.Namespace, sp.PodConfigMap+suffix, err)
		}
		if _, ok := podCM.Data["pod.yaml"]; !ok {
			return nil, fmt.Errorf("pod configmap %s/%s has no pod.yaml", sp.Namespace, podCM.Name)
		}
		for _, key := range slices.Sorted(maps.Keys(podCM.Data)) {
			name := key
			if key == "pod.yaml" {
				name = sp.PodConfigMap + ".yaml"
			} else if !strings.HasSuffix(key, "-pod.yaml") {
				continue
			}
			pod, err := resourceread.ReadPodV1([]byte(subst(podCM.Data[key])))
			if err != nil {
				return nil, fmt.Errorf("pod configmap %s/%s key %s: %w", sp.Namespace, podCM.Name, key, err)
			}
			pod.UID = ""
			raw := []byte(resourceread.WritePodV1OrDie(pod))
			for _, p := range []string{path.Join(revDir, name), path.Join(PodManifestDir, name)} {
				if err := t.AddFile(p, 0600, raw); err != nil {
					return nil, err
				}
			}
		}
	}
	if sp.CertDir != "" {
		certDir := path.Join(ResourceDir, sp.CertDir)
		if err := copyResources(ctx, kube, t, sp.Namespace, certDir, sp.CertConfigMaps, sp.CertSecrets, "", subst); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func substituter(revision int, nodeName string) func(string) string {
	envName := strings.NewReplacer("-", "_", ".", "_").Replace(nodeName)
	return func(s string) string {
		// Sequential, like the installer: REVISION first, then NODE_NAME, then NODE_ENVVAR_NAME.
		s = strings.ReplaceAll(s, "REVISION", strconv.Itoa(revision))
		s = strings.ReplaceAll(s, "NODE_NAME", nodeName)
		return strings.ReplaceAll(s, "NODE_ENVVAR_NAME", envName)
	}
}

func copyResources(ctx context.Context, kube kubernetes.Interface, t *Tree, ns, dir string, cms, secrets []staticpod.Resource, suffix string, subst func(string) string) error {
	core := kube.CoreV1()
	err := copyEach(t, "secret", ns, path.Join(dir, "secrets"), secrets, suffix, 0700, subst, func(name string) (map[string][]byte, error) {
		s, err := core.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	})
	if err != nil {
		return err
	}
	return copyEach(t, "configmap", ns, path.Join(dir, "configmaps"), cms, suffix, 0755, subst, func(name string) (map[string]string, error) {
		c, err := core.ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return c.Data, nil
	})
}

// copyEach lays down the data of each resource (a secret or config map of ns, named with suffix, read by get)
// under dir/<name> (name without suffix) with addResourceFiles; a missing optional resource is skipped.
func copyEach[V string | []byte](t *Tree, kind, ns, dir string, rs []staticpod.Resource, suffix string, shMode fs.FileMode, subst func(string) string, get func(name string) (map[string]V, error)) error {
	for _, r := range rs {
		data, err := get(r.Name + suffix)
		if apierrors.IsNotFound(err) && r.Optional {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", kind, ns, r.Name+suffix, err)
		}
		if err := addResourceFiles(t, path.Join(dir, r.Name), data, shMode, subst); err != nil {
			return err
		}
	}
	return nil
}

// addResourceFiles lays down every key of a secret's or config map's data as a file of dir, in key order, its
// contents passed through subst: mode 0600, or shMode for a *.sh key (a script).
func addResourceFiles[V string | []byte](t *Tree, dir string, data map[string]V, shMode fs.FileMode, subst func(string) string) error {
	for _, k := range slices.Sorted(maps.Keys(data)) {
		mode := fs.FileMode(0600)
		if strings.HasSuffix(k, ".sh") {
			mode = shMode
		}
		if err := t.AddFile(path.Join(dir, k), mode, []byte(subst(string(data[k])))); err != nil {
			return err
		}
	}
	return nil
}
