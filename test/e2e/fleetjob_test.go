package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/render-static/render-static/pkg/fleet"
	"github.com/render-static/render-static/pkg/pipeline"
)

// checkFleetJob runs the fleet's Indexed Job (PrepareFleetJob) on the node: its pods, one per shard, render the
// sites with render-static fleet --shard i/n from the image built here; the Job must complete, each site must be
// rendered exactly once, by the pod of its shard (the k-th site by name in shard k mod n), and each site's folder
// must hold an aio.ign that Ignition's own validator accepts.
func checkFleetJob(t *testing.T, cs *kubernetes.Clientset, n *Node, f *fleetJobSpec) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Now()
	if err := n.ImportImages(ctx, filepath.Join(f.Dir, "images.tar")); err != nil {
		t.Errorf("fleet Job: %v", err)
		return
	}
	var job batchv1.Job
	if err := readYAML(filepath.Join(f.Dir, "job.json"), &job); err != nil {
		t.Errorf("fleet Job: %v", err)
		return
	}
	ns := job.Namespace
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Errorf("fleet Job: namespace %s: %v", ns, err)
		return
	}
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, &job, metav1.CreateOptions{}); err != nil {
		t.Errorf("fleet Job: create: %v", err)
		return
	}
	var finished *batchv1.JobCondition
	err := poll(ctx, 8*time.Minute, 2*time.Second, func(ctx context.Context) (bool, error) {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				finished = c.DeepCopy()
				return true, nil
			}
		}
		return false, nil
	})
	logs, podSummary := fleetPodLogs(ctx, cs, ns, job.Name)
	switch {
	case err != nil:
		t.Errorf("fleet Job %s/%s did not finish: %v\npods:\n%s", ns, job.Name, err, podSummary)
		return
	case finished.Type != batchv1.JobComplete:
		t.Errorf("fleet Job %s/%s failed: %s: %s\npods:\n%s", ns, job.Name, finished.Reason, finished.Message, podSummary)
		return
	}
	t.Logf("fleet Job %s/%s complete in %.1fs (image import included): %d pods\n%s", ns, job.Name, time.Since(t0).Seconds(), len(logs), podSummary)

	// Each site once, by its shard's pod, as the pods' summaries report them.
	if err := checkShardedOnce(f.Sites, f.Shards, logs); err != nil {
		t.Errorf("fleet Job: %v", err)
	}
	for _, s := range f.Sites {
		if err := ValidateIgnition(ctx, filepath.Join(f.Dir, "out", s, "aio.ign")); err != nil {
			t.Errorf("fleet Job: site %s: %v", s, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(f.Dir, "out"))
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, f.Sites) {
		t.Errorf("fleet Job: the out volume holds %v, want exactly the sites %v", got, f.Sites)
	}
	// The Job is a record of the check only: its pods go before the reboot.
	if err := cs.BatchV1().Jobs(ns).Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}); err != nil {
		t.Errorf("fleet Job: delete: %v", err)
	}
}

// fleetPodLogs returns the logs of the Job's pods by completion index, and a line per pod (phase, exit code, log)
// for messages.
func fleetPodLogs(ctx context.Context, cs *kubernetes.Clientset, ns, job string) (map[int]string, string) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		return nil, "  listing pods: " + err.Error()
	}
	logs := map[int]string{}
	var b strings.Builder
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	for _, p := range pods.Items {
		idx, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
		if err != nil {
			idx = -1
		}
		var state string
		for _, c := range p.Status.ContainerStatuses {
			switch {
			case c.State.Terminated != nil:
				state = fmt.Sprintf("exit %d %s", c.State.Terminated.ExitCode, c.State.Terminated.Reason)
			case c.State.Waiting != nil:
				state = fmt.Sprintf("waiting %s: %s", c.State.Waiting.Reason, c.State.Waiting.Message)
			}
		}
		raw, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		log := string(raw)
		if err != nil {
			log = "(log: " + err.Error() + ")"
		} else if idx >= 0 {
			logs[idx] += log
		}
		fmt.Fprintf(&b, "  %s index %d %s %s\n    %s\n", p.Name, idx, p.Status.Phase, state, strings.ReplaceAll(strings.TrimSpace(log), "\n", "\n    "))
	}
	return logs, b.String()
}

// tableColumns separates the columns of a row of the fleet's table.
var tableColumns = regexp.MustCompile(`\s{2,}`)

