package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/fleet"
)

// TestFleetFailingSitesExitOne: sites that cannot render are listed with their problems, the table still ends
// the run, and the exit code is 1.
func TestFleetFailingSitesExitOne(t *testing.T) {
	d := t.TempDir()
	list := filepath.Join(d, "sites.yaml")
	body := "- {name: a, installConfig: missing.yaml, nodeIP: 10.0.0.1}\n- {name: b, installConfig: missing.yaml, nodeIP: nope}\n"
	if err := os.WriteFile(list, []byte(body), 0644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(d, "out")
	code, stdout, stderr := runCLI("fleet", "--sites", list, "--out", out, "--jobs", "2")
	if code != 1 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, want := range []string{"[1/2]", "[2/2]", "b: FAILED", "nodeIP: ", "2 of 2 sites failed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, want := range []string{"SITE", "EARLIEST EXPIRY", "2 sites, 2 failed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	code, _, stderr = runCLI("fleet", "--sites", list, "--out", out, "--shard", "2/2")
	if code != 1 || !strings.Contains(stderr, "--shard: ") {
		t.Errorf("--shard 2/2: exit %d, %s", code, stderr)
	}
}

// TestFleetJobExample decodes examples/fleet/job.yaml strictly into the Kubernetes batch/v1 types and checks it
// the way the API server would where apimachinery has the rule (object meta, names, label values) and, for the
// Job-specific rules it does not carry (they live in k8s.io/kubernetes/pkg/apis/batch/validation, which is not a
// dependency of this module), by the rules an Indexed Job must meet; then it parses every pod's arguments, with
// $(JOB_COMPLETION_INDEX) expanded, through the real fleet command: the n pods render shards 0/n .. n-1/n.
func TestFleetJobExample(t *testing.T) {
	raw, err := os.ReadFile(repo("examples/fleet/job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(raw, &job); err != nil {
		t.Fatalf("not a batch/v1 Job: %v", err)
	}
	var errs field.ErrorList
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("apiVersion/kind %s/%s", job.APIVersion, job.Kind)
	}
	errs = append(errs, apivalidation.ValidateObjectMeta(&job.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	spec, p := job.Spec, field.NewPath("spec")
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		errs = append(errs, field.Invalid(p.Child("completionMode"), spec.CompletionMode, "must be Indexed"))
	}
	if spec.Completions == nil || *spec.Completions < 1 {
		t.Fatalf("spec.completions must be set for an Indexed Job")
	}
	n := int(*spec.Completions)
	if spec.Parallelism != nil && (*spec.Parallelism < 1 || int(*spec.Parallelism) > n) {
		errs = append(errs, field.Invalid(p.Child("parallelism"), *spec.Parallelism, "between 1 and completions"))
	}
	pod, pp := spec.Template.Spec, p.Child("template", "spec")
	if spec.BackoffLimitPerIndex != nil && pod.RestartPolicy != corev1.RestartPolicyNever {
		errs = append(errs, field.Invalid(pp.Child("restartPolicy"), pod.RestartPolicy, "must be Never with backoffLimitPerIndex"))
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever && pod.RestartPolicy != corev1.RestartPolicyOnFailure {
		errs = append(errs, field.NotSupported(pp.Child("restartPolicy"), pod.RestartPolicy, []string{"Never", "OnFailure"}))
	}
	for k, v := range spec.Template.Labels {
		for _, m := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels").Key(k), v, m))
		}
	}
	volumes := map[string]corev1.Volume{}
	for i, v := range pod.Volumes {
		for _, m := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, field.Invalid(pp.Child("volumes").Index(i).Child("name"), v.Name, m))
		}
		volumes[v.Name] = v
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c, cp := pod.Containers[0], pp.Child("containers").Index(0)
	for _, m := range validation.IsDNS1123Label(c.Name) {
		errs = append(errs, field.Invalid(cp.Child("name"), c.Name, m))
	}
	if c.Image == "" {
		errs = append(errs, field.Required(cp.Child("image"), ""))
	}
	mounts := map[string]corev1.VolumeMount{}
	for i, m := range c.VolumeMounts {
		if _, ok := volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(cp.Child("volumeMounts").Index(i).Child("name"), m.Name))
		}
		mounts[m.MountPath] = m
	}
	indexFromAnnotation := false
	for _, e := range c.Env {
		if e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			indexFromAnnotation = true
		}
	}
	if !indexFromAnnotation {
		errs = append(errs, field.Required(cp.Child("env"), "JOB_COMPLETION_INDEX from the job-completion-index annotation"))
	}
	for _, e := range errs {
		t.Error(e)
	}

	// Every pod's arguments through the real fleet command's flags.
	seen := map[fleet.Shard]bool{}
	for i := 0; i < n; i++ {
		var args []string
		for _, a := range c.Args {
			args = append(args, strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", fmt.Sprint(i)))
		}
		if len(args) == 0 || args[0] != "fleet" {
			t.Fatalf("args %v: want the fleet command", c.Args)
		}
		cmd := newFleetCommand(&strings.Builder{})
		if err := cmd.ParseFlags(args[1:]); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		get := func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
		sh, err := fleet.ParseShard(get("shard"))
		if err != nil {
			t.Fatalf("pod %d: --shard: %v", i, err)
		}
		if sh.Index != i || sh.Count != n {
			t.Errorf("pod %d renders shard %s, want %d/%d", i, sh, i, n)
		}
		seen[sh] = true
		if m, ok := mounts[get("sites")]; !ok || !m.ReadOnly {
			t.Errorf("--sites %s is not a read-only volume mount", get("sites"))
		}
		if m, ok := mounts[get("out")]; !ok || m.ReadOnly {
			t.Errorf("--out %s is not a writable volume mount", get("out"))
		}
	}
	if len(seen) != n {
		t.Errorf("%d pods render %d distinct shards", n, len(seen))
	}
}

