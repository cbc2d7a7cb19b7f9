// Package pipeline is a render from end to end, in steps a reader can follow top to bottom:
//
//  0. The directory (dir.go, OpenDir): held for the run, its state loaded and checked, the saved inputs taken as
//     defaults, inputs of another cluster refused.
//  1. The inputs (Validate): the install-config and the other inputs, every problem at once.
//  2. Settling (settle.go, SettleWith): seed the in-memory cluster with what the installer would give it
//     (seed), build it with every component's loops and the node side's (assemble), run them in order to a
//     fixpoint and make the revisions (converge).
//  3. The export (export.go, exportValidating): every object the fakes hold as manifests (exportManifests), the
//     static-pod installer layout of each component and the node side's files (nodeFiles), all of it packed into
//     one Ignition config while the state is captured.
//  4. The write (Dir.Replace): the whole output exchanged with the directory's in one step.
//
// Work that does not depend on the step at hand runs beside it as a future (future.go), started where it is
// written: the CRDs and the earlier aio.ign while the loops run; Ignition, the state and the earliest expiry at once.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/render-static/render-static/internal/faultpoint"
	"github.com/render-static/render-static/internal/inputfile"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/outdir"
	"github.com/render-static/render-static/pkg/state"
)

// readFiles reads the input files whose contents are not given yet (regular files only: inputfile.Read); a file
// that cannot be read is a problem of its field, and its path is dropped so that it is reported once.
func (o Options) readFiles() (Options, installconfig.ErrorList) {
	var errs installconfig.ErrorList
	read := func(field string, path *string, data *[]byte) {
		if *data != nil || *path == "" {
			return
		}
		b, err := inputfile.Read(*path)
		if err != nil {
			errs = append(errs, installconfig.FieldError{Field: field, Detail: err.Error()})
			*path = ""
			return
		}
		*data = b
	}
	read(InInstallConfig, &o.InstallConfig, &o.InstallConfigData)
	read(InImages, &o.Images, &o.ImagesData)
	read(InReleaseInfo, &o.ReleaseInfo, &o.ReleaseInfoData)
	if o.WorkerList == nil {
		read(InWorkers, &o.Workers, &o.WorkersData)
		var werrs installconfig.ErrorList
		o.WorkerList, werrs = readWorkersFile(o.Workers, o.WorkersData) // workers.go
		errs = append(errs, werrs...)
	}
	if o.NetworkKeyfileData == nil && len(o.NetworkKeyfiles) > 0 {
		o.NetworkKeyfileData = []clusterconfig.Keyfile{}
		for _, p := range o.NetworkKeyfiles {
			b, err := inputfile.ReadNoFollow(p)
			if err != nil {
				errs = append(errs, installconfig.FieldError{Field: InNetworkKeyfiles, Detail: err.Error()})
				continue
			}
			o.NetworkKeyfileData = append(o.NetworkKeyfileData, clusterconfig.Keyfile{Name: filepath.Base(p), Source: p, Contents: b})
		}
	}
	return o, errs
}

// Validate checks the options and the install-config and returns the render's inputs, or every problem found
// (an installconfig.ErrorList). Inputs not given take their defaults.
func Validate(o Options) (*clusterconfig.Inputs, error) {
	o, errs := o.readFiles()
	return validate(o, errs)
}

