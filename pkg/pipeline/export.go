package pipeline

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/node"
	"github.com/render-static/render-static/pkg/outdir"
	"github.com/render-static/render-static/pkg/podnetwork"
	"github.com/render-static/render-static/pkg/state"
)

// Output is everything a render writes.
type Output struct {
	Tree      *export.Tree
	Manifests []export.Manifest
	Ignition  []byte
	// Live is live.ign: the RHCOS live ISO's config that installs the node with Ignition (live.go).
	Live            []byte
	AdminKubeconfig []byte
	Trace           string
	Summary         Summary
	// State is what a later run needs to continue this cluster (DIR/state, secret; pkg/state).
	State *state.State
	// Workers are the worker nodes' files (DIR/workers/<name>: workers.go).
	Workers []WorkerOutput

	// validation is Ignition's validation (export.Built.Validate), run while Render writes the output; nil when
	// Ignition was validated before the Output was made.
	validation *future[struct{}]
	// expiry is the earliest expiry, found while Render writes the output (nil: in Summary already).
	expiry *future[expiring]
	// embed is live.ign's size in the live ISO's embed area, measured while the output is made (nil: in Summary
	// already).
	embed *future[LiveEmbed]
}

// expiring is the certificate that expires first: when, and its name in `render-static certs`; and the first
// of those the node keeps after its first boot (Summary.OffUntil).
type expiring struct {
	notAfter     time.Time
	name         string
	offUntil     time.Time
	offUntilName string
	// admin is the admin kubeconfig's expiry; userCAs the trust bundle's CAs, the first expiry among them and a
	// warning for each expired one (Summary.UserCAs).
	admin          time.Time
	userCAs        int
	userCAsFirst   time.Time
	userCAsExpired []string
}

// summarized puts the earliest expiry and live.ign's embed size into Summary once they are found.
func (o *Output) summarized() {
	if o.expiry != nil {
		e, _ := o.expiry.Get()
		o.Summary.EarliestExpiry, o.Summary.EarliestExpirySubject = e.notAfter, e.name
		o.Summary.OffUntil, o.Summary.OffUntilSubject = e.offUntil, e.offUntilName
		o.Summary.AdminKubeconfigExpiry = e.admin
		o.Summary.UserCAs, o.Summary.UserCAsExpired, o.Summary.UserCAsFirstExpiry = e.userCAs, len(e.userCAsExpired), e.userCAsFirst
		o.Summary.Warnings = append(o.Summary.Warnings, e.userCAsExpired...)
		o.expiry = nil
	}
	o.embedded()
}

// embedded waits for live.ign's embed size and puts it into Summary and State (which keeps it for the next run).
func (o *Output) embedded() {
	o.workersEmbedded() // workers.go
	if o.embed == nil {
		return
	}
	e, _ := o.embed.Get()
	o.embed = nil
	o.Summary.XZTime += e.xzTime
	e.xzTime = 0
	o.Summary.LiveEmbed = e
	if o.State != nil {
		o.State.LiveEmbed = e.Saved
	}
}

// Validated waits for the validation of Ignition and returns its error: Ignition may be used (written,
// compared, served) only once it returned nil. Export returns an Output already validated; Render's own export
// validates while the output directory is written, and Fill writes aio.ign only after it passed.
func (o *Output) Validated() error {
	if o.validation == nil {
		return nil
	}
	_, err := o.validation.Get()
	return err
}

// Export builds the node's files, the manifests and the Ignition config from a settled cluster; the Ignition config
// is validated (export.Ignition).
func Export(ctx context.Context, e *Settled) (*Output, error) {
	out, err := exportValidating(ctx, e)
	if err != nil {
		return nil, err
	}
	if err := out.Validated(); err != nil {
		return nil, fmt.Errorf("ignition: %w", err)
	}
	out.summarized()
	return out, nil
}

