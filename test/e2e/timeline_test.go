package e2e

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestTimelineSources: the kubelet log's moments (each once per pod, klog's year-less time completed), a stamped
// unit log (namespaces one by one, the other rounds by their first and last manifest), sorted by time.
func TestTimelineSources(t *testing.T) {
	kubelet := `I1127 08:20:14.835187      32 kubelet_node_status.go:78] "Successfully registered node" node="master-0"
E1127 08:20:14.956050      32 kubelet.go:3222] "Failed creating a mirror pod" err="namespaces \"openshift-etcd\" not found" pod="openshift-etcd/etcd-master-0"
E1127 08:20:15.956050      32 kubelet.go:3222] "Failed creating a mirror pod" err="namespaces \"openshift-etcd\" not found" pod="openshift-etcd/etcd-master-0"
I1127 08:20:18.282826      32 kubelet.go:2515] "SyncLoop ADD" source="api" pods=["openshift-etcd/etcd-master-0"]
I1127 08:20:28.265218      32 kubelet.go:2634] "SyncLoop (probe)" probe="startup" status="started" pod="openshift-etcd/etcd-master-0"
I1127 08:20:28.271407      32 kubelet.go:2634] "SyncLoop (probe)" probe="readiness" status="ready" pod="openshift-etcd/etcd-master-0"
I1127 08:20:29.000000      32 kubelet.go:2515] "SyncLoop ADD" source="api" pods=[]
`
	ev := KubeletLogEvents(strings.NewReader(kubelet), 2025, time.UTC)
	want := []string{"the kubelet registered the node", "the kubelet cannot create mirror pod openshift-etcd/etcd-master-0 yet: no namespace",
		"mirror pod openshift-etcd/etcd-master-0 created (the kubelet sees it in the API)", "openshift-etcd/etcd-master-0 started (startup probe passed)",
		"openshift-etcd/etcd-master-0 ready (readiness probe passed)"}
	if len(ev) != len(want) {
		t.Fatalf("events %v, want %v", ev, want)
	}
	for i, w := range want {
		if ev[i].What != w {
			t.Errorf("event %d: %q, want %q", i, ev[i].What, w)
		}
	}
	if got := ev[0].At; !got.Equal(time.Date(2025, 11, 27, 8, 20, 14, 835187000, time.UTC)) {
		t.Errorf("registered at %s", got)
	}

	var buf bytes.Buffer
	w := &stampWriter{w: &buf}
	for _, l := range []string{"aiokube: the API is ready\n", "aiokube: 00_cluster_namespace_openshift-etcd.yaml: created\naiokube: 02_x_serviceaccount_a.yaml: created\n",
		"aiokube: 02_y_serviceaccount_b.yaml: cre", "ated\naiokube: every manifest is created\n"} {
		w.Write([]byte(l))
	}
	ue := UnitLogEvents(&buf)
	var got []string
	for _, e := range ue {
		got = append(got, e.What)
	}
	wantU := []string{"aiokube: the API is ready", "aiokube: namespace openshift-etcd created", "aiokube: every manifest is created",
		"aiokube: the first 02_* manifest created (a)", "aiokube: the last of 2 02_* manifests created (b)"}
	if strings.Join(got, "|") != strings.Join(wantU, "|") {
		t.Errorf("unit events\n  %q\nwant\n  %q", got, wantU)
	}
	tl := Timeline(ev[0].At, append(ue[:0:0], ev...))
	if !strings.HasPrefix(tl, "\n    +0.00s  the kubelet registered the node") || !strings.Contains(tl, "+13.44s  openshift-etcd/etcd-master-0 ready") {
		t.Errorf("timeline:%s", tl)
	}
}