// validate is Validate of options whose files were read (readFiles, with its problems in errs).
func validate(o Options, errs installconfig.ErrorList) (*clusterconfig.Inputs, error) {
	o = o.withDefaults()
	add := func(field, format string, args ...interface{}) {
		errs = append(errs, installconfig.FieldError{Field: field, Detail: fmt.Sprintf(format, args...)})
	}
	if o.InstallConfig == "" && o.InstallConfigData == nil && !errs.Has(InInstallConfig) {
		add(InInstallConfig, "required")
	}
	if o.Dir == "" {
		add(InDir, "required")
	}
	var nodeIPs []netip.Addr
	if o.NodeIP == "" {
		add(InNodeIP, "required")
	} else if ips, err := installconfig.ParseNodeIPs(o.NodeIP); err != nil {
		errs = append(errs, asFieldErrors(InNodeIP, err)...)
	} else {
		nodeIPs = ips
	}
	if msgs := validation.IsDNS1123Subdomain(o.NodeName); len(msgs) > 0 {
		add(InNodeName, "%q is not a valid node name: %s", o.NodeName, strings.Join(msgs, "; "))
	} else if msg := checkNodeNameFits(o.NodeName); msg != "" {
		add(InNodeName, "%s", msg)
	}
	if o.InfraID != "" {
		if msgs := validation.IsDNS1123Label(o.InfraID); len(msgs) > 0 || len(o.InfraID) > 27 {
			add(InInfraID, "%q must be a DNS-1123 label of at most 27 characters", o.InfraID)
		}
	}
	lt, err := certs.NewLifetimes(o.CertValidity)
	if err != nil {
		errs = append(errs, asFieldErrors(InCertValidity, err)...)
	}
	flavor, err := clusterconfig.ParseFlavor(o.Flavor)
	if err != nil {
		errs = append(errs, asFieldErrors(InFlavor, err)...)
	}
	var ic *installconfig.InstallConfig
	if o.InstallConfigData != nil {
		ic, err = installconfig.LoadData(o.InstallConfigData, o.InstallConfig, nodeIPs)
	}
	if err != nil {
		// Field problems name their field; problems of the whole file (unreadable, empty, not YAML) the input.
		errs = append(errs, asFieldErrors(InInstallConfig, err)...)
	}
	// The images: the defaults (the add-ons' by flavor, clusterconfig.AddOnImages) < the release's < --images.
	release, defaults := releaseImages(o, ic, flavor, &errs)
	images, err := clusterconfig.ParseImages(o.ImagesData, o.Images, defaults)
	if err != nil {
		errs = append(errs, asFieldErrors(InImages, err)...)
	}
	var workers []clusterconfig.Worker
	var warns installconfig.ErrorList
	if ic != nil && !errs.Has(InWorkers) {
		var werrs installconfig.ErrorList
		workers, werrs, warns = validateWorkers(o, ic, nodeIPs, errs)
		errs = append(errs, werrs...)
	}
	installDevice := o.InstallDevice
	if installDevice != "" {
		if err := checkInstallDevice(installDevice); err != nil {
			add(InInstallDevice, "%v", err)
		}
	} else if ic != nil && ic.BootstrapInPlace != nil && ic.BootstrapInPlace.InstallationDisk != "" {
		// The installer's single-node flow installs to bootstrapInPlace.installationDisk (pkg/asset/ignition/
		// bootstrap/bootstrapinplace: the live ISO's coreos-installer dest-device); it is the default here too,
		// checked as the input is, and the input overrides it. It is not saved as the input: a later install-config
		// names its own.
		installDevice = ic.BootstrapInPlace.InstallationDisk
		if err := checkInstallDevice(installDevice); err != nil {
			add(InstallationDiskField, "%v", err)
		}
	}
	var machine []netip.Prefix
	if ic != nil {
		machine = ic.MachineCIDRs()
	}
	keyfiles, kerrs, kwarns := readKeyfiles(InNetworkKeyfiles, installconfig.Ref(InNodeIP), o.NetworkKeyfileData, nodeIPs, machine)
	errs = append(errs, kerrs...)
	warns = append(kwarns, warns...) // the node's own first, then its workers
	if len(errs) > 0 {
		return nil, errs
	}
	infraID := o.InfraID
	if infraID == "" {
		infraID = clusterconfig.NewInfraID(ic.Metadata.Name)
	}
	return &clusterconfig.Inputs{InstallConfig: ic, NodeName: o.NodeName, NodeIPs: nodeIPs, InfraID: infraID, Lifetimes: lt, Images: images,
		Release: release, Flavor: flavor, Workers: workers, InstallDevice: installDevice, NetworkKeyfiles: keyfiles, Warnings: warns}, nil
}

