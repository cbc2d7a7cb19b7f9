package clusterconfig

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/inputfile"
)

// Images maps a component name (as OpenShift's release payload names it) to an image pull spec.
type Images map[string]string

// OKDImage is the default pull spec of an image of OpenShift's release payload: OKD's public image. A real
// deployment pins the payload's digests with --images.
func OKDImage(name string) string { return "quay.io/openshift/origin-" + name + ":4.20" }

// OKDImages are the default pull specs (OKDImage) of payload images.
func OKDImages(names ...string) Images {
	out := Images{}
	for _, n := range names {
		out[n] = OKDImage(n)
	}
	return out
}

// With returns the images with name's pull spec set.
func (i Images) With(name, pullSpec string) Images {
	out := Images{name: pullSpec}
	for k, v := range i {
		out[k] = v
	}
	return out
}

// KubernetesImage is the default pull spec of an upstream control-plane image of --flavor upstream (Kubernetes
// v1.34.3). The repository's last path element names the binary (registry.k8s.io/kube-apiserver:v1.34.3 runs
// kube-apiserver), which the e2e harness relies on.
func KubernetesImage(binary string) string { return "registry.k8s.io/" + binary + ":v1.34.3" }

// Image returns the pull spec of a component; an unknown component is a programming error.
func (i Images) Image(component string) string {
	if v, ok := i[component]; ok {
		return v
	}
	panic(fmt.Sprintf("no image for component %q", component))
}

// LoadImages reads a YAML map of component to pull spec from path (ParseImages); "" means the defaults.
func LoadImages(path string, defaults Images) (Images, error) {
	if path == "" {
		return ParseImages(nil, path, defaults)
	}
	raw, err := inputfile.Read(path)
	if err != nil {
		return nil, err
	}
	return ParseImages(raw, path, defaults)
}

// ParseImages reads a YAML map of component to pull spec (raw, the file name) and fills in the defaults (the
// registry's, components.DefaultImages); nil raw means the defaults. Unknown components and empty or malformed
// pull specs are errors naming the key.
func ParseImages(raw []byte, name string, defaults Images) (Images, error) {
	out := Images{}
	for k, v := range defaults {
		out[k] = v
	}
	if raw == nil {
		return out, nil
	}
	var m map[string]string
	if err := yaml.UnmarshalStrict(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: not a map of component to pull spec: %v", name, err)
	}
	var errs []string
	for k, v := range m {
		switch {
		case defaults[k] == "":
			errs = append(errs, fmt.Sprintf("images.%s: unknown component (known: %s)", k, strings.Join(defaults.Names(), ", ")))
		case v == "" || strings.ContainsAny(v, " \t\n") || !strings.Contains(v, "/"):
			errs = append(errs, fmt.Sprintf("images.%s: %q is not an image pull spec", k, v))
		default:
			out[k] = v
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, errors.New(strings.Join(errs, "; "))
	}
	return out, nil
}

// Names are the image names, sorted.
func (i Images) Names() []string {
	out := make([]string, 0, len(i))
	for k := range i {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The images of the cluster add-ons the render brings with its built-in pod network (pkg/podnetwork): the Service
// proxy and the cluster DNS. Unlike the control plane's, each has one --images key for both flavors, whose default
// follows the flavor (AddOnImages).
const (
	KubeProxyImage = "kube-proxy"
	CoreDNSImage   = "coredns"
)

// CoreDNSUpstreamImage is the upstream flavor's CoreDNS: the version kubeadm v1.34.3 deploys
// (cmd/kubeadm/app/constants/constants.go CoreDNSImageName, CoreDNSVersion).
const CoreDNSUpstreamImage = "registry.k8s.io/coredns/coredns:v1.12.1"

// AddOnImages are the default pull specs of the add-ons' images for a flavor: upstream, Kubernetes v1.34.3's
// kube-proxy and kubeadm's CoreDNS; openshift, the OKD payload's origin-kube-proxy and origin-coredns (the payload
// names them kube-proxy and coredns: the cluster-network-operator's and the DNS operator's images).
func AddOnImages(f Flavor) Images {
	if f == FlavorUpstream {
		return Images{KubeProxyImage: KubernetesImage(KubeProxyImage), CoreDNSImage: CoreDNSUpstreamImage}
	}
	return OKDImages(KubeProxyImage, CoreDNSImage)
}
