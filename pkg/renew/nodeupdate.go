package renew

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/openshift/library-go/pkg/operator/certrotation"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/node"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/state"
)

// UpdateDir is the update for the running node inside a render's output directory; UpdatesDir keeps the earlier
// ones (by their ID) when a later renew makes a new one.
const (
	UpdateDir  = "update"
	UpdatesDir = "updates"
)

// Kinds of an update's entries (files.tsv, update.json), in the order aio-update applies them.
const (
	KindRevision = "revision" // a file of a new revision directory (<ResourceDir>/<pod>-<N+1>/...), never overwriting
	KindCerts    = "certs"    // a file of a component's cert directory (<ResourceDir>/<pod>-certs/...), replaced
	KindFile     = "file"     // another node file (CA bundles the kubelet reads), replaced
	KindPod      = "pod"      // a static pod manifest (/etc/kubernetes/manifests/...), replaced after all the above
	KindObject   = "object"   // an API object, applied with the client once the pods are ready
	KindStatus   = "status"   // the status of an API object that has one, patched after the object
)

// Renewal is one certificate renew reissued, however many objects hold it (a secret and the copies resource sync
// keeps of it in other namespaces are one certificate).
type Renewal struct {
	// Name is the new certificate as `render-static certs` names it ("secret <namespace>/<name>", "file <path>
	// (user <name> client)", ...), SHA256 its fingerprint there.
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	// Kind is "leaf" or "signer".
	Kind        string    `json:"kind"`
	Reason      string    `json:"reason"`
	OldNotAfter time.Time `json:"oldNotAfter"`
	NewNotAfter time.Time `json:"newNotAfter"`
	// Objects are the API objects whose certificate renew reissued to this one ("secret <namespace>/<name>",
	// "certificatesigningrequest <name>"), sorted.
	Objects []string `json:"objects"`
}

// Component is one static pod's revisions: From is what the node runs, To what the update installs (equal: no new
// revision).
type Component struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// MirrorPod is the kubelet's mirror pod of the static pod (<pod name>-<node name>).
	MirrorPod string `json:"mirrorPod"`
	// Manifest is the static pod manifest's file name in /etc/kubernetes/manifests.
	Manifest string `json:"manifest"`
	From     int    `json:"from"`
	To       int    `json:"to"`
}

// File is one entry of an update: Source is its path inside the update directory, Path its place on the node
// (empty for objects and statuses, which go to the API).
type File struct {
	Kind   string `json:"kind"`
	Source string `json:"source"`
	Path   string `json:"path,omitempty"`
	Mode   string `json:"mode"`
	SHA256 string `json:"sha256"`
	// Object is "<kind> <namespace>/<name>" for objects and statuses.
	Object string `json:"object,omitempty"`

	contents []byte
}

// Update is DIR/update/update.json: what the update for the running node does.
type Update struct {
	ID       string    `json:"id"`
	Created  time.Time `json:"created"`
	NodeName string    `json:"nodeName"`
	// Previous is the update this one follows (its ID), when DIR held one: apply them in order.
	Previous   string      `json:"previous,omitempty"`
	Components []Component `json:"components"`
	Renewed    []Renewal   `json:"renewed"`
	// Bundles are the CA bundles (configmaps) that changed, e.g. a renewed signer added to its bundle.
	Bundles []string `json:"bundles,omitempty"`
	Files   []File   `json:"files"`
	// NotCarried are node files of the render that changed but that the running node no longer has (first-boot
	// inputs aiokube removes) or that the update never removes.
	NotCarried            []string  `json:"notCarried,omitempty"`
	EarliestExpiry        time.Time `json:"earliestExpiry"`
	EarliestExpirySubject string    `json:"earliestExpirySubject"`
}

