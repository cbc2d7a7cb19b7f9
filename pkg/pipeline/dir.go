package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/outdir"
	"github.com/render-static/render-static/pkg/state"
)

// A render directory is the only copy of its cluster's keys (docs/output.md). A run that writes one holds it from
// before it reads the state until it has replaced it (outdir.LockDir), continues the cluster the state holds
// unless told to start a new one (--fresh), refuses a state that is not whole (state.Load), and refuses inputs of
// another cluster (identity). What a run must keep of the directory it replaces, it carries over (Carried).

// UpdateDir is the update for the running node inside a render directory (pkg/renew writes it); UpdatesDir keeps
// the earlier ones, by their ID.
const (
	UpdateDir  = "update"
	UpdatesDir = "updates"
)

// Carried are the entries of a render directory that every later run on it keeps as they are (a re-render does not
// make them, renew adds to them): the node updates, which the node may not have applied yet.
var Carried = []string{UpdateDir, UpdatesDir}

// Dir is a render directory held for a run: its lock, and the state it holds.
type Dir struct {
	Path  string
	Lock  *outdir.Lock
	State *state.State // nil: a new cluster
	// Problems are what is wrong with the directory as an input (reported with the inputs' problems).
	Problems installconfig.ErrorList
	fresh    bool
	// Held is the cluster a fresh run finds in the directory (nil: none); keep, when set, where Replace keeps
	// the directory it replaces (KeepHeld).
	Held *HeldCluster
	keep string
}

// HeldCluster is what a directory a fresh run would start a new cluster in holds: the old cluster's infra ID (as
// its state says it, "" when it cannot be read), its workers (DIR/workers/<name>) and its node updates (DIR/update's
// id, and the kept ones: DIR/updates/<id>).
type HeldCluster struct {
	InfraID string
	Workers []string
	Updates []string
}

