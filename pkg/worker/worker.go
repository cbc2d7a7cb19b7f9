// Package worker is the worker command: a worker joins the cluster saved in a render directory.
package worker

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/render-static/render-static/internal/inputfile"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/renew"
	"github.com/render-static/render-static/pkg/state"
)

// AddWorker is the worker command (day 2): a worker joins the cluster saved in a render directory.
// It is a run like renew's, from the state, with one input more: the worker, added to the saved inputs
// (state.Inputs.AddedWorkers) so that every later run knows it. The render gives it, like every worker, its folder
// (DIR/workers/<name>: worker.ign, rootfs/) with a client certificate for system:node:<name> signed by
// kube-controller-manager's CSR signer of the state; and it changes what the running control-plane node must know
// of it: the CSR approver's list of nodes (and, for a kubelet that may not set its role itself, the worker's
// Node). Those changes are an update for the node (DIR/update), applied there by aio-update, as renew's are: the
// approver's list stays a file the render writes from the state, never something the approver learns from the
// cluster (docs/node.md, "Workers").

// WorkerOptions are AddWorker's inputs.
type WorkerOptions struct {
	// Dir is a render's output directory holding its state.
	Dir string
	// NodeName and NodeIP are the worker's name and IPs (as --node-ip: one, or two of different families).
	NodeName, NodeIP string
	// InstallDevice and NetworkKeyfiles (paths) are the worker's live ISO install's inputs, as a render's
	// (pipeline.Options): the disk its live.ign installs it to, and its NetworkManager keyfiles, which its
	// worker.ign and live.ign write; its IPs must be static addresses of one of them.
	InstallDevice   string
	NetworkKeyfiles []string
	// Now is when the update is made (zero: the wall clock).
	Now time.Time
}

// WorkerReport is what AddWorker did: the worker's folder, and the run's report (its update for the node).
type WorkerReport struct {
	Worker string
	Folder string
	*renew.Report
}

// AddWorker adds the worker to the cluster of o.Dir and writes the directory (the worker's folder among the
// others) and its update for the control-plane node atomically. Bad input (no state, a name or IP another node
// has, an IP outside the machine network or not of the control-plane node's families) is an
// installconfig.ErrorList naming the input (pipeline.InNodeName, InNodeIP, InDir); o.Dir is then left untouched.
func AddWorker(ctx context.Context, o WorkerOptions) (*WorkerReport, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	var errs installconfig.ErrorList
	if o.Dir == "" {
		errs = append(errs, installconfig.FieldError{Field: pipeline.InDir, Detail: "required"})
	}
	if o.NodeName == "" {
		errs = append(errs, installconfig.FieldError{Field: pipeline.InNodeName, Detail: "required: the worker's name"})
	}
	if o.NodeIP == "" {
		errs = append(errs, installconfig.FieldError{Field: pipeline.InNodeIP, Detail: "required: the worker's IP (two for dual stack)"})
	}
	add := &state.Worker{NodeName: o.NodeName, NodeIP: o.NodeIP, InstallDevice: o.InstallDevice}
	for _, p := range o.NetworkKeyfiles {
		b, err := inputfile.ReadNoFollow(p)
		if err != nil {
			errs = append(errs, installconfig.FieldError{Field: pipeline.InNetworkKeyfiles, Detail: err.Error()})
			continue
		}
		add.NetworkKeyfiles = append(add.NetworkKeyfiles, state.Keyfile{Name: filepath.Base(p), Contents: string(b), Source: p})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	rep, err := renew.Continue(ctx, renew.Options{Dir: o.Dir, Now: o.Now}, "worker", add)
	if err != nil {
		return nil, err
	}
	return &WorkerReport{Worker: o.NodeName, Folder: filepath.Join(o.Dir, pipeline.WorkersDir, o.NodeName), Report: rep}, nil
}

// Print writes the report: the worker's folder, then what the run changed and its update for the node.
func (r *WorkerReport) Print(w io.Writer) {
	fmt.Fprintf(w, "worker %s added to %s\n", r.Worker, r.Dir)
	fmt.Fprintf(w, "  its Ignition config: %s (boot the worker with it; 0600: it holds the worker's key)\n", filepath.Join(r.Folder, pipeline.WorkerIgnition))
	fmt.Fprintf(w, "  its live ISO config: %s (embed it in the RHCOS live ISO: it installs the worker with worker.ign)\n", filepath.Join(r.Folder, pipeline.WorkerLiveIgnition))
	for _, wl := range r.Workers {
		if wl.Name != r.Worker {
			continue
		}
		wl.Print(w)
		if warning := wl.Warning(r.Dir); warning != "" {
			fmt.Fprintf(w, "  warning: %s\n", warning)
		}
	}
	if r.Update == nil {
		fmt.Fprintf(w, "  the control-plane node needs no update\n")
	} else {
		fmt.Fprintf(w, "  apply %s/%s on the control-plane node (aio-update apply): its CSR approver then knows the worker\n", r.Dir, renew.UpdateDir)
	}
	r.Report.Print(w)
}