// Report is what renew prints.
type Report struct {
	Dir        string
	Renewed    []Renewal
	Unconsumed []string // leaves renew marked due but no loop reissued (their marks were taken back)
	Bundles    []string
	Components []Component
	// Update is the new update for the node; nil when nothing changed.
	Update                *Update
	EarliestExpiry        time.Time
	EarliestExpirySubject string
	// AdminKubeconfigExpiry is the admin kubeconfig's (DIR/auth/kubeconfig), which renew never renews; zero when
	// the render has none.
	AdminKubeconfigExpiry time.Time
	Elapsed               time.Duration
	// Workers are the workers' live.ign as the run wrote them (DIR/workers/<name>/live.ign), with their embed sizes.
	Workers []pipeline.WorkerLive
	// Warnings are what the inputs of the worker command's worker have that is accepted but looks like a mistake,
	// "{input}: detail" (installconfig.Ref: a front end names the input its own way).
	Warnings []string
	// ReadAtStart are what the update changes that the running node reads only when a service starts or at boot
	// (pkg/node ReadAtStart, and systemd units), "<path or unit> (<who reads it>)": a re-render with such a change
	// is refused unless the node is installed again (pkg/pipeline, InReinstall).
	ReadAtStart []string
	// command is the run's command (renew, worker): how the report names it; added the worker it added ("": none).
	command, added string
}

// RenewedObjects are the objects whose certificates of a kind were renewed ("secret <namespace>/<name>",
// "certificatesigningrequest <name>"), sorted.
func (r *Report) RenewedObjects(kind string) []string {
	var out []string
	for _, c := range r.Renewed {
		if c.Kind == kind {
			out = append(out, c.Objects...)
		}
	}
	sort.Strings(out)
	return out
}