// releaseImages reads the release input, if any, and gives the default images with its pull specs: every image the
// flavor's nodes pull (components.PulledImages) must be in it, for the install-config's architecture. Its problems are
// appended to errs; without an install-config to check it against, the defaults stay.
func releaseImages(o Options, ic *installconfig.InstallConfig, flavor clusterconfig.Flavor, errs *installconfig.ErrorList) (*clusterconfig.Release, clusterconfig.Images) {
	defaults := components.DefaultImagesFor(flavor)
	if o.ReleaseInfoData == nil {
		return nil, defaults
	}
	release, err := clusterconfig.ParseRelease(o.ReleaseInfoData, o.ReleaseInfo)
	if err != nil {
		*errs = append(*errs, asFieldErrors(InReleaseInfo, err)...)
		return nil, defaults
	}
	if ic == nil {
		return release, defaults
	}
	images, err := release.Over(defaults, components.PulledImages(flavor, ic.BuiltinPodNetwork()), ic.Architecture())
	if err != nil {
		*errs = append(*errs, installconfig.FieldError{Field: InReleaseInfo, Detail: o.ReleaseInfo + ": " + err.Error()})
		return nil, defaults
	}
	return release, images
}

// asFieldErrors keeps field errors as they are and turns any other error into one naming field.
func asFieldErrors(field string, err error) installconfig.ErrorList {
	switch e := err.(type) {
	case installconfig.ErrorList:
		return e
	case installconfig.FieldError:
		return installconfig.ErrorList{e}
	}
	msg := err.Error()
	if strings.HasPrefix(msg, field+": ") {
		msg = strings.TrimPrefix(msg, field+": ")
	}
	return installconfig.ErrorList{{Field: field, Detail: msg}}
}

// NodeUpdater makes the update a re-render writes for the running node: pkg/renew's, the one update writer, so that
// the node's aio-update applies it as it applies a renewal, chained from the directory's last update.
type NodeUpdater interface {
	// Check is what is wrong with the update the directory holds for the node, before any work: the new one
	// follows it, which is then kept under DIR/updates.
	Check(dir string) installconfig.ErrorList
	// Hooks are the hooks of the settle continuing st with in (renew's marks: leaves whose lifetime is not in's
	// certificate validity are due), nil: none.
	Hooks(st *state.State, in *clusterconfig.Inputs) *SettleHooks
	// Make compares the new render (eng, out) with the node's aio.ign in dir: nil when the node has all of it.
	Make(ctx context.Context, dir string, st *state.State, eng *Settled, out *Output) (*NodeUpdate, error)
}

// NodeUpdate is a re-render's update for the running node.
type NodeUpdate struct {
	// Line is what the summary says of it; ReadAtStart what of it the running node takes only when installed
	// again (a unit, a file read when a service starts: pkg/node ReadAtStart), then refused without InReinstall.
	Line        string
	ReadAtStart []string
	// Fill writes it into the new tree tmp of the directory dir (the directory's last update kept under updates/).
	Fill func(dir, tmp string) error
}

// Render runs the steps and writes the output directory, without an update for a running node (RenderWith). The
// directory is held (outdir.LockDir) from before its state is read until it is replaced, so no other run writes it
// meanwhile; every problem with the inputs, the directory and the saved cluster is reported at once, before any
// work.
func Render(ctx context.Context, o Options) (*Summary, error) { return RenderWith(ctx, o, nil) }

