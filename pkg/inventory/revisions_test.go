package inventory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/render-static/render-static/pkg/export"
)

// staticPod is a static pod manifest as the installer writes it: JSON, its revision label, the revision directory
// as a hostPath volume (mounted is false for a pod that does not mount it, as the upstream etcd pod).
func staticPod(ns, name, prefix string, rev int, mounted bool) []byte {
	var vols string
	if mounted {
		vols = fmt.Sprintf(`{"name":"resource-dir","hostPath":{"path":"%s/%s-%d"}},`, export.ResourceDir, prefix, rev)
	}
	return []byte(fmt.Sprintf(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":%q,"namespace":%q,"labels":{"app":%q,"revision":"%d"}},`+
		`"spec":{"volumes":[%s{"name":"cert-dir","hostPath":{"path":"%s/%s-certs"}}]}}`, name, ns, name, rev, vols, export.ResourceDir, name))
}

// TestRetiredRevisionCopies: a node whose static pods moved from revision 1 to 2 (renew) still holds revision 1's
// copies: the objects <name>-1 and, on the node, the directory <pod>-1. A certificate found only there belongs to
// no running pod: it is listed apart (Unused) and counts neither for the earliest expiry nor for ExpiringWithin,
// however soon it expires. A certificate of a running revision, or of an object whose name merely ends in a number
// (a node named sno-1), stays in use; a pod that does not mount its revision directory still names its revision.
func TestRetiredRevisionCopies(t *testing.T) {
	signer := newCA(t, "etcd-signer@1", 10*365*24*time.Hour)
	leaf := func(name string, d time.Duration) []byte {
		c, err := signer.MakeServerCertForDuration(sets.New(name), d)
		if err != nil {
			t.Fatal(err)
		}
		crt, _ := pemOf(t, c)
		return crt
	}
	oldPeer, newPeer := leaf("old-peer", time.Hour), leaf("new-peer", 30*24*time.Hour)
	oldClient, newClient := leaf("old-client", 2*time.Hour), leaf("new-client", 30*24*time.Hour)
	nodeOne := leaf("sno-1", 10*24*time.Hour)
	for _, mounted := range []bool{true, false} {
		t.Run(fmt.Sprintf("mounted=%v", mounted), func(t *testing.T) {
			files := map[string][]byte{
				export.PodManifestDir + "/etcd-pod.yaml":                                 staticPod("openshift-etcd", "etcd", "etcd-pod", 2, mounted),
				export.ResourceDir + "/etcd-pod-2/etcd-pod.yaml":                         staticPod("openshift-etcd", "etcd", "etcd-pod", 2, mounted),
				export.ResourceDir + "/etcd-pod-2/secrets/etcd-all-certs/peer.crt":       newPeer,
				export.ResourceDir + "/etcd-pod-1/etcd-pod.yaml":                         staticPod("openshift-etcd", "etcd", "etcd-pod", 1, mounted),
				export.ResourceDir + "/etcd-pod-1/secrets/etcd-all-certs/peer.crt":       oldPeer,
				export.PodManifestDir + "/kube-apiserver-pod.yaml":                       staticPod("openshift-kube-apiserver", "kube-apiserver", "kube-apiserver-pod", 2, true),
				export.ResourceDir + "/kube-apiserver-pod-2/kube-apiserver-pod.yaml":     staticPod("openshift-kube-apiserver", "kube-apiserver", "kube-apiserver-pod", 2, true),
				export.ResourceDir + "/kube-apiserver-pod-2/secrets/etcd-client/tls.crt": newClient,
				ManifestsDir + "/05_openshift-etcd_secret_etcd-all-certs.yaml":           secretYAML("openshift-etcd", "etcd-all-certs", map[string][]byte{"peer.crt": newPeer}),
				ManifestsDir + "/05_openshift-etcd_secret_etcd-all-certs-1.yaml":         secretYAML("openshift-etcd", "etcd-all-certs-1", map[string][]byte{"peer.crt": oldPeer}),
				ManifestsDir + "/05_openshift-etcd_secret_etcd-all-certs-2.yaml":         secretYAML("openshift-etcd", "etcd-all-certs-2", map[string][]byte{"peer.crt": newPeer}),
				ManifestsDir + "/05_openshift-etcd_secret_etcd-peer-sno-1.yaml":          secretYAML("openshift-etcd", "etcd-peer-sno-1", map[string][]byte{"tls.crt": nodeOne}),
				ManifestsDir + "/05_openshift-kube-apiserver_secret_etcd-client.yaml":    secretYAML("openshift-kube-apiserver", "etcd-client", map[string][]byte{"tls.crt": newClient}),
				ManifestsDir + "/05_openshift-kube-apiserver_secret_etcd-client-1.yaml":  secretYAML("openshift-kube-apiserver", "etcd-client-1", map[string][]byte{"tls.crt": oldClient}),
			}
			now := time.Now()
			inv, err := FromFiles(files, now)
			if err != nil {
				t.Fatal(err)
			}
			names := func(cs []*Certificate) []string {
				var out []string
				for _, c := range cs {
					out = append(out, c.Name)
				}
				return out
			}
			wantUnused := []string{"secret openshift-etcd/etcd-all-certs-1[peer.crt]", "secret openshift-kube-apiserver/etcd-client-1"}
			if got := names(inv.Unused); strings.Join(got, "|") != strings.Join(wantUnused, "|") {
				t.Errorf("unused %q, want %q", got, wantUnused)
			}
			wantInUse := []string{"secret openshift-etcd/etcd-peer-sno-1", "secret openshift-etcd/etcd-all-certs[peer.crt]",
				"secret openshift-kube-apiserver/etcd-client", "CA in secret openshift-etcd/etcd-all-certs" /* the chain */}
			if got := names(inv.Certificates); strings.Join(got, "|") != strings.Join(wantInUse, "|") {
				t.Errorf("in use %q, want %q", got, wantInUse)
			}
			if e := inv.Earliest(); e == nil || e.Name != "secret openshift-etcd/etcd-peer-sno-1" {
				t.Errorf("earliest %+v, want the sno-1 peer certificate (the retired copies expire sooner)", e)
			}
			if due := inv.ExpiringWithin(3 * time.Hour); len(due) != 0 {
				t.Errorf("expiring within 3h: %q; only retired copies do", names(due))
			}
			if c, err := EarliestWith(files, nil, now); err != nil || c == nil || c.Name != "secret openshift-etcd/etcd-peer-sno-1" {
				t.Errorf("EarliestWith: %+v, %v", c, err)
			}
			var table bytes.Buffer
			if err := inv.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			head, rest, _ := strings.Cut(table.String(), "\nNOT IN USE")
			if strings.Contains(head, "etcd-all-certs-1") || !strings.Contains(rest, "secret openshift-etcd/etcd-all-certs-1[peer.crt]") {
				t.Errorf("the retired copies are not listed apart:\n%s", table.String())
			}
			var js bytes.Buffer
			if err := inv.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var back Inventory
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || strings.Join(names(back.Unused), "|") != strings.Join(wantUnused, "|") {
				t.Errorf("JSON unused: %q (%v)", names(back.Unused), err)
			}
		})
	}
}

