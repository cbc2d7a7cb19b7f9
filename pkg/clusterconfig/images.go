package clusterconfig

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Images maps a component name (as OpenShift's release payload names it) to an image pull spec.
type Images map[string]string

// DefaultImages are used for every component --images does not name. They are OKD's public images; a real
// deployment pins the payload's digests with --images.
var DefaultImages = Images{
	"hyperkube":                       "quay.io/openshift/origin-hyperkube:4.20",
	"etcd":                            "quay.io/openshift/origin-etcd:4.20",
	"cluster-kube-apiserver-operator": "quay.io/openshift/origin-cluster-kube-apiserver-operator:4.20",
	"cluster-etcd-operator":           "quay.io/openshift/origin-cluster-etcd-operator:4.20",
	"cluster-kube-controller-manager-operator": "quay.io/openshift/origin-cluster-kube-controller-manager-operator:4.20",
	"cluster-kube-scheduler-operator":          "quay.io/openshift/origin-cluster-kube-scheduler-operator:4.20",
	"cluster-policy-controller":                "quay.io/openshift/origin-cluster-policy-controller:4.20",
	"tools":                                    "quay.io/openshift/origin-tools:4.20",
	// The pause image CRI-O runs every pod sandbox with (pkg/node's CRI-O drop-in).
	"pod": "quay.io/openshift/origin-pod:4.20",

	// --flavor upstream: the upstream control-plane images its flag-only static pods run (Kubernetes v1.34.3 and
	// etcd 3.6.5, kubeadm 1.34's etcd). The repository's last path element names the binary
	// (registry.k8s.io/kube-apiserver:v1.34.3 runs kube-apiserver), which the e2e harness relies on.
	"kube-apiserver":          "registry.k8s.io/kube-apiserver:v1.34.3",
	"kube-controller-manager": "registry.k8s.io/kube-controller-manager:v1.34.3",
	"kube-scheduler":          "registry.k8s.io/kube-scheduler:v1.34.3",
	// "etcd" is OpenShift's etcd image; this is upstream etcd.
	"etcd-upstream": "registry.k8s.io/etcd:3.6.5-0",
}

// Image returns the pull spec of a component; an unknown component is a programming error.
func (i Images) Image(component string) string {
	if v, ok := i[component]; ok {
		return v
	}
	panic(fmt.Sprintf("no image for component %q", component))
}

// LoadImages reads a YAML map of component to pull spec and fills in the defaults. Unknown components and empty
// or malformed pull specs are errors naming the key.
func LoadImages(path string) (Images, error) {
	out := Images{}
	for k, v := range DefaultImages {
		out[k] = v
	}
	if path == "" {
		return out, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--images: %w", err)
	}
	var m map[string]string
	if err := yaml.UnmarshalStrict(raw, &m); err != nil {
		return nil, fmt.Errorf("--images: %s: not a map of component to pull spec: %v", path, err)
	}
	var errs []string
	for k, v := range m {
		switch {
		case DefaultImages[k] == "":
			errs = append(errs, fmt.Sprintf("images.%s: unknown component (known: %s)", k, strings.Join(knownComponents(), ", ")))
		case v == "" || strings.ContainsAny(v, " \t\n") || !strings.Contains(v, "/"):
			errs = append(errs, fmt.Sprintf("images.%s: %q is not an image pull spec", k, v))
		default:
			out[k] = v
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("--images: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

func knownComponents() []string {
	var out []string
	for k := range DefaultImages {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