// TestFleetChecksItsInputsFirst: the flags every site shares are checked once, before any site, all problems at
// once, and nothing is made; site folders reached through a symbolic link are sites, a dangling link is a failed
// site; a site.yaml with an unknown key names the file and the line; each site's warnings are printed; a run in
// which no site rendered leaves no --out behind.
func TestFleetChecksItsInputsFirst(t *testing.T) {
	d := t.TempDir()
	out := filepath.Join(d, "out")
	badImages := filepath.Join(d, "images.yaml")
	if err := os.WriteFile(badImages, []byte("nosuch: quay.io/x/y:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("fleet", "--sites", repo("examples/fleet/sites"), "--out", out, "--jobs", "0", "--cert-validity", "1m", "--images", badImages)
	for _, want := range []string{"invalid input (3 problems)", "--jobs: 0: at least one", "--cert-validity: 1m0s is too short", "--images: images.nosuch: unknown component"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, want 1 saying %q:\n%s", code, want, stderr)
		}
	}
	if code, _, stderr := runCLI("fleet", "--sites", repo("examples/fleet/sites"), "--out", out, "--jobs", "-1"); code != 1 || !strings.Contains(stderr, "--jobs: -1") {
		t.Errorf("--jobs -1: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("refused flags made --out (%v)", err)
	}

	// Sites: one through a symlink, one dangling, one with a misspelt key.
	sites, elsewhere := filepath.Join(d, "sites"), filepath.Join(d, "elsewhere")
	for _, dir := range []string{sites, filepath.Join(sites, "typo"), elsewhere} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(repo("examples/fleet/sites/edge-1/install-config.yaml"), filepath.Join(elsewhere, "install-config.yaml"))
	copyFile(repo("examples/fleet/sites/edge-1/site.yaml"), filepath.Join(elsewhere, "site.yaml"))
	copyFile(repo("examples/fleet/sites/edge-1/install-config.yaml"), filepath.Join(sites, "typo", "install-config.yaml"))
	if err := os.WriteFile(filepath.Join(sites, "typo", "site.yaml"), []byte("nodeName: x\nnodeIp: 192.168.126.11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(sites, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(d, "gone"), filepath.Join(sites, "dangling")); err != nil {
		t.Fatal(err)
	}
	// Only the failing ones first: nothing renders, so no --out stays.
	list := filepath.Join(d, "failing.yaml")
	if err := os.WriteFile(list, []byte("- {name: a, installConfig: missing.yaml, nodeIP: 10.0.0.1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := runCLI("fleet", "--sites", list, "--out", out); code != 1 {
		t.Errorf("a fleet whose only site fails: exit %d", code)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a fleet that rendered nothing left --out (%v)", err)
	}
	testtools.Long(t, "renders a site")
	code, stdout, stderr := runCLI("fleet", "--sites", sites, "--out", out, "--cert-validity", "30m")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (two sites fail)\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		filepath.Join(sites, "typo", "site.yaml") + ": line 2: field nodeIp not found",
		filepath.Join(sites, "dangling") + ": a symbolic link to " + filepath.Join(d, "gone") + ", which cannot be followed",
		"linked: warning: --cert-validity 30m0s",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout, "3 sites, 2 failed") {
		t.Errorf("table:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "linked", "aio.ign")); err != nil {
		t.Errorf("the site behind the symlink was not rendered: %v", err)
	}
}

// TestFleetLiveFitAndJSON renders two sites: the example, and the example with a trust bundle of bigBundle (300) CAs (made
// with crypto/x509, the first expired in 2023) whose live.ign does not fit the live ISO's embed area. The table
// says so in its own column and in the site's status, the earliest expiry is the cluster's (not the expired user
// CA), and the fleet exits with its own code for "rendered but not installable". --output json gives the same
// per site, under the field names docs/fleet.md documents, agreeing with what certs reads from each folder.
func TestFleetLiveFitAndJSON(t *testing.T) {
	testtools.Long(t, "renders two sites twice")
	testtools.Tool(t, "xz")
	work := t.TempDir()
	bundle, subjects := userCAs(t, bigBundle)
	for _, s := range []struct{ name, ic string }{{"fits", repo("examples/sno/install-config.yaml")}, {"big", ""}} {
		d := filepath.Join(work, "sites", s.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if s.ic == "" {
			withTrustBundle(t, d, bundle)
		} else if raw, err := os.ReadFile(s.ic); err != nil || os.WriteFile(filepath.Join(d, "install-config.yaml"), raw, 0o600) != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "site.yaml"), []byte("nodeIP: 192.168.126.10\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(work, "out")
	code, stdout, stderr := runCLI("fleet", "--sites", filepath.Join(work, "sites"), "--out", out, "--jobs", "2")
	if code != exitNotInstallable {
		t.Fatalf("exit %d, want %d (rendered, not installable)\nstdout: %s\nstderr: %s", code, exitNotInstallable, stdout, stderr)
	}
	rows := map[string]string{}
	var header string
	for _, l := range strings.Split(stdout, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "SITE":
			header = l
		case len(f) > 0 && (f[0] == "fits" || f[0] == "big"):
			rows[f[0]] = l
		}
	}
	if !strings.Contains(header, "LIVE.IGN") {
		t.Errorf("the table has no live.ign column:\n%s", stdout)
	}
	if r := rows["big"]; !strings.Contains(r, "DOES NOT FIT") || !strings.Contains(r, "NOT INSTALLABLE") || strings.Contains(r, " ok") || strings.Contains(r, "2023-") {
		t.Errorf("big's row %q: want DOES NOT FIT, NOT INSTALLABLE and the cluster's earliest expiry", r)
	}
	if r := rows["fits"]; !strings.Contains(r, " fits") || !strings.HasSuffix(strings.TrimSpace(r), "ok") {
		t.Errorf("fits's row %q: want fits and ok", r)
	}
	if !strings.Contains(stderr, "] big: rendered in ") || !strings.Contains(stderr, "NOT INSTALLABLE") {
		t.Errorf("the progress line does not say big is not installable:\n%s", stderr)
	}
	if !strings.Contains(stderr, "big: warning: ") || !strings.Contains(stderr, subjects[0]) {
		t.Errorf("stderr lacks big's warning naming the expired CA %s:\n%s", subjects[0], stderr)
	}
	if !strings.Contains(stderr, "error: ") || !strings.Contains(stderr, "big") || !strings.Contains(stderr, "live.ign") {
		t.Errorf("stderr does not end saying which site cannot be installed, and why:\n%s", stderr)
	}

	code, stdout, stderr = runCLI("fleet", "--sites", filepath.Join(work, "sites"), "--out", out, "--jobs", "2", "--output", "json")
	if code != exitNotInstallable {
		t.Fatalf("--output json: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	var top map[string]json.RawMessage
	var report struct {
		Sites []map[string]any `json:"sites"`
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil || json.Unmarshal([]byte(stdout), &top) != nil {
		t.Fatalf("--output json: %v:\n%s", err, stdout)
	}
	var doc struct {
		Sites []fleet.SiteJSON `json:"sites"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.Sites) != 2 {
		t.Fatalf("--output json: %v, %d sites:\n%s", err, len(doc.Sites), stdout)
	}
	guide, err := os.ReadFile(repo("docs/fleet.md"))
	if err != nil {
		t.Fatal(err)
	}
	for k := range top {
		if !strings.Contains(string(guide), "`"+k+"`") {
			t.Errorf("docs/fleet.md does not document the JSON report's %q", k)
		}
	}
	for _, site := range report.Sites {
		for k := range site {
			if !strings.Contains(string(guide), "`"+k+"`") {
				t.Errorf("docs/fleet.md does not document the JSON field %q", k)
			}
		}
	}
	for _, s := range doc.Sites {
		inv := certsJSON(t, "--dir", filepath.Join(out, s.Site))
		if s.EarliestExpiry == nil || !s.EarliestExpiry.Equal(inv.Certificates[0].NotAfter) || s.EarliestExpiryName != inv.Certificates[0].Name {
			t.Errorf("%s: earliest expiry %v %q; certs reads %s %q", s.Site, s.EarliestExpiry, s.EarliestExpiryName, inv.Certificates[0].NotAfter, inv.Certificates[0].Name)
		}
		switch s.Site {
		case "big":
			if s.Status != fleet.StatusNotInstallable || s.LiveFit != fleet.FitDoesNotFit || s.LiveEmbedBytes <= s.LiveEmbedAreaBytes || s.UserCAs != bigBundle || s.UserCAsExpired != 1 {
				t.Errorf("big: %+v", s)
			}
		case "fits":
			if s.Status != fleet.StatusOK || s.LiveFit != fleet.FitFits || s.LiveEmbedBytes == 0 || s.LiveEmbedBytes > s.LiveEmbedAreaBytes || len(s.Errors) != 0 {
				t.Errorf("fits: %+v", s)
			}
		}
	}
}

// bigBundle is how many CAs make the example's live.ign too big for the live ISO's embed area (each adds its RSA
// signature, three times: the node's trust anchor, openshift-config/user-ca-bundle and cluster-config-v1's
// install-config, ~350 bytes once compressed). 200 no longer does since the node's CRDs are JSON (~258 KB,
// TestLiveEmbedTargets), 300 no longer since they are without descriptions (~254 KB); 400 is ~27 KB over.
const bigBundle = 400