// checkShardedOnce checks the fleet summaries of the shards' logs (a row per site: SITE SECONDS AIO.IGN BYTES
// LIVE.IGN EMBED EARLIEST EXPIRY STATUS): every site is reported ok exactly once, by shard k mod shards for the k-th site by name, and nothing
// else is.
func checkShardedOnce(sites []string, shards int, logs map[int]string) error {
	sorted := append([]string(nil), sites...)
	sort.Strings(sorted)
	want := map[string]int{}
	for k, s := range sorted {
		want[s] = k % shards
	}
	var problems []string
	seen := map[string]int{}
	for shard := 0; shard < shards; shard++ {
		log, ok := logs[shard]
		if !ok {
			problems = append(problems, fmt.Sprintf("no log of shard %d", shard))
			continue
		}
		for _, l := range strings.Split(log, "\n") {
			// The fleet's table (fleet.Report.WriteTable): columns two spaces apart or more, a column's words one.
			f := tableColumns.Split(strings.TrimSpace(l), -1)
			if len(f) != 6 || f[0] == "SITE" {
				continue
			}
			site, status := f[0], f[5]
			w, known := want[site]
			switch {
			case !known:
				problems = append(problems, fmt.Sprintf("shard %d reports a site %q that is not in the list", shard, site))
			case status != "ok":
				problems = append(problems, fmt.Sprintf("shard %d: site %s: %s", shard, site, status))
			case w != shard:
				problems = append(problems, fmt.Sprintf("site %s rendered by shard %d, belongs to shard %d", site, shard, w))
			}
			seen[site]++
		}
	}
	for _, s := range sorted {
		if seen[s] != 1 {
			problems = append(problems, fmt.Sprintf("site %s reported %d times, want once", s, seen[s]))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// TestFleetJobForNode: the example Job decodes strictly and gets exactly the documented overrides; its shard
// count is its completions; the sites are valid inputs of render-static fleet; the shard check fails on a site
// missing, doubled or in the wrong shard; ldd's output reads as its libraries.
func TestFleetJobForNode(t *testing.T) {
	root := moduleRoot(t)
	example, err := os.ReadFile(filepath.Join(root, "examples", "fleet", "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	job, err := FleetJobForNode(example, "/s", "/o")
	if err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if c.Image != FleetImage || c.ImagePullPolicy != corev1.PullNever || job.Spec.Template.Spec.HostNetwork {
		t.Errorf("image %s pull %s hostNetwork %v (the pods run on the pod network)", c.Image, c.ImagePullPolicy, job.Spec.Template.Spec.HostNetwork)
	}
	for _, v := range job.Spec.Template.Spec.Volumes {
		if (v.Name == "sites" || v.Name == "out") && (v.HostPath == nil || v.PersistentVolumeClaim != nil) {
			t.Errorf("volume %s is not a hostPath only: %+v", v.Name, v.VolumeSource)
		}
		if v.Name == "tmp" && v.EmptyDir == nil {
			t.Errorf("volume tmp changed: %+v", v.VolumeSource)
		}
	}
	if sc := job.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("pod security context %+v: want the example's runAsNonRoot with user 65532", sc)
	}
	n, err := FleetShards(job)
	if err != nil || n != 4 {
		t.Errorf("shards = %d, %v; want the example's 4", n, err)
	}
	if len(FleetJobOverrides) != 4 {
		t.Errorf("FleetJobOverrides lists %d changes; FleetJobForNode makes 4: keep the list and the code together", len(FleetJobOverrides))
	}

	dir := t.TempDir()
	names, err := FleetSites(root, dir, fleetJobSites)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != fleetJobSites {
		t.Fatalf("sites %v", names)
	}
	for _, s := range names {
		ic, err := os.ReadFile(filepath.Join(dir, s, "install-config.yaml"))
		if err != nil || !strings.Contains(string(ic), "\n  name: "+s+"\n") {
			t.Errorf("site %s: install-config does not name the cluster %s (%v)", s, s, err)
		}
	}

	// Logs as the shards' pods print them: the fleet's own table.
	table := func(failed bool, sites ...string) string {
		r := &fleet.Report{Jobs: 1}
		for _, site := range sites {
			res := fleet.Result{Site: site, Elapsed: time.Second, Summary: &pipeline.Summary{IgnitionBytes: 10, EarliestExpiry: time.Now(),
				LiveInstall: pipeline.LiveInstall{LiveBytes: 20, LiveEmbed: pipeline.LiveEmbed{Bytes: 1000}}}}
			if failed {
				res = fleet.Result{Site: site, Elapsed: time.Second, Err: fmt.Errorf("broken")}
			}
			r.Results = append(r.Results, res)
		}
		var b strings.Builder
		r.WriteTable(&b)
		return b.String()
	}
	ok := map[int]string{0: table(false, "lab-1", "lab-5"), 1: table(false, "lab-2"), 2: table(false, "lab-3"), 3: table(false, "lab-4")}
	if !strings.Contains(ok[0], "1000 fits") {
		t.Fatalf("the fleet's table no longer looks as this test assumes:\n%s", ok[0])
	}
	for name, logs := range map[string]map[int]string{
		"missing": {0: ok[0], 1: ok[1], 2: ok[2], 3: ""},
		"doubled": {0: ok[0], 1: ok[1] + ok[2], 2: ok[2], 3: ok[3]},
		"failed":  {0: ok[0], 1: ok[1], 2: table(true, "lab-3"), 3: ok[3]},
		"no log":  {0: ok[0], 1: ok[1], 2: ok[2]},
	} {
		if err := checkShardedOnce(names, 4, logs); err == nil {
			t.Errorf("%s: checkShardedOnce passed", name)
		}
	}

	libs, err := lddLibraries("\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n")
	if err != nil || !reflect.DeepEqual(libs, []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}) {
		t.Errorf("lddLibraries = %v, %v", libs, err)
	}
	if _, err := lddLibraries("\tlibfoo.so => not found\n"); err == nil {
		t.Error("lddLibraries accepted a library that was not found")
	}
}
