package clusterconfig

import (
	"runtime/debug"
	"strings"
)

// DefaultKubeletVersion is the kubelet version of the render when the build carries no module information: the
// Kubernetes minor the render's client libraries come from.
const DefaultKubeletVersion = "v1.34.0"

// KubeletVersion is the Kubernetes version of the render's k8s.io/api module (v0.X.Y is Kubernetes v1.X.Y), which
// is what the operators' libraries were built against: the version the emulated Node's kubelet reports
// (emulate/kubelet-node-registration) and the one kube-apiserver's runtime-config is observed for.
func KubeletVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "k8s.io/api" && strings.HasPrefix(m.Version, "v0.") {
				return "v1." + strings.TrimPrefix(m.Version, "v0.")
			}
		}
	}
	return DefaultKubeletVersion
}