// exportValidating is Export returning while Ignition's validation still runs (Output.Validated) and
// the earliest expiry is still being found (Output.summarized), so that the output directory is written meanwhile
// (Render). Its steps: the manifests (exportManifests), the node's files (nodeFiles: the installer layout of every
// static pod, the admin kubeconfig, the node side), then Ignition built, the state captured and the earliest expiry
// found at once (none depends on another).
func exportValidating(ctx context.Context, e *Settled) (*Output, error) {
	t := time.Now()
	in := e.Inputs
	objs, manifests, whole, err := exportManifests(e)
	if err != nil {
		return nil, err
	}
	tree, kubeconfig, err := nodeFiles(ctx, e, manifests)
	if err != nil {
		return nil, err
	}
	workers, err := workerOutputs(ctx, e)
	if err != nil {
		return nil, err
	}
	pulls, perr := imagePulls(in)
	exportTime := time.Since(t)

	t = time.Now()
	type built struct {
		ign   *export.Built
		prev  *export.PreviousIgnition
		live  []byte
		embed *future[LiveEmbed]
	}
	ignition := goFuture(func() (built, error) {
		prev := e.previousIgnition()
		ign, err := export.IgnitionUnvalidated(tree, export.IgnitionOptions{SSHAuthorizedKeys: in.InstallConfig.SSHKeys(), PreviousParsed: prev})
		if err != nil {
			return built{}, err
		}
		// live.ign carries aio.ign; its embed size takes xz about half a second, measured while the rest is made
		// and written.
		live, err := liveIgnition(ign.Raw, in)
		if err != nil {
			return built{}, err
		}
		var earlier *state.LiveEmbed
		if e.From != nil {
			earlier = e.From.LiveEmbed
		}
		embed := goFuture(func() (LiveEmbed, error) { return measureLive(ctx, live, earlier), nil })
		return built{ign, prev, live, embed}, nil
	})
	expiry := goFuture(func() (expiring, error) { return earliestExpiry(tree, workers, manifests), nil })
	st, err := captureState(e, objs, whole)
	b, ignErr := ignition.Get()
	if err != nil {
		return nil, err
	}
	if ignErr != nil {
		return nil, fmt.Errorf("ignition: %w", ignErr)
	}
	ignTime := time.Since(t) // building Ignition, and meanwhile the state (and part of the earliest expiry)

	out := &Output{
		Tree: tree, Manifests: manifests, State: st, Ignition: b.ign.Raw, Live: b.live, AdminKubeconfig: kubeconfig, Trace: e.Result.Trace(),
		Workers: workers,
		Summary: Summary{
			Loops: e.Loops, Passes: e.Result.TotalPasses(), Objects: len(manifests), Files: len(tree.Files()),
			IgnitionBytes: len(b.ign.Raw), LiveInstall: LiveInstall{LiveBytes: len(b.live), InstallDevice: in.InstallDevice, Keyfiles: keyfileNames(in)},
			WorkerLive: workerLives(in, workers),
			Warnings:   warnings(in),
			KeygenTime: e.KeygenTime, LoopsTime: e.LoopsTime, ExportTime: exportTime, IgnitionTime: ignTime,
		},
		// done already when the new aio.ign is the previous one
		validation: goFuture(func() (struct{}, error) { return struct{}{}, b.prev.Validate(b.ign) }),
		expiry:     expiry,
		embed:      b.embed,
	}
	out.Summary.Release = in.Release.Describe()
	if perr != nil {
		out.Summary.Warnings = append(out.Summary.Warnings, fmt.Sprintf("where the nodes pull their images from is unknown: %v", perr))
	} else {
		out.Summary.Images = pulls.Line()
		out.Summary.Warnings = append(out.Summary.Warnings, pulls.Warnings...)
	}
	return out, nil
}

