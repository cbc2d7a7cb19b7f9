// Package renew is `render-static renew`: the operators' cert-rotation loops run again, offline, over a render's
// saved state (pkg/state), the revision controllers make the next revision of every static pod whose revisioned
// inputs changed, and the result is written twice: as the render's own output (state, aio.ign, manifests, rootfs:
// a node provisioned again gets the renewed cluster) and as an update for the running node (DIR/update, applied
// there by aio-update, which aio.ign installs).
//
// What is renewed is decided by library-go (pkg/operator/certrotation): a leaf when it is past 80% of its
// validity, past its refresh time or expired; a signer likewise, its CA bundle keeping the old and the new signer
// until the old one expires (cabundle.go, manageCABundleConfigMap). --within and --force make leaves due earlier
// by marking them (marks.go); certificates are never edited.
package renew

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/render-static/render-static/internal/faultpoint"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/state"
)

// InWithin and InForce are the input names of Options.Within and Force (installconfig.Ref).
const (
	InWithin = "within"
	InForce  = "force"
)

// Options are renew's inputs.
type Options struct {
	// Dir is a render's output directory holding its state.
	Dir string
	// Within makes every leaf whose certificate expires within it due now.
	Within time.Duration
	// Force makes every leaf due now.
	Force bool
	// Now is the time renew compares expiries with (zero: the wall clock). library-go's own decisions always
	// use the wall clock.
	Now time.Time
}

// Run renews the cluster of o.Dir and writes the directory and its update atomically. Bad input (no state, saved
// inputs that no longer validate) is an installconfig.ErrorList naming the field; o.Dir is then left untouched.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if errs := o.validate(); len(errs) > 0 {
		return nil, errs
	}
	return run(ctx, o, "renew", nil)
}

// run continues the cluster saved in o.Dir, with add among its workers when not nil (AddWorker), and writes the
// directory and, when the render changed, the update for the running node. command names the run in the
// directory's lock.
func run(ctx context.Context, o Options, command string, add *state.Worker) (*Report, error) {
	start := time.Now()
	// The directory is held from before its state is read until it is replaced (pipeline.OpenDir).
	d, err := pipeline.OpenDir(o.Dir, command, false)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	st := d.State
	if st == nil {
		return nil, installconfig.ErrorList{noState(o.Dir, command)}
	}
	in, err := savedInputs(st, o.Dir, add)
	if err != nil {
		return nil, err
	}
	oldIgn, err := os.ReadFile(o.Dir + "/aio.ign")
	if err != nil {
		return nil, installconfig.ErrorList{{Field: pipeline.InDir, Detail: fmt.Sprintf("%v: renew compares the new render with the node's aio.ign", err)}}
	}

	m := &marker{now: o.Now, within: o.Within, force: o.Force}
	eng, err := pipeline.SettleFrom(ctx, in, st, &pipeline.SettleHooks{BeforeConverge: m.before, AfterConverge: m.after})
	if err != nil {
		return nil, err
	}
	out, err := pipeline.Export(ctx, eng)
	if err != nil {
		return nil, err
	}
	// The saved inputs stay as they were: renew changes certificates, not inputs; a worker is added to them.
	out.State.Inputs = st.Inputs
	if add != nil {
		out.State.Inputs.AddedWorkers = append(slices.Clone(st.Inputs.AddedWorkers), *add)
	}

	rep, upd, err := compare(ctx, o, st, m, eng, out, oldIgn)
	if err != nil {
		return nil, err
	}
	faultpoint.Kill("renewed")
	if err := write(ctx, d, out, upd); err != nil {
		return nil, err
	}
	rep.command = command
	rep.Workers = out.Summary.WorkerLive
	rep.Elapsed = time.Since(start)
	return rep, nil
}

func (o Options) validate() installconfig.ErrorList {
	var errs installconfig.ErrorList
	if o.Dir == "" {
		errs = append(errs, installconfig.FieldError{Field: pipeline.InDir, Detail: "required"})
	}
	if o.Within < 0 {
		errs = append(errs, installconfig.FieldError{Field: InWithin, Detail: fmt.Sprintf("%s is negative", o.Within)})
	}
	if o.Force && o.Within > 0 {
		errs = append(errs, installconfig.FieldError{Field: InWithin, Detail: "{force} already makes every leaf due; give one of {force} and {within}"})
	}
	return errs
}