// TestNonRevisionedStaticPod: a static pod of no operator (kube-proxy's, pkg/podnetwork: YAML, no revision label,
// host paths outside the revision directories) beside the revisioned ones changes nothing of what they run.
func TestNonRevisionedStaticPod(t *testing.T) {
	files := map[string][]byte{
		export.PodManifestDir + "/etcd-pod.yaml":         staticPod("openshift-etcd", "etcd", "etcd-pod", 2, true),
		export.ResourceDir + "/etcd-pod-2/etcd-pod.yaml": staticPod("openshift-etcd", "etcd", "etcd-pod", 2, true),
		export.ResourceDir + "/etcd-pod-1/etcd-pod.yaml": staticPod("openshift-etcd", "etcd", "etcd-pod", 1, true),
	}
	without := RunningRevisions(files)
	files[export.PodManifestDir+"/kube-proxy.yaml"] = []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-proxy\n  namespace: kube-system\n" +
		"  labels:\n    k8s-app: kube-proxy\nspec:\n  hostNetwork: true\n  volumes:\n  - name: config\n    hostPath:\n      path: /etc/kubernetes/kube-proxy\n")
	with := RunningRevisions(files)
	if fmt.Sprint(with.Dirs, with.Namespaces) != fmt.Sprint(without.Dirs, without.Namespaces) || with.Current("etcd-pod") != 2 || !with.UnusedDir("etcd-pod-1") {
		t.Errorf("with kube-proxy's pod: %v %v, without: %v %v", with.Dirs, with.Namespaces, without.Dirs, without.Namespaces)
	}
	if _, ok := with.Namespaces["kube-system"]; ok {
		t.Errorf("kube-proxy's pod counted as revisioned: %v", with.Namespaces)
	}
}