// exportManifests lists the settled cluster's objects once, for the manifests and the state, and makes the
// manifests (those of objects left as loaded were made while the loops ran) and each object's YAML whole for the
// state, from one encoding of what they share; then filters what must not reach a cluster without operators and
// adds the CRDs of the exported custom kinds, the manifests pruned to them, sorted.
func exportManifests(e *Settled) ([]runtime.Object, []export.Manifest, map[runtime.Object][]byte, error) {
	objs, err := export.Objects(e.Cluster)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("export manifests: %w", err)
	}
	e.ahead.halt()
	manifests, whole, err := export.ManifestsAndWholeOf(e.Cluster, objs, e.ahead.reuse)
	e.ahead = nil // what was not taken is garbage
	if err != nil {
		return nil, nil, nil, fmt.Errorf("export manifests: %w", err)
	}
	// What must not reach a cluster without operators is decided in one place (pkg/node, docs/node.md).
	manifests, _ = node.FilterExport(manifests)
	// The revision controller's copies of the revisions no static pod runs stay in the state only (export.PruneRevisions:
	// what the operators' prune controller keeps of a node installed from aio.ign).
	var running []export.Revisioned
	for _, comp := range e.Components {
		running = append(running, export.Revisioned{Pod: comp.StaticPod(), Revision: e.Revisions[comp.Name()]})
	}
	manifests, _ = export.PruneRevisions(manifests, running)
	// The workers' Nodes the control plane declares before they register (their role labels).
	workerNodes, err := node.WorkerNodes(e.Inputs)
	if err != nil {
		return nil, nil, nil, err
	}
	manifests = append(manifests, workerNodes...)
	// The built-in pod network's add-ons: CoreDNS and the nodes' kube-proxy binding (pkg/podnetwork); none for a
	// network of the user's.
	addOns, err := podnetwork.Manifests(e.Inputs)
	if err != nil {
		return nil, nil, nil, err
	}
	manifests = append(manifests, addOns...)
	// Secrets' text values as text (stringData), which the API server stores as the same data.
	if err := export.SecretsAsText(manifests); err != nil {
		return nil, nil, nil, fmt.Errorf("export manifests: %w", err)
	}
	// The CRDs of the exported custom kinds, so the first-boot apply can create them first; their variants follow
	// the exported FeatureGate's feature set.
	crds, err := export.CRDs(manifests, export.FeatureSet(manifests))
	if err != nil {
		return nil, nil, nil, err
	}
	// Fields a CRD of this feature set does not define would fail the live cluster's strict validation.
	if _, err := export.PruneToCRDs(manifests, crds); err != nil {
		return nil, nil, nil, err
	}
	manifests = append(crds, manifests...)
	sort.Slice(manifests, func(i, j int) bool { return manifests[i].File < manifests[j].File })
	return objs, manifests, whole, nil
}

