package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/worker"
)

// workerFlags are the worker command's inputs as its flags.
var workerFlags = map[string]string{pipeline.InDir: renderFlags[pipeline.InDir], pipeline.InNodeName: renderFlags[pipeline.InNodeName],
	pipeline.InNodeIP: renderFlags[pipeline.InNodeIP], pipeline.InFresh: "render-static " + renderFlags[pipeline.InFresh],
	pipeline.InWorkers: "render-static " + renderFlags[pipeline.InWorkers], pipeline.InInstallDevice: renderFlags[pipeline.InInstallDevice],
	pipeline.InNetworkKeyfiles: renderFlags[pipeline.InNetworkKeyfiles]}

func newWorkerCommand(stdout io.Writer) *cobra.Command {
	var o worker.WorkerOptions
	cmd := &cobra.Command{
		Use:   "worker --dir DIR --node-name NAME --node-ip IP[,IP] [--install-device DEV] [--network-keyfile FILE]...",
		Short: "Add a worker node to a rendered cluster: its worker.ign and live.ign, and an update for the control-plane node",
		Long: `worker continues the cluster saved in --dir (state/) with one worker more (a day-2 worker) and writes
--dir/workers/NAME/worker.ign (0600: it holds the worker's key) and rootfs/ (what it lays down): the kubelet,
configured as the control-plane node's, with the worker role and a client certificate for system:node:NAME signed
at render time by kube-controller-manager's CSR signer, so that it joins with no token and no approval; CRI-O
with the pull secret, mirrors and trust bundle; /etc/hosts sending api and api-int to the control-plane node.
Beside it, --dir/workers/NAME/live.ign (0600) is the RHCOS live ISO's config that installs the worker with
worker.ign to --install-device, as the render's live.ign installs the control-plane node; --network-keyfile
gives the worker its NetworkManager keyfiles (written by worker.ign and live.ign; --node-ip must be a static
address of one of them). The summary says what live.ign takes in the live ISO's embed area.
The worker is kept in state/ (every later render, renew and certs knows it). The running control-plane node must
learn of it: --dir/update holds the update (its CSR approver's list of nodes, which then approves the worker's
serving certificate and client renewals, and nothing else of it), to apply there with "aio-update apply DIR"
before or after the worker boots. A name or IP another node has, an IP outside the machine network or not of the
control-plane node's families, a --dir without state, an --install-device not under /dev, a --network-keyfile
NetworkManager refuses or without --node-ip as a static address: exit 1, --dir untouched.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{gcAnnotation: gcSingleRender},
		RunE: singleRender(stdout, workerFlags, func(ctx context.Context) (printer, error) {
			return worker.AddWorker(ctx, o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "aio", "a render's output directory (with its state/)")
	f.StringVar(&o.NodeName, "node-name", "", "the worker's name; worker.ign sets /etc/hostname to it (required)")
	f.StringVar(&o.NodeIP, "node-ip", "", "the worker's IP in the machine network; for dual stack two comma-separated IPs, primary first (required)")
	f.StringVar(&o.InstallDevice, "install-device", "", "the disk the worker's live.ign installs it to, an absolute path under /dev (e.g. /dev/sda, /dev/disk/by-id/...; default: none: the live ISO then needs coreos.inst.install_dev=/dev/<disk> on its kernel command line)")
	f.StringArrayVar(&o.NetworkKeyfiles, "network-keyfile", nil, "a NetworkManager keyfile (NAME.nmconnection) for the worker, written 0600 under /etc/NetworkManager/system-connections by its worker.ign and live.ign (repeatable); NetworkManager's nmcli (1.42 or later) must be on PATH to read it, and every --node-ip must be one of its static addresses")
	return cmd
}
