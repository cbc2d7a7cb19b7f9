package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/renew"
)

func newRenewCommand(stdout io.Writer) *cobra.Command {
	var o renew.Options
	var within time.Duration
	cmd := &cobra.Command{
		Use:   "renew --dir DIR [--within DURATION | --force]",
		Short: "Renew the certificates of a rendered cluster with the operators' own loops, and make an update for its node",
		Long: `renew continues the cluster saved in --dir (state/, written by the render) and runs its loops again:
library-go's cert-rotation controllers decide what is due (a leaf or signer past 80% of its validity, past its
refresh time or expired; a renewed signer's CA bundle keeps the old and the new one), --within DURATION makes
every leaf certificate that expires within DURATION due now, --force every leaf. Then library-go's revision
controllers make revision N+1 of each static pod whose revisioned inputs changed.

--dir is replaced atomically: state/, aio.ign, manifests/ and rootfs/ hold the renewed cluster (a node provisioned
again gets it), and update/ the update for the running node: update.json (revisions from -> to, the certificates
renewed with old and new not-after, every file with its sha256 and mode), the new revisions' files as the
installer lays them out, the changed cert-directory files, the new static pod manifests and the changed API
objects. renew lists each renewed certificate once, named as "render-static certs" names it. Copy update/ to the
node and run "aio-update apply DIR" there (aio.ign installs aio-update; "aio-update rollback" puts the previous
pods back). Earlier updates are kept in updates/<id>. Nothing due: no new revision,
no new update, and aio.ign stays byte-identical. Bad input exits 1 and leaves --dir untouched.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{gcAnnotation: gcSingleRender},
		RunE: singleRender(stdout, renewFlags, func(ctx context.Context) (printer, error) {
			o.Within = within
			return renew.Run(ctx, o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "aio", "a render's output directory (with its state/)")
	f.Var(durationValue{&within}, "within", "make every leaf certificate that expires within this duration due now (e.g. 720h or 30d)")
	f.BoolVar(&o.Force, "force", false, "make every leaf certificate due now")
	return cmd
}

// printer is a command's report.
type printer interface{ Print(io.Writer) }

// singleRender is the RunE of a command that makes one render from a saved cluster (renew, worker): the heap floor
// of one render, the run, its problems said with the command's flags, its report on stdout.
func singleRender(stdout io.Writer, flags map[string]string, run func(context.Context) (printer, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		pipeline.SingleRenderGC()
		rep, err := run(cmd.Context())
		if err != nil {
			return asFlags(err, flags)
		}
		rep.Print(stdout)
		if w, ok := rep.(interface{ InputWarnings() []string }); ok {
			for _, warning := range w.InputWarnings() {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", installconfig.Expand(warning, flags))
			}
		}
		return nil
	}
}