// RenderWith is Render writing, when it continues a cluster and u is not nil, u's update for the running node
// (pkg/renew.Render: the command's and a fleet's renders).
func RenderWith(ctx context.Context, o Options, u NodeUpdater) (*Summary, error) {
	start := time.Now()
	d, err := OpenDir(o.Dir, "render", o.Fresh)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	given := map[string]bool{}
	for _, row := range Inputs {
		given[row.Name] = row.given == nil || row.given(&o) // no given: never saved (dir, fresh)
	}
	o, story := d.withSaved(o)
	o = o.withDefaults()
	o, readErrs := o.readFiles()
	in, err := validate(o, readErrs)
	if err != nil && !asList(err) {
		return nil, err
	}
	// Another cluster's inputs are the cause: said first. The saved inputs' problems with them (the saved node IP
	// or an added worker outside the other cluster's network) follow from it, and go with it: a new cluster there
	// (fresh) or elsewhere has none of the saved inputs.
	errs := d.continuity(o)
	if err != nil {
		verrs := asFieldErrors("", err)
		if len(errs) > 0 {
			verrs = slices.DeleteFunc(verrs, func(e installconfig.FieldError) bool { return isSavedInput(e.Field, given) })
		}
		errs = append(errs, verrs...)
	}
	errs = append(append(errs, d.Problems...), story.problems...)
	if o.ReplaceCluster && !o.Fresh {
		errs = append(errs, installconfig.FieldError{Field: InReplaceCluster, Detail: "only with " + installconfig.Ref(InFresh) + ": it confirms starting a new cluster in a directory that holds one"})
	}
	if o.Fresh && d.Held != nil && !o.ReplaceCluster {
		errs = append(errs, d.Held.refuseFresh(o.Dir))
	}
	if u != nil && d.State != nil && d.Path != "" {
		errs = append(errs, u.Check(d.Path)...)
	} else {
		u = nil
	}
	if len(errs) == 0 {
		errs = CheckSaved(SaveInputs(o, in))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	faultpoint.Hang(ctx, "engine")
	var hooks *SettleHooks
	if u != nil {
		hooks = u.Hooks(d.State, in)
	}
	eng, err := SettleWith(ctx, in, d.State, hooks, SettleOptions{Parallelism: o.Parallelism})
	if err != nil {
		return nil, err
	}
	// aio.ign's validation runs while the output directory is written; aio.ign is written, and the
	// directory replaced, only once it passed.
	out, err := exportValidating(ctx, eng)
	if err != nil {
		return nil, err
	}
	out.State.Inputs = SaveInputs(o, in)
	var upd *NodeUpdate
	if u != nil {
		if upd, err = u.Make(ctx, d.Path, d.State, eng, out); err != nil {
			return nil, err
		}
	}
	var updateLine string
	switch {
	case upd != nil && len(upd.ReadAtStart) > 0 && !o.Reinstall:
		return nil, installconfig.ErrorList{{Field: InReinstall, Detail: fmt.Sprintf(
			"this re-render changes what the running node takes only when it or a service of it starts, which an update cannot apply (aio-update replaces files, but installs no unit or user and restarts no service): %s; the node takes it only when installed again from the new aio.ign: give %s to render it so (no update is written for the node), or render without the change; %s was left as it was",
			strings.Join(upd.ReadAtStart, ", "), installconfig.Ref(InReinstall), o.Dir)}}
	case upd != nil && len(upd.ReadAtStart) > 0:
		updateLine = fmt.Sprintf("none written (%s): install the node again from %s, for %s",
			installconfig.Ref(InReinstall), filepath.Join(o.Dir, "aio.ign"), strings.Join(upd.ReadAtStart, ", "))
		upd = nil
	case upd != nil:
		updateLine = upd.Line
	}
	keep := ""
	if o.Fresh && o.ReplaceCluster {
		keep = d.KeepHeld(time.Now())
	}
	written := time.Now()
	fill := out.Fill
	if upd != nil {
		fill = func(tmp string) error {
			if err := out.Fill(tmp); err != nil {
				return err
			}
			return upd.Fill(d.Path, tmp)
		}
	}
	if err := d.ReplaceWith(ctx, fill); err != nil {
		if verr := out.Validated(); verr != nil {
			return nil, fmt.Errorf("ignition: %w", verr)
		}
		return nil, err
	}
	if keep != "" {
		outdir.Logf("%s", d.Held.Kept(o.Dir, keep))
	}
	out.summarized()
	s := out.Summary
	story.tell(&s, out.State, eng)
	s.NodeUpdate = updateLine
	s.Crypto = FIPSModeLine()
	if w := s.liveWarning(o.Dir, "aio.ign"); w != "" {
		s.Warnings = append(s.Warnings, w)
	}
	for _, wl := range s.WorkerLive {
		if w := wl.Warning(o.Dir); w != "" {
			s.Warnings = append(s.Warnings, w)
		}
	}
	s.WriteTime = time.Since(written)
	s.Elapsed = time.Since(start)
	return &s, nil
}

// isSavedInput says whether a problem's field is an input of the table (or an element of a list input) that the
// options did not give (given, by input name): one taken from the saved cluster.
func isSavedInput(field string, given map[string]bool) bool {
	name, _, _ := strings.Cut(field, "[")
	name, _, _ = strings.Cut(name, ".")
	_, ok := InputNamed(name)
	return ok && !given[name]
}

// asList says whether err is an installconfig.ErrorList (problems with the inputs, reported together).
func asList(err error) bool {
	var list installconfig.ErrorList
	return errors.As(err, &list)
}