func noState(dir, command string) installconfig.FieldError {
	return installconfig.FieldError{Field: pipeline.InDir, Detail: fmt.Sprintf(
		"%s holds no render state (%s/%s/): %s continues a cluster that render-static rendered into this directory", dir, dir, state.Dir, command)}
}

// savedInputs validates the inputs the state keeps, exactly as the render validated them, with add among the added
// workers when not nil; a problem names the saved input (state/render.json inputs.<field>), or, for add, the
// worker's own input (pipeline.InNodeName, InNodeIP).
func savedInputs(st *state.State, dir string, add *state.Worker) (*clusterconfig.Inputs, error) {
	si := st.Inputs
	field := func(f string) string { return state.Dir + "/render.json inputs." + f }
	var errs installconfig.ErrorList
	if si.InstallConfig == "" {
		errs = append(errs, installconfig.FieldError{Field: field("installConfig"), Detail: "empty: this state was not written by a render that keeps its inputs (render again with {fresh})"})
	}
	validity, err := time.ParseDuration(si.CertValidity)
	if err != nil {
		errs = append(errs, installconfig.FieldError{Field: field("certValidity"), Detail: fmt.Sprintf("%q: %v", si.CertValidity, err)})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	o := pipeline.Options{InstallConfig: field("installConfig"), InstallConfigData: []byte(si.InstallConfig), NodeIP: si.NodeIP,
		NodeName: si.NodeName, Dir: dir, CertValidity: validity, InfraID: st.InfraID, Flavor: si.Flavor,
		AddedWorkers: pipeline.SavedWorkers(field(pipeline.InAddedWorkers), si.AddedWorkers)}
	if si.Images != "" {
		o.Images, o.ImagesData = field("images"), []byte(si.Images)
	}
	if si.Workers != nil {
		o.Workers, o.WorkerList = field("workers"), pipeline.SavedWorkers(field("workers"), si.Workers)
	}
	// The added worker's problems are its inputs' (the worker command's); the saved ones', their saved inputs'.
	addedPrefix := fmt.Sprintf("%s[%d].", pipeline.InAddedWorkers, len(si.AddedWorkers))
	if add != nil {
		o.AddedWorkers = append(o.AddedWorkers, *add)
	}
	o.InstallDevice = si.InstallDevice
	for i, k := range si.NetworkKeyfiles {
		o.NetworkKeyfileData = append(o.NetworkKeyfileData, clusterconfig.Keyfile{Name: k.Name, Contents: []byte(k.Contents),
			Source: fmt.Sprintf("%s[%d] (%s)", field(pipeline.InNetworkKeyfiles), i, k.Name)})
	}
	in, err := pipeline.Validate(o)
	if list, ok := err.(installconfig.ErrorList); ok {
		// Name the saved input, not the flag a render takes it from.
		out := make(installconfig.ErrorList, 0, len(list))
		for _, e := range list {
			switch {
			case add != nil && e.Field == addedPrefix+"nodeName":
				e.Field = pipeline.InNodeName
			case add != nil && e.Field == addedPrefix+"nodeIP":
				e.Field = pipeline.InNodeIP
			case add != nil && e.Field == addedPrefix+pipeline.InInstallDevice:
				e.Field = pipeline.InInstallDevice
			case add != nil && e.Field == addedPrefix+pipeline.InNetworkKeyfiles:
				e.Field, e.Detail = pipeline.InNetworkKeyfiles, strings.ReplaceAll(e.Detail, "("+addedPrefix+"nodeIP)", "("+installconfig.Ref(pipeline.InNodeIP)+")")
			case e.Field == pipeline.InInfraID:
				e.Field = state.Dir + "/render.json infraID"
			case slices.Contains([]string{pipeline.InInstallConfig, pipeline.InNodeIP, pipeline.InNodeName, pipeline.InCertValidity, pipeline.InFlavor,
				pipeline.InImages, pipeline.InWorkers, pipeline.InInstallDevice, pipeline.InNetworkKeyfiles}, e.Field),
				strings.HasPrefix(e.Field, pipeline.InWorkers+"["), strings.HasPrefix(e.Field, pipeline.InAddedWorkers+"["):
				e.Field = field(e.Field)
			default:
				e.Field = field("installConfig") + ": " + e.Field
			}
			out = append(out, e)
		}
		return nil, out
	}
	return in, err
}