// Print writes the report.
func (r *Report) Print(w io.Writer) {
	switch {
	case len(r.Renewed) == 0 && r.Update == nil:
		fmt.Fprintf(w, "%s %s: nothing was due; no new revision, no update\n", r.command, r.Dir)
	case len(r.Renewed) == 0 && r.added != "":
		fmt.Fprintf(w, "%s %s: no certificate was due; the update tells the control-plane node of worker %s\n", r.command, r.Dir, r.added)
	case len(r.Renewed) == 0:
		fmt.Fprintf(w, "%s %s: no certificate renewed, but the render changed (see the update)\n", r.command, r.Dir)
	default:
		fmt.Fprintf(w, "%s %s: %d certificates renewed\n", r.command, r.Dir, len(r.Renewed))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range r.Renewed {
		fmt.Fprintf(tw, "  %s\t%s\t%s -> %s\t(%s)\n", c.Kind, c.Name, c.OldNotAfter.UTC().Format(time.RFC3339), c.NewNotAfter.UTC().Format(time.RFC3339), c.Reason)
	}
	_ = tw.Flush()
	for _, n := range r.Unconsumed {
		fmt.Fprintf(w, "  warning: %s was due but no loop reissued it\n", n)
	}
	if len(r.Bundles) > 0 {
		fmt.Fprintf(w, "  CA bundles changed: %s\n", strings.Join(r.Bundles, ", "))
	}
	fmt.Fprintf(w, "  revisions:\n")
	for _, c := range r.Components {
		if c.To != c.From {
			fmt.Fprintf(w, "    %-24s %d -> %d\n", c.Name, c.From, c.To)
		} else {
			fmt.Fprintf(w, "    %-24s %d (unchanged)\n", c.Name, c.From)
		}
	}
	fmt.Fprintf(w, "  earliest expiry:  %s (%s)\n", r.EarliestExpiry.UTC().Format(time.RFC3339), r.EarliestExpirySubject)
	if !r.AdminKubeconfigExpiry.IsZero() {
		fmt.Fprintf(w, "  admin kubeconfig: %s (%s: not renewed, renew cannot renew it; after it, use the node's %s, which renew renews)\n",
			r.AdminKubeconfigExpiry.UTC().Format(time.RFC3339), path.Join(r.Dir, pipeline.AdminKubeconfigFile), node.LocalhostKubeconfig)
	}
	if u := r.Update; u != nil {
		n := map[string]int{}
		for _, f := range u.Files {
			n[f.Kind]++
		}
		fmt.Fprintf(w, "  update for the node: %s/%s (id %s): %d revision files, %d cert files, %d other files, %d pod manifests, %d API objects\n",
			r.Dir, UpdateDir, u.ID, n[KindRevision], n[KindCerts], n[KindFile], n[KindPod], n[KindObject])
		fmt.Fprintf(w, "  on the node: copy %s/%s there (e.g. scp -rp) and run: sudo aio-update apply <that directory>\n", r.Dir, UpdateDir)
	}
	fmt.Fprintf(w, "  elapsed:          %s\n", r.Elapsed.Round(time.Millisecond))
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func modeString(m fs.FileMode) string { return fmt.Sprintf("%04o", m.Perm()) }

// compare builds the report and the update from the state renew started from, the old aio.ign (earlier: its parse,
// started before the settle, readEarlier) and the new render.
func compare(ctx context.Context, o Options, st *state.State, m *marker, eng *pipeline.Settled, out *pipeline.Output, earlier func() (*earlierNode, error)) (*Report, *Update, error) {
	rep := &Report{Dir: o.Dir, EarliestExpiry: out.Summary.EarliestExpiry, EarliestExpirySubject: out.Summary.EarliestExpirySubject,
		AdminKubeconfigExpiry: out.Summary.AdminKubeconfigExpiry}
	for _, l := range m.unconsumed {
		rep.Unconsumed = append(rep.Unconsumed, l.String())
	}
	inv, err := out.Inventory(o.Now)
	if err != nil {
		return nil, nil, err
	}
	renewed, bundles, err := renewals(ctx, o, st, m, eng, inv)
	if err != nil {
		return nil, nil, err
	}
	rep.Renewed, rep.Bundles = renewed, bundles

	old, err := earlier()
	if err != nil {
		return nil, nil, fmt.Errorf("%s/aio.ign: %w", o.Dir, err)
	}
	oldFiles := old.files
	newFiles := map[string]export.File{}
	for _, f := range out.Tree.Files() {
		newFiles[f.Path] = f
	}

	// Components: the revision each had before the converge phase and has now.
	names := map[interface{}]string{}
	for name, oc := range eng.Cluster.OperatorClients() {
		names[oc] = name
	}
	revDirs := map[string]bool{}  // new revision directories
	certDirs := map[string]bool{} // cert directories
	for _, comp := range eng.Components {
		sp := comp.StaticPod()
		c := Component{Name: comp.Name(), Namespace: sp.Namespace, Manifest: sp.PodConfigMap + ".yaml",
			From: m.revisions[names[comp.Operator()]], To: eng.Revisions[comp.Name()]}
		if c.To > 0 {
			podName, ns, err := podOf(newFiles[path.Join(export.PodManifestDir, c.Manifest)].Contents)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %s: %w", comp.Name(), c.Manifest, err)
			}
			c.MirrorPod, c.Namespace = podName+"-"+eng.Inputs.NodeName, ns
		}
		if c.To < c.From {
			return nil, nil, fmt.Errorf("%s: revision went back from %d to %d", c.Name, c.From, c.To)
		}
		if c.To > c.From {
			revDirs[fmt.Sprintf("%s-%d", sp.PodConfigMap, c.To)] = true
		}
		if sp.CertDir != "" {
			certDirs[sp.CertDir] = true
		}
		rep.Components = append(rep.Components, c)
	}

	upd := &Update{ID: o.Now.UTC().Format("20060102T150405Z"), Created: o.Now.UTC(), NodeName: eng.Inputs.NodeName,
		Components: rep.Components, Renewed: renewed, Bundles: bundles,
		EarliestExpiry: rep.EarliestExpiry, EarliestExpirySubject: rep.EarliestExpirySubject}
	bootstrapOnly := node.Options{ManifestsDir: node.ManifestsDir, AdminKubeconfig: node.AdminKubeconfigPath}.BootstrapOnly()
	var pods []File
	paths := make([]string, 0, len(newFiles))
	for p := range newFiles {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	manifestPrefix := node.ManifestsDir + "/"
	for _, p := range paths {
		f := newFiles[p]
		if old, ok := oldFiles[p]; ok && bytes.Equal(old, f.Contents) {
			continue
		}
		if strings.HasPrefix(p, manifestPrefix) {
			continue // objects: below, from the manifests themselves
		}
		if under(p, bootstrapOnly) {
			upd.NotCarried = append(upd.NotCarried, p+" (first boot only; the running node removed it)")
			continue
		}
		if who, ok := readAtStart(p); ok {
			rep.ReadAtStart = append(rep.ReadAtStart, fmt.Sprintf("%s (read by %s)", p, who))
		}
		e := File{Path: p, Mode: modeString(f.Mode), SHA256: sum(f.Contents), Source: "files" + p, contents: f.Contents}
		switch {
		case strings.HasPrefix(p, export.ResourceDir+"/"):
			dir := strings.SplitN(strings.TrimPrefix(p, export.ResourceDir+"/"), "/", 2)[0]
			switch {
			case revDirs[dir]:
				e.Kind = KindRevision
			case certDirs[dir]:
				e.Kind = KindCerts
			default:
				return nil, nil, fmt.Errorf("renew: %s changed, but %s is neither a new revision nor a cert directory: an existing revision is never changed", p, dir)
			}
		case strings.HasPrefix(p, export.PodManifestDir+"/"):
			e.Kind = KindPod
		default:
			e.Kind = KindFile
		}
		if e.Kind == KindPod {
			pods = append(pods, e)
			continue
		}
		upd.Files = append(upd.Files, e)
	}
	for p := range oldFiles {
		if _, ok := newFiles[p]; !ok && !strings.HasPrefix(p, export.ResourceDir+"/") && !strings.HasPrefix(p, manifestPrefix) {
			upd.NotCarried = append(upd.NotCarried, p+" (no longer in the render; left on the node)")
			if who, ok := readAtStart(p); ok && !under(p, bootstrapOnly) {
				rep.ReadAtStart = append(rep.ReadAtStart, fmt.Sprintf("%s (removed; read by %s)", p, who))
			}
		}
	}
	sort.Strings(upd.NotCarried)
	rep.ReadAtStart = append(rep.ReadAtStart, changedUnits(old.cfg.Systemd.Units, out.Tree.Units(), bootstrapOnly)...)
	if changed, err := passwdChanged(old.cfg.Passwd, out.Ignition); err != nil {
		return nil, nil, err
	} else if changed {
		rep.ReadAtStart = append(rep.ReadAtStart, "user core's SSH keys (Ignition sets them at the first boot only)")
	}
	sort.Strings(rep.ReadAtStart)

	// Objects: every exported manifest that is new or changed, with its status patch when it has one.
	statusPatches, err := node.StatusPatches(out.Manifests)
	if err != nil {
		return nil, nil, err
	}
	var objects []File
	for _, man := range out.Manifests {
		if old, ok := oldFiles[manifestPrefix+man.File]; ok && man.HeldBy(old) {
			continue
		}
		name := man.GVK.Kind + " " + man.Name
		if man.Namespace != "" {
			name = man.GVK.Kind + " " + man.Namespace + "/" + man.Name
		}
		objects = append(objects, File{Kind: KindObject, Source: "manifests/" + man.File, Mode: "0600", SHA256: sum(man.YAML), Object: name, contents: man.YAML})
		if patch, ok := statusPatches[man.File]; ok {
			objects = append(objects, File{Kind: KindStatus, Source: "status/" + man.File + ".json", Mode: "0600", SHA256: sum(patch), Object: name, contents: patch})
		}
	}
	// Static pods one component at a time, in the registry's order (etcd first); within a component its other pods
	// (kube-apiserver's startup monitor) before its own, as the installer writes them.
	podKey := func(f File) (int, int) {
		name := path.Base(f.Path)
		for i, c := range rep.Components {
			dir := path.Join(export.ResourceDir, fmt.Sprintf("%s-%d", strings.TrimSuffix(c.Manifest, ".yaml"), c.To))
			if _, ok := newFiles[path.Join(dir, name)]; ok && c.To > c.From {
				if name == c.Manifest {
					return i, 1
				}
				return i, 0
			}
		}
		return len(rep.Components), 0
	}
	sort.SliceStable(pods, func(i, j int) bool {
		ci, mi := podKey(pods[i])
		cj, mj := podKey(pods[j])
		if ci != cj {
			return ci < cj
		}
		return mi < mj
	})
	upd.Files = append(append(upd.Files, pods...), objects...)
	sort.SliceStable(upd.Files, func(i, j int) bool { return kindOrder(upd.Files[i].Kind) < kindOrder(upd.Files[j].Kind) })

	changed := len(renewed) > 0 || len(upd.Files) > 0
	for _, c := range rep.Components {
		changed = changed || c.To != c.From
	}
	if !changed {
		return rep, nil, nil
	}
	if prev, err := readUpdate(o.Dir + "/" + UpdateDir); err == nil { // checkPending read it already
		upd.Previous = prev.ID
		if prev.ID == upd.ID {
			upd.ID += "-2"
		}
	}
	rep.Update = upd
	return rep, upd, nil
}

// readAtStart says whether the node reads p only when a service starts or at boot (pkg/node ReadAtStart), and who.
func readAtStart(p string) (string, bool) {
	for root, who := range node.ReadAtStart() {
		if under(p, []string{root}) {
			return who, true
		}
	}
	return "", false
}

// earlierConfig is what compare reads of the earlier aio.ign (1-2 MB), in one parse: the files it writes, its
// systemd units and its passwd section.
type earlierConfig struct {
	Ignition inventory.IgnitionVersion `json:"ignition"`
	Passwd   json.RawMessage           `json:"passwd"`
	Storage  struct {
		Files []inventory.IgnitionFile `json:"files"`
	} `json:"storage"`
	Systemd struct {
		Units []earlierUnit `json:"units"`
	} `json:"systemd"`
}

// earlierUnit is what changedUnits compares of a unit of the earlier aio.ign.
type earlierUnit struct {
	Name     string  `json:"name"`
	Contents *string `json:"contents"`
	Enabled  *bool   `json:"enabled"`
	Dropins  []struct {
		Name     string  `json:"name"`
		Contents *string `json:"contents"`
	} `json:"dropins"`
}

// earlierNode is the earlier aio.ign as compare reads it: its config and the contents of its files by path.
type earlierNode struct {
	cfg   *earlierConfig
	files map[string][]byte
}

// readEarlier parses the earlier aio.ign and decodes its files on a goroutine of its own, so that the settle and the
// export, which do not need it, run meanwhile (a re-render's loops leave a core free); the function it returns waits
// for the result.
func readEarlier(oldIgn []byte) func() (*earlierNode, error) {
	type result struct {
		node *earlierNode
		err  error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := parseEarlier(oldIgn)
		if err != nil {
			done <- result{err: err}
			return
		}
		files, err := inventory.DecodeFiles(cfg.Storage.Files)
		done <- result{&earlierNode{cfg: cfg, files: files}, err}
	}()
	var once sync.Once
	var r result
	return func() (*earlierNode, error) {
		once.Do(func() { r = <-done })
		return r.node, r.err
	}
}

// parseEarlier parses the earlier aio.ign (an Ignition config has a version: inventory.FromIgnition's check).
func parseEarlier(oldIgn []byte) (*earlierConfig, error) {
	var cfg earlierConfig
	if err := json.Unmarshal(oldIgn, &cfg); err != nil || cfg.Ignition.Version == "" {
		return nil, fmt.Errorf("not an Ignition config (%v)", err)
	}
	return &cfg, nil
}

// changedUnits are the systemd units (with their drop-ins and enablement) of the render that differ from the old
// aio.ign's, or that it no longer has, "unit <name> (...)": Ignition installs units at the first boot, and aio-update
// installs none (the first-boot-only ones, bootstrapOnly, are not the running node's).
func changedUnits(oldUnits []earlierUnit, units []export.Unit, bootstrapOnly []string) []string {
	key := func(contents string, enabled bool, dropins map[string]string) string {
		b, _ := json.Marshal(struct {
			C string
			E bool
			D map[string]string
		}{contents, enabled, dropins})
		return string(b)
	}
	old := map[string]string{}
	for _, u := range oldUnits {
		d := map[string]string{}
		for _, di := range u.Dropins {
			d[di.Name] = deref(di.Contents)
		}
		old[u.Name] = key(deref(u.Contents), u.Enabled != nil && *u.Enabled, d)
	}
	var out []string
	for _, u := range units {
		if under(path.Join("/etc/systemd/system", u.Name), bootstrapOnly) {
			delete(old, u.Name)
			continue
		}
		d := map[string]string{}
		for _, di := range u.Dropins {
			d[di.Name] = di.Contents
		}
		was, ok := old[u.Name]
		delete(old, u.Name)
		switch {
		case !ok:
			out = append(out, "unit "+u.Name+" (new; installed by Ignition at the first boot)")
		case was != key(u.Contents, u.Enabled, d):
			out = append(out, "unit "+u.Name+" (changed; read by systemd at boot)")
		}
	}
	for name := range old {
		if !under(path.Join("/etc/systemd/system", name), bootstrapOnly) {
			out = append(out, "unit "+name+" (no longer in the render)")
		}
	}
	return out
}

// passwdChanged says whether the render's aio.ign (newIgn) sets other users or SSH keys (the install-config's
// sshKey) than the earlier one's passwd section: Ignition applies them at the first boot only, and an update
// carries no user. The sections are compared as written (the same marshalling writes both).
func passwdChanged(oldPasswd json.RawMessage, newIgn []byte) (bool, error) {
	newPasswd, err := topLevelValue(newIgn, "passwd")
	if err != nil {
		return false, err
	}
	return !bytes.Equal(oldPasswd, newPasswd), nil
}

// topLevelValue is the value of key in the JSON object data, as written (nil when the object has no such key). It
// reads no further than that value: aio.ign's passwd comes before its megabytes of storage.
func topLevelValue(data []byte, key string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object (%v)", err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if t == key {
			return v, nil
		}
	}
	return nil, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func kindOrder(k string) int {
	for i, o := range []string{KindRevision, KindCerts, KindFile, KindPod, KindObject, KindStatus} {
		if k == o {
			return i
		}
	}
	return 99
}

// under says whether p is one of roots or lies under one.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// podOf reads a static pod manifest's name and namespace.
func podOf(manifest []byte) (name, namespace string, err error) {
	var pod corev1.Pod
	if len(manifest) == 0 {
		return "", "", fmt.Errorf("not in the render")
	}
	if err := json.Unmarshal(manifest, &pod); err != nil {
		return "", "", err
	}
	if pod.Name == "" || pod.Namespace == "" {
		return "", "", fmt.Errorf("no name or namespace")
	}
	return pod.Name, pod.Namespace, nil
}

func markReason(o Options) string {
	if o.Force {
		return "forced (every leaf due now)"
	}
	return fmt.Sprintf("within %s: expires before %s", o.Within, o.Now.Add(o.Within).UTC().Format(time.RFC3339))
}

// renewals collects the Renewals of certificates, one per new certificate, named as the render's inventory names it.
type renewalSet struct {
	reason string // why a marked leaf was due
	inv    *inventory.Inventory
	byFP   map[string]*Renewal
	list   []*Renewal
	marked map[string]bool // by object key ("namespace/name", "/name" for a CSR)
}

// add records that object (its key, and how it is named: "secret ns/name") holds a certificate whose PEM changed
// from oldPEM to newPEM, for reason unless it was marked (then markReason's). A signer is one by its certificate
// or its label (signer).
func (rs *renewalSet) add(object, key string, oldPEM, newPEM []byte, reason string, signer bool) error {
	nc, err := firstCert(newPEM)
	if err != nil {
		return err
	}
	fp := sum(nc.Raw)
	r := rs.byFP[fp]
	if r == nil {
		r = &Renewal{Name: object, SHA256: fp, Kind: "leaf", NewNotAfter: nc.NotAfter, Reason: reason}
		if c := rs.inv.ByFingerprint(fp); c != nil {
			r.Name = c.Name
		}
		rs.byFP[fp] = r
		rs.list = append(rs.list, r)
	}
	if oc, err := firstCert(oldPEM); err == nil && (r.OldNotAfter.IsZero() || oc.NotAfter.Before(r.OldNotAfter)) {
		r.OldNotAfter = oc.NotAfter
	}
	if rs.marked[key] {
		r.Reason = rs.reason
	}
	if signer || nc.IsCA {
		r.Kind = "signer"
	}
	r.Objects = append(r.Objects, object)
	return nil
}

// renewals compares every secret and CA bundle of the state with the cluster after renew: a secret whose tls.crt
// changed was renewed, a configmap whose ca-bundle.crt changed is a changed bundle. Revision copies (new objects)
// are not renewals. The objects that now hold the same certificate are one renewal, named after inv (the new
// render's certificates, as `render-static certs` lists them).
func renewals(ctx context.Context, o Options, st *state.State, m *marker, eng *pipeline.Settled, inv *inventory.Inventory) ([]Renewal, []string, error) {
	rs := &renewalSet{reason: m.reason, inv: inv, byFP: map[string]*Renewal{}, marked: map[string]bool{}}
	for _, l := range m.marked {
		rs.marked[l.Namespace+"/"+l.Name] = true
	}
	kube := eng.Cluster.Kube
	secrets, err := listed[*corev1.Secret](kube.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}))
	if err != nil {
		return nil, nil, err
	}
	tlsCert := func(s *corev1.Secret) []byte { return s.Data[corev1.TLSCertKey] }
	err = changed(indexed[*corev1.Secret](st.Objects), secrets, tlsCert, func(key string, old, s *corev1.Secret) error {
		signer := s.Labels[certrotation.ManagedCertificateTypeLabelName] == string(certrotation.CertificateTypeSigner)
		if err := rs.add("secret "+key, key, tlsCert(old), tlsCert(s),
			"due by library-go's rule (expired, past 80% of its validity or its refresh time, or its signer left the bundle)", signer); err != nil {
			return fmt.Errorf("secret %s: tls.crt: %w", key, err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	// The node's render-time credentials (pkg/node's emulated CSR approval).
	csrs, err := listed[*certificatesv1.CertificateSigningRequest](kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{}))
	if err != nil {
		return nil, nil, err
	}
	issued := func(csr *certificatesv1.CertificateSigningRequest) []byte { return csr.Status.Certificate }
	err = changed(indexed[*certificatesv1.CertificateSigningRequest](st.Objects), csrs, issued, func(key string, old, csr *certificatesv1.CertificateSigningRequest) error {
		if err := rs.add("certificatesigningrequest "+csr.Name, key, issued(old), issued(csr),
			"signed again by the render's stand-in for CSR approval (expired or its signer changed)", false); err != nil {
			return fmt.Errorf("certificatesigningrequest %s: %w", csr.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	out := make([]Renewal, 0, len(rs.list))
	for _, r := range rs.list {
		sort.Strings(r.Objects)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind > out[j].Kind // signers first
		}
		return out[i].Name < out[j].Name
	})
	cms, err := listed[*corev1.ConfigMap](kube.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}))
	if err != nil {
		return nil, nil, err
	}
	var bundles []string // in key order
	caBundle := func(cm *corev1.ConfigMap) string { return cm.Data["ca-bundle.crt"] }
	err = changed(indexed[*corev1.ConfigMap](st.Objects), cms, caBundle, func(key string, _, _ *corev1.ConfigMap) error {
		bundles = append(bundles, "configmap "+key)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, bundles, nil
}

// indexed are the objects of type T among objs by their key, "namespace/name" ("/name" for a cluster-scoped
// object: how marks name a CSR).
func indexed[T metav1.Object](objs []runtime.Object) map[string]T {
	out := map[string]T{}
	for _, obj := range objs {
		if v, ok := obj.(T); ok {
			out[v.GetNamespace()+"/"+v.GetName()] = v
		}
	}
	return out
}

// listed indexes the items of a list the cluster returned (with its error) like indexed.
func listed[T metav1.Object](list runtime.Object, err error) (map[string]T, error) {
	if err != nil {
		return nil, err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	return indexed[T](objs), nil
}

// changed calls fn, in key order, for every object of now whose namespace/name is in old with other data (what
// data returns; an object now without data is not a change).
func changed[T any, D string | []byte](old, now map[string]T, data func(T) D, fn func(key string, old, now T) error) error {
	for _, key := range slices.Sorted(maps.Keys(now)) {
		prev, ok := old[key]
		if d := data(now[key]); !ok || len(d) == 0 || string(d) == string(data(prev)) {
			continue
		}
		if err := fn(key, prev, now[key]); err != nil {
			return err
		}
	}
	return nil
}

// InputWarnings are the run's warnings about its inputs (Warnings).
func (r *Report) InputWarnings() []string { return r.Warnings }
