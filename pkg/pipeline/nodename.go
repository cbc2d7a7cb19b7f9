package pipeline

import (
	"fmt"
	"strings"
)

// MaxFileName is the longest file name (one path component) Linux file systems take, in bytes (NAME_MAX).
const MaxFileName = 255

// nodeFileNames are the file names a node's name goes into (%s), in the render directory, its state, and on the
// nodes: every path component of a render that holds a node's name is one of these (TestNodeNameFileNames). A
// name that is a valid DNS subdomain (253 characters) can still make one of them longer than MaxFileName, and the
// render would then fail at write time: validation bounds the name by them (checkNodeNameFits).
var nodeFileNames = []string{
	// state/objects: the node's first client certificate's CSR (control-plane node and workers), its Node, etcd's
	// certificates for it
	"certificates.k8s.io_certificatesigningrequest_cluster_render-static-node-client-%s.yaml",
	"core_node_cluster_%s.yaml",
	"core_secret_openshift-etcd_etcd-peer-%s.yaml",
	"core_secret_openshift-etcd_etcd-serving-%s.yaml",
	"core_secret_openshift-etcd_etcd-serving-metrics-%s.yaml",
	// manifests/ and rootfs/opt/openshift/manifests: the Node the control plane declares for a worker, etcd's
	// certificates for the control-plane node
	"05_cluster_node_%s.yaml",
	"05_openshift-etcd_secret_etcd-peer-%s.yaml",
	"05_openshift-etcd_secret_etcd-serving-%s.yaml",
	"05_openshift-etcd_secret_etcd-serving-metrics-%s.yaml",
	// /etc/kubernetes/static-pod-resources/etcd-*/secrets/etcd-all-certs: the same, as files
	"etcd-peer-%s.crt", "etcd-peer-%s.key",
	"etcd-serving-%s.crt", "etcd-serving-%s.key",
	"etcd-serving-metrics-%s.crt", "etcd-serving-metrics-%s.key",
	// DIR/workers/<name>
	"%s",
}

// MaxNodeName is the longest node name every file of nodeFileNames takes.
var MaxNodeName = func() int {
	n := MaxFileName
	for _, f := range nodeFileNames {
		n = min(n, MaxFileName-(len(f)-len("%s")))
	}
	return n
}()

// checkNodeNameFits says what is wrong with a node name (a valid DNS subdomain) that is too long for a file that
// takes it ("" when it fits).
func checkNodeNameFits(name string) string {
	if len(name) <= MaxNodeName {
		return ""
	}
	longest := ""
	for _, f := range nodeFileNames {
		if len(f) > len(longest) {
			longest = f
		}
	}
	return fmt.Sprintf("%q is %d characters, but the node's files take its name (the longest: state/objects/%s), and a file name is at most %d bytes: give a name of at most %d characters",
		name, len(name), strings.Replace(longest, "%s", "<name>", 1), MaxFileName, MaxNodeName)
}