// nodeFiles is every file of the node: the manifests for the first-boot apply, every component's static pod at its
// revision as the installer pod lays it out, the admin kubeconfig, /etc/hostname and the node side's files.
func nodeFiles(ctx context.Context, e *Settled, manifests []export.Manifest) (*export.Tree, []byte, error) {
	tree := export.NewTree()
	for _, m := range manifests {
		mode := fs.FileMode(0644)
		if m.Secret() {
			mode = 0600
		}
		if err := tree.AddFile(path.Join(node.ManifestsDir, m.File), mode, m.NodeBytes()); err != nil {
			return nil, nil, err
		}
	}
	for _, comp := range e.Components {
		podTree, err := export.Install(ctx, e.Cluster.Kube, comp.StaticPod(), e.Revisions[comp.Name()], e.Inputs.NodeName)
		if err != nil {
			return nil, nil, fmt.Errorf("%s static pod: %w", comp.Name(), err)
		}
		if err := tree.Merge(podTree); err != nil {
			return nil, nil, err
		}
	}
	kubeconfig, err := adminKubeconfig(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	if err := tree.AddFile(node.AdminKubeconfigPath, 0600, kubeconfig); err != nil {
		return nil, nil, err
	}
	if err := tree.AddFile("/etc/hostname", 0644, []byte(e.Inputs.NodeName+"\n")); err != nil {
		return nil, nil, err
	}
	if err := addKeyfiles(tree, e.Inputs.NetworkKeyfiles); err != nil { // live.go
		return nil, nil, err
	}
	side, err := nodeTree(ctx, e.Node, manifests) // node.go
	if err != nil {
		return nil, nil, fmt.Errorf("node: %w", err)
	}
	if err := tree.Merge(side); err != nil {
		return nil, nil, err
	}
	return tree, kubeconfig, nil
}

// captureState is the state of the settled cluster, whose objects are objs; whole holds the YAML of some of them
// (export.ManifestsAndWholeOf).
func captureState(e *Settled, objs []runtime.Object, whole map[runtime.Object][]byte) (*state.State, error) {
	nodeKeys, err := e.Node.SaveKeys()
	if err != nil {
		return nil, err
	}
	st, err := state.CaptureObjects(e.Cluster, objs, e.Inputs.InfraID, e.Admin, nodeKeys)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	st.IgnitionEncoder = export.EncoderID
	if e.From != nil {
		st.Continues(e.From) // unchanged objects keep their saved files
	}
	// Encoded now, while Ignition is built, rather than when the files are written.
	if err := st.EncodeObjects(whole); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	return st, nil
}

// previousIgnition is the aio.ign beside the state the render continued, parsed and validated
// (export.ParseValidatePreviousIgnition) while the loops ran; nil for a new cluster.
func (e *Settled) previousIgnition() *export.PreviousIgnition {
	if e.previousIgn == nil {
		return nil
	}
	prev, _ := e.previousIgn.Get()
	return prev
}

// previousIgnition is the aio.ign beside the state the render continued, when it was encoded as this render
// encodes (nil otherwise): an identical new aio.ign is then that one, already validated.
func previousIgnition(from *state.State) []byte {
	if from == nil || from.LoadedFrom == "" || from.IgnitionEncoder != export.EncoderID {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(from.LoadedFrom, "aio.ign"))
	if err != nil {
		return nil
	}
	return b
}

// adminKubeconfig points at the external API name and trusts the API server's serving CA bundle, which the
// registry names (components.ServingCA: kube-apiserver's union of every serving CA).
func adminKubeconfig(ctx context.Context, e *Settled) ([]byte, error) {
	ca := components.ServingCA
	cm, err := e.Cluster.Kube.CoreV1().ConfigMaps(ca.Namespace).Get(ctx, ca.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	ic := e.Inputs.InstallConfig
	return certs.Kubeconfig(ic.Metadata.Name, ic.APIServerURL(), []byte(cm.Data[ca.Key]), e.Admin.CertPEM, e.Admin.KeyPEM, "admin")
}

// Write writes the output directory atomically: aio.ign and live.ign (0600), auth/kubeconfig (0600), manifests/,
// rootfs/ (exactly what aio.ign lays down), trace.txt and state/ (secret: 0700/0600).
func (o *Output) Write(dir string) error {
	return outdir.WriteDirAtomic(dir, o.Fill)
}

// Fill writes the output into tmp, a new directory outdir.WriteDirAtomic is filling (renew adds its update): an
// export.Plan, so that files with the same contents and mode are written once. The state keeps live.ign's embed
// size, which xz may still be measuring: everything else is written meanwhile, then the state, in a plan of its
// own (no state file has the contents and mode of a file outside it). aio.ign and live.ign are written last, once
// Ignition passed its validation (Validated), which may run meanwhile too.
func (o *Output) Fill(tmp string) error {
	var plan export.Plan
	// The user's copy (kubectl config set-context edits it in place): a file of its own, never a link to rootfs/'s.
	plan.OwnFile(AdminKubeconfigFile, 0600, o.AdminKubeconfig)
	if len(o.Manifests) > 0 {
		plan.Dir("manifests", 0o755)
	}
	for _, m := range o.Manifests {
		mode := fs.FileMode(0644)
		if m.Secret() {
			mode = 0600
		}
		plan.File("manifests/"+m.File, mode, m.YAML)
	}
	if err := plan.Rootfs("rootfs", o.Tree); err != nil {
		return err
	}
	plan.File("trace.txt", 0644, []byte(o.Trace))
	if err := planWorkers(&plan, o.Workers); err != nil {
		return err
	}
	if err := plan.Write(tmp); err != nil {
		return err
	}
	o.embedded()
	if o.State != nil {
		var state export.Plan
		if err := o.State.Plan(&state); err != nil {
			return err
		}
		if err := state.Write(tmp); err != nil {
			return err
		}
	}
	if err := o.Validated(); err != nil {
		return fmt.Errorf("ignition: %w", err)
	}
	if err := export.WriteFile(filepath.Join(tmp, "aio.ign"), 0600, o.Ignition); err != nil {
		return err
	}
	if o.Live == nil {
		return nil
	}
	return export.WriteFile(filepath.Join(tmp, "live.ign"), 0600, o.Live)
}

// keyfileNames are the names of the inputs' keyfiles, for the summary.
func keyfileNames(in *clusterconfig.Inputs) []string {
	var out []string
	for _, k := range in.NetworkKeyfiles {
		out = append(out, k.Name)
	}
	return out
}

// warnings are the render's warnings about its inputs (see Summary.Warnings): the install-config's (deprecated
// fields, SSH keys whose key data does not parse, installconfig.Warnings), the certificate lifetimes' and the
// validation's (in.Warnings: the keyfiles'), an input named as a reference (installconfig.Ref) that a front end
// expands to its own name for it.
func warnings(in *clusterconfig.Inputs) []string {
	out := in.InstallConfig.Warnings()
	if w := in.Lifetimes.Warning(); w != "" {
		out = append(out, w)
	}
	for _, w := range in.Warnings {
		if _, ok := InputNamed(w.Field); ok { // an input itself (networkKeyfiles), not a worker's (workers[0]...)
			w.Field = installconfig.Ref(w.Field)
		}
		out = append(out, w.Error())
	}
	return out
}