// heldCluster is what path holds of a cluster (nil: nothing, neither a state nor a render's marker).
func heldCluster(path string) *HeldCluster {
	_, errState := os.Lstat(filepath.Join(path, state.Dir))
	_, errMarker := os.Lstat(filepath.Join(path, outdir.MarkerFile))
	if errState != nil && errMarker != nil {
		return nil
	}
	h := &HeldCluster{}
	var head struct {
		InfraID string `json:"infraID"`
	}
	if b, err := os.ReadFile(filepath.Join(path, state.Dir, "render.json")); err == nil && json.Unmarshal(b, &head) == nil {
		h.InfraID = head.InfraID
	}
	if es, err := os.ReadDir(filepath.Join(path, WorkersDir)); err == nil {
		for _, e := range es {
			if e.IsDir() {
				h.Workers = append(h.Workers, e.Name())
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(path, UpdateDir, "update.json")); err == nil {
		if u, err := readUpdateHead(b); err == nil && u.ID != "" {
			h.Updates = append(h.Updates, UpdateDir+"/ (id "+u.ID+")")
		} else {
			h.Updates = append(h.Updates, UpdateDir+"/")
		}
	}
	if es, err := os.ReadDir(filepath.Join(path, UpdatesDir)); err == nil {
		for _, e := range es {
			h.Updates = append(h.Updates, UpdatesDir+"/"+e.Name()+"/")
		}
	}
	return h
}

// keepPath is where a fresh run keeps the directory path holding the cluster h: beside it, named after the old
// cluster and the time.
func (h *HeldCluster) keepPath(path string, now time.Time) string {
	id := h.InfraID
	if id == "" || strings.ContainsAny(id, "/\x00") || id == "." || id == ".." {
		id = "unknown"
	}
	return fmt.Sprintf("%s.old-%s-%s", filepath.Clean(path), id, now.UTC().Format("20060102T150405Z"))
}

// refuseFresh is the problem of a fresh run on the directory holding the cluster h without InReplaceCluster.
func (h *HeldCluster) refuseFresh(path string) installconfig.FieldError {
	return installconfig.FieldError{Field: InFresh, Detail: fmt.Sprintf(
		"%s holds the cluster %s (%s, %s): its state is the only copy of that cluster's keys, and %s starts a new cluster in its place; give %s too to do so, keeping %s whole beside it as %s",
		path, orNone(h.InfraID), plural(len(h.Workers), "1 worker", fmt.Sprintf("%d workers", len(h.Workers))),
		plural(len(h.Updates), "1 node update", fmt.Sprintf("%d node updates", len(h.Updates))),
		installconfig.Ref(InFresh), installconfig.Ref(InReplaceCluster), path, strings.TrimSuffix(h.keepPath(path, time.Time{}), "-00010101T000000Z")+"-<time>")}
}

// KeepHeld makes Replace keep the directory's held cluster (Held) beside it instead of removing it, and returns
// where; "" when the directory holds none.
func (d *Dir) KeepHeld(now time.Time) string {
	if d.Held == nil {
		return ""
	}
	d.keep = d.Held.keepPath(d.Path, now)
	return d.keep
}

// Kept says what a fresh run kept of the cluster it replaced, for stderr.
func (h *HeldCluster) Kept(path, keep string) string {
	workers, updates := "no workers", "no node updates"
	if len(h.Workers) > 0 {
		workers = fmt.Sprintf("%s %s/%s", plural(len(h.Workers), "its worker", "its workers"), WorkersDir, strings.Join(h.Workers, ", "+WorkersDir+"/"))
	}
	if len(h.Updates) > 0 {
		updates = "its node updates " + strings.Join(h.Updates, ", ")
	}
	return fmt.Sprintf("%s held the cluster %s: kept whole as %s (0700: its state, %s, %s); %s now holds the new cluster",
		path, orNone(h.InfraID), keep, workers, updates, path)
}

// OpenDir holds the render directory path for a run of command (outdir.LockDir: refused when another run holds it)
// and loads the state it holds (refused when not whole, state.IntegrityError). A directory that holds a render but
// no state is refused too: its cluster's keys are gone, and a render there would silently make a new cluster. With
// fresh, the state is not read: the run starts a new cluster. A path that cannot be an output directory is not
// held: its problem is in Problems.
func OpenDir(path, command string, fresh bool) (*Dir, error) {
	d := &Dir{Path: path, fresh: fresh}
	if path == "" {
		return d, nil // Validate says it is required
	}
	if err := outdir.CheckDest(path); err != nil {
		d.Problems = installconfig.ErrorList{{Field: InDir, Detail: err.Error()}}
		return d, nil
	}
	l, err := outdir.LockDir(path, command)
	if err != nil {
		return nil, err
	}
	d.Lock = l
	if fresh {
		d.Held = heldCluster(path)
		return d, nil
	}
	if state.Exists(path) {
		if d.State, err = state.Load(path); err != nil {
			l.Release()
			return nil, err
		}
		if d.State.Legacy {
			outdir.Logf("%s: the state has no %s (written by an earlier render-static): its files cannot be checked this time; this run adds it", path, state.SumsFile)
		}
		return d, nil
	}
	if _, err := os.Lstat(filepath.Join(path, outdir.MarkerFile)); err == nil {
		l.Release()
		return nil, fmt.Errorf("%s holds a render (%s) but no %s/: that cluster's keys are gone, and a render there now would start a new cluster over it; restore %s from a backup of the directory, or start a new cluster with "+installconfig.Ref(InFresh),
			path, outdir.MarkerFile, state.Dir, filepath.Join(path, state.Dir))
	}
	return d, nil
}

// Release gives the directory back.
func (d *Dir) Release() {
	if d != nil {
		d.Lock.Release()
	}
}

// Replace writes out into the directory in place of what it held, carrying over what every run keeps (Carried;
// not for a new cluster: the old cluster's updates do not apply to it).
func (d *Dir) Replace(ctx context.Context, out *Output) error {
	return d.ReplaceWith(ctx, out.Fill)
}

// ReplaceWith is Replace with fill writing the new tree (renew adds its update).
func (d *Dir) ReplaceWith(ctx context.Context, fill func(tmp string) error) error {
	if d.Lock == nil {
		return errors.New("writing output: the directory is not held")
	}
	replace := d.Lock.Replace
	if d.keep != "" {
		replace = func(ctx context.Context, fill func(string) error) error {
			return d.Lock.ReplaceKeeping(ctx, d.keep, fill)
		}
	}
	return replace(ctx, func(tmp string) error {
		if err := fill(tmp); err != nil {
			return err
		}
		if d.fresh {
			return nil
		}
		for _, e := range Carried {
			if _, err := os.Lstat(filepath.Join(tmp, e)); err == nil {
				continue // the run made it (renew)
			}
			if err := export.CopyTreeIfExists(filepath.Join(d.Path, e), filepath.Join(tmp, e)); err != nil {
				return fmt.Errorf("keeping %s: %w", e, err)
			}
		}
		return nil
	})
}

// withSaved gives the inputs not given the saved ones (a render continuing a cluster keeps what it was rendered
// with unless told otherwise: the input table, Options.FromState), and returns the story of the inputs: which came
// from the state, and the saved inputs that cannot be read.
func (d *Dir) withSaved(o Options) (Options, *story) {
	s := &story{dir: d}
	if d.State == nil {
		return o, s
	}
	o, s.fromState, s.problems = o.FromState(d.State, d.Path)
	return o, s
}

// installConfigIdentity is what a saved cluster's install-config fixes: an install-config that differs in one of
// these is another cluster's, and a render continuing the saved one refuses it (a fresh render starts a new
// cluster); the other inputs that fix it say so in the input table (Input.Identity). Everything else continues the
// cluster (docs/output.md, "What continues a cluster"): the loops reissue and roll what the change touches.
var installConfigIdentity = []struct {
	field string
	of    func(*installconfig.InstallConfig) string
	why   string
}{
	{"metadata.name", func(ic *installconfig.InstallConfig) string { return ic.Metadata.Name },
		"the API server's names (api and api-int.<name>.<baseDomain>) are in its serving certificates and in every kubeconfig"},
	{"baseDomain", func(ic *installconfig.InstallConfig) string { return ic.BaseDomain },
		"the API server's names (api and api-int.<name>.<baseDomain>) are in its serving certificates and in every kubeconfig"},
	{"networking.serviceNetwork", func(ic *installconfig.InstallConfig) string { return strings.Join(ic.Networking.ServiceNetwork, ",") },
		"the kubernetes Service's address (the first of the service network) is in kube-apiserver's serving certificate, and every Service's address is kept in etcd"},
	{"networking.clusterNetwork", func(ic *installconfig.InstallConfig) string {
		var out []string
		for _, n := range ic.Networking.ClusterNetwork {
			out = append(out, fmt.Sprintf("%s/%d", n.CIDR, n.HostPrefix))
		}
		return strings.Join(out, ",")
	}, "every pod's address and the node's pod subnet come from it (kube-controller-manager's cluster CIDR, the Network object in etcd)"},
	{"networking.networkType", func(ic *installconfig.InstallConfig) string { return ic.Networking.NetworkType },
		"a cluster does not change its network plugin in place"},
	{"fips", func(ic *installconfig.InstallConfig) string { return fmt.Sprint(ic.FIPS) },
		"the cluster's keys were made in (or outside) FIPS 140-3 mode, and RHCOS enables FIPS only at first boot"},
}

// continuity is what is wrong with continuing the saved cluster with these inputs: another cluster's
// install-config (identity), another node name or infrastructure name.
func (d *Dir) continuity(o Options) installconfig.ErrorList {
	if d.State == nil {
		return nil
	}
	var errs installconfig.ErrorList
	other := func(field, now, was, why string) {
		errs = append(errs, installconfig.FieldError{Field: field, Detail: fmt.Sprintf(
			"%q, but the cluster saved in %s has %q: %s, so this is another cluster (start one there with %s, or render into another %s)", now, d.Path, was, why,
			installconfig.Ref(InFresh), installconfig.Ref(InDir))})
	}
	for _, in := range Inputs {
		if in.Identity == "" {
			continue
		}
		var saved Options
		if ok, err := in.load(&saved, d.State, in.Name, ""); !ok || err != nil {
			continue
		}
		if now, was := in.value(&o), in.value(&saved); now != "" && now != was {
			other(in.Name, now, was, in.Identity)
		}
	}
	errs = append(errs, d.droppedWorkers(o)...)
	var saved Options
	row, _ := InputNamed(InInstallConfig)
	if ok, err := row.load(&saved, d.State, InInstallConfig, ""); o.InstallConfigData == nil || !ok || err != nil {
		return errs
	}
	now, err1 := installconfig.Parse(o.InstallConfigData)
	was, err2 := installconfig.Parse(saved.InstallConfigData)
	if err1 != nil || err2 != nil {
		return errs // the new one's problems are Validate's; a saved one that does not parse, renew's
	}
	for _, f := range installConfigIdentity {
		if a, b := f.of(now), f.of(was); a != b {
			other(f.field, a, b, f.why)
		}
	}
	return errs
}

// droppedWorkers is the problem of inputs that leave out workers of the saved cluster (its workers file's and the
// added ones): render-static has no way to remove a worker. The running control-plane node is never told of a
// re-render's workers but through an update, and its CSR approver would go on approving the dropped worker's
// certificates, its Node would stay: a re-render must give every worker again.
func (d *Dir) droppedWorkers(o Options) installconfig.ErrorList {
	now := map[string]bool{}
	for _, w := range slices.Concat(o.WorkerList, o.AddedWorkers) {
		now[w.NodeName] = true
	}
	var dropped []string
	for _, name := range []string{InWorkers, InAddedWorkers} {
		var saved []state.Worker
		if ok, err := d.State.Inputs.Get(name, &saved); !ok || err != nil {
			continue // a saved input that cannot be read is the story's problem
		}
		for _, w := range saved {
			if !now[w.NodeName] {
				dropped = append(dropped, w.NodeName)
			}
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	return installconfig.ErrorList{{Field: InWorkers, Detail: fmt.Sprintf(
		"%s, %s of the cluster saved in %s, %s not among the workers given: render-static cannot remove a worker (the control-plane node's CSR approver would go on approving %s certificates, and %s Node would stay); give every worker again (with compute[0].replicas counting them), or start a new cluster with %s",
		strings.Join(dropped, ", "), plural(len(dropped), "a worker", "workers"), d.Path, plural(len(dropped), "is", "are"),
		plural(len(dropped), "its", "their"), plural(len(dropped), "its", "their"), installconfig.Ref(InFresh))}}
}

// orNone is s, or "none" when empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// pendingUpdate says which update the directory holds for the node, if any: DIR has no way to know whether the node
// applied it (aio-update status there says).
func pendingUpdate(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, UpdateDir, "update.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("%s (unreadable: %v)", filepath.Join(dir, UpdateDir), err)
	}
	u, err := readUpdateHead(b)
	if err != nil {
		return fmt.Sprintf("%s (update.json: %v)", filepath.Join(dir, UpdateDir), err)
	}
	var rolled []string
	for _, c := range u.Components {
		if c.To != c.From {
			rolled = append(rolled, fmt.Sprintf("%s %d->%d", c.Name, c.From, c.To))
		}
	}
	slices.Sort(rolled)
	if len(rolled) == 0 {
		rolled = []string{"no new revision"} // a worker's: the node learns of it, no pod rolls
	}
	return fmt.Sprintf("%s (id %s, made %s: %s); apply it on the node unless done (aio-update status there lists what it applied)",
		filepath.Join(dir, UpdateDir), u.ID, u.Created.UTC().Format(time.RFC3339), strings.Join(rolled, ", "))
}

// plural is one when n is 1, many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
