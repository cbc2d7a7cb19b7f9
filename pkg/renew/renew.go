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
	return Continue(ctx, o, "renew", nil)
}

// Continue continues the cluster saved in o.Dir, with add among its workers when not nil (pkg/worker), and writes
// the directory and, when the render changed, the update for the running node. command names the run in the
// directory's lock and in its messages.
func Continue(ctx context.Context, o Options, command string, add *state.Worker) (*Report, error) {
	start := time.Now()
	// The directory is held from before its state is read until it is replaced (pipeline.OpenDir).
	d, err := pipeline.OpenDir(o.Dir, command, false)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	if len(d.Problems) > 0 { // a path that cannot be a render directory: said as the render says it
		return nil, d.Problems
	}
	st := d.State
	if st == nil {
		return nil, installconfig.ErrorList{NoState(o.Dir, command)}
	}
	if errs := checkPending(o.Dir); len(errs) > 0 {
		return nil, errs
	}
	so, in, err := savedInputs(st, o.Dir, add)
	if err != nil {
		return nil, err
	}
	// What this run saves must be readable by the next (an added worker's keyfiles could make it too large).
	if errs := pipeline.CheckSaved(pipeline.SaveInputs(so, in)); len(errs) > 0 {
		if add != nil && errs[0].Field == pipeline.InAddedWorkers {
			errs[0].Field = pipeline.InNetworkKeyfiles
		}
		return nil, errs
	}
	oldIgn, err := os.ReadFile(o.Dir + "/aio.ign")
	if err != nil {
		return nil, installconfig.ErrorList{{Field: pipeline.InDir, Detail: fmt.Sprintf("%v: renew compares the new render with the node's aio.ign", err)}}
	}
	earlier := readEarlier(oldIgn)

	m := &marker{now: o.Now, within: o.Within, force: o.Force, reason: markReason(o)}
	eng, err := pipeline.SettleFrom(ctx, in, st, &pipeline.SettleHooks{BeforeConverge: m.before, AfterConverge: m.after})
	if err != nil {
		return nil, err
	}
	out, err := pipeline.Export(ctx, eng)
	if err != nil {
		return nil, err
	}
	// The saved inputs stay as they were (saved again as a render saves them): renew changes certificates, not
	// inputs; a worker is added to them.
	out.State.Inputs = pipeline.SaveInputs(so, in)

	rep, upd, err := compare(ctx, o, st, m, eng, out, earlier)
	if err != nil {
		return nil, err
	}
	faultpoint.Kill("renewed")
	if err := write(ctx, d, out, upd, updateReadme(commandBy(command, add))); err != nil {
		return nil, err
	}
	rep.command = command
	if add != nil {
		rep.added = add.NodeName
	}
	rep.Workers = out.Summary.WorkerLive
	if add != nil {
		rep.Warnings = addedWarnings(in.Warnings, len(so.AddedWorkers)-1)
	}
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

// NoState is the problem of a directory without a render's state, for command.
func NoState(dir, command string) installconfig.FieldError {
	return installconfig.FieldError{Field: pipeline.InDir, Detail: fmt.Sprintf(
		"%s holds no render state (%s/%s/): %s continues a cluster that render-static rendered into this directory", dir, dir, state.Dir, command)}
}

// savedInputs validates the inputs the state keeps (the input table, pipeline.Options.FromState), exactly as the
// render validated them, with add among the added workers when not nil; a problem names the saved input
// (state/render.json inputs.<name>), or, for add, the worker's own input (pipeline.InNodeName, InNodeIP, ...).
func savedInputs(st *state.State, dir string, add *state.Worker) (pipeline.Options, *clusterconfig.Inputs, error) {
	o, _, errs := pipeline.Options{Dir: dir}.FromState(st, dir)
	if o.InstallConfigData == nil {
		errs = append(errs, installconfig.FieldError{Field: pipeline.SavedField(pipeline.InInstallConfig),
			Detail: "empty: this state was not written by a render that keeps its inputs (render again with {fresh})"})
	}
	if len(errs) > 0 {
		return o, nil, errs
	}
	// The added worker's problems are its inputs' (the worker command's); the saved ones', their saved inputs'.
	var addedPrefix string
	if add != nil {
		addedPrefix = fmt.Sprintf("%s[%d].", pipeline.InAddedWorkers, len(o.AddedWorkers))
		o.AddedWorkers = append(o.AddedWorkers, *add)
	}
	in, err := pipeline.Validate(o)
	list, ok := err.(installconfig.ErrorList)
	if !ok {
		return o, in, err
	}
	out := make(installconfig.ErrorList, 0, len(list))
	for _, e := range list {
		switch own, isAdded := strings.CutPrefix(e.Field, addedPrefix); {
		case add != nil && isAdded:
			// The worker's own inputs are named as the render names the node's: nodeName, nodeIP, ...
			e.Field, e.Detail = own, strings.ReplaceAll(e.Detail, "("+addedPrefix+"nodeIP)", "("+installconfig.Ref(pipeline.InNodeIP)+")")
		case pipeline.IsInput(e.Field):
			e.Field = pipeline.SavedField(e.Field)
		default:
			e.Field = pipeline.SavedField(pipeline.InInstallConfig) + ": " + e.Field
		}
		out = append(out, e)
	}
	return o, nil, out
}

// addedWarnings are the validation's warnings about the added worker (addedWorkers[i]), named as the worker
// command's own inputs (installconfig.Ref of nodeIP, networkKeyfiles, ...), as savedInputs names its problems.
func addedWarnings(warnings installconfig.ErrorList, i int) []string {
	prefix := fmt.Sprintf("%s[%d].", pipeline.InAddedWorkers, i)
	var out []string
	for _, w := range warnings {
		own, ok := strings.CutPrefix(w.Field, prefix)
		if !ok {
			continue
		}
		out = append(out, installconfig.Ref(own)+": "+strings.ReplaceAll(w.Detail, "("+prefix+"nodeIP)", "("+installconfig.Ref(pipeline.InNodeIP)+")"))
	}
	return out
}
