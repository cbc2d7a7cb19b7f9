package main

import (
	"crypto/fips140"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/render-static/render-static/pkg/fleet"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
)

// fleetFlags are the fleet's own inputs as its flags; siteNames how a site's errors refer to the inputs it does
// not have (its own fields keep their names: nodeIP, nodeName, infraID, installConfig).
var fleetFlags, siteNames = func() (fleet, site map[string]string) {
	fleet = map[string]string{"out": "--out", "sites": "--sites"}
	site = map[string]string{pipeline.InDir: "the site's output folder", pipeline.InFresh: "render-static " + renderFlags[pipeline.InFresh] + " on the site's output folder",
		pipeline.InReinstall: "render-static " + renderFlags[pipeline.InReinstall] + " on the site's output folder"}
	for _, in := range pipeline.Inputs {
		if in.Fleet == pipeline.FleetWide {
			fleet[in.Name], site[in.Name] = "--"+in.Flag, "--"+in.Flag
		}
	}
	return fleet, site
}()

// defaultFleetOut is where a fleet renders when --out is not given.
const defaultFleetOut = "sites-out"

// siteFieldsHelp lists a site's fields, one a line: the input table's per-site inputs (the install-config aside:
// site.yaml's folder holds it), each with the render's flag it stands for.
func siteFieldsHelp() string {
	var b strings.Builder
	for _, in := range pipeline.Inputs {
		if in.Fleet != pipeline.PerSite || in.Name == pipeline.InInstallConfig {
			continue
		}
		note := ""
		if _, list := in.Bind(&pipeline.Options{}).(*[]string); list {
			note = " (a list of paths relative to site.yaml's folder, or to the list)"
		}
		fmt.Fprintf(&b, "  %-16s as %s%s\n", in.Name, renderFlags[in.Name], note)
	}
	return b.String()
}

func newFleetCommand(stdout io.Writer) *cobra.Command {
	var o fleet.Options
	var sites, shard, output string
	cmd := &cobra.Command{
		Use:   "fleet --sites DIR|LIST [--out DIR] [--jobs N] [--shard i/n] [-o table|json]",
		Short: "Render many sites, one output folder per site",
		Long: `fleet renders every site of --sites into --out/<site>/ (default --out: ` + defaultFleetOut + `; each folder exactly
what a single render writes to --dir), --jobs sites at a time.

--sites is a directory with one folder per site, each holding install-config.yaml and site.yaml, or a YAML list
of sites. A site's own inputs are these fields of its site.yaml (or of its entry in the list), each as the
render's flag of the same input:
` + siteFieldsHelp() + `A list's entry also has name (the site's folder under --out) and installConfig (relative to the list):
  - name: edge-1
    installConfig: edge-1/install-config.yaml
    nodeIP: 192.168.10.5
    nodeName: edge-1                            # optional (default master-0)

--shard i/n renders only shard i (from 0) of n: the k-th site by name belongs to shard k mod n, so n
processes (e.g. a Kubernetes Indexed Job) render every site exactly once.

A site that fails is reported with its field errors and leaves its folder untouched; the others still finish.
A table ends the run (site, seconds, aio.ign size, live.ign's size in the live ISO's embed area and whether it
fits, earliest expiry among the certificates renew renews, status); --output json gives it as one JSON object
for a hub (docs/fleet.md lists its fields).

Exit codes: 0 every site rendered and is installable; 1 a site failed (or bad input); 3 every site rendered,
but some site's live.ign does not fit the live ISO's embed area (status NOT INSTALLABLE: boot PXE or serve
aio.ign over HTTP, docs/install.md).`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// What applies to every site is checked once, before any site: every problem at once.
			var errs installconfig.ErrorList
			add := func(field string, err error) {
				errs = append(errs, installconfig.FieldError{Field: field, Detail: strings.TrimPrefix(err.Error(), field+": ")})
			}
			if sites == "" {
				add("--sites", errors.New("required"))
			}
			if o.Out == "" {
				add("--out", errors.New("required"))
			}
			sh, err := fleet.ParseShard(shard)
			if err != nil {
				add("--shard", err)
			}
			o.Shard = sh
			if cmd.Flags().Changed("jobs") && o.Jobs < 1 {
				add("--jobs", fmt.Errorf("%d: at least one site must render at a time (leave it out for one per core)", o.Jobs))
			}
			// The inputs every site shares: checked once (the input table's fleet-wide rows), their files read once.
			common, cerrs := pipeline.ReadFleetWide(o.Common)
			errs = append(errs, cerrs.Named(fleetFlags)...)
			if output != "table" && output != "json" {
				add("--output", fmt.Errorf("%q is not table or json", output))
			}
			o.Common = common
			var list []fleet.Site
			if sites != "" {
				if list, err = fleet.Load(sites); err != nil {
					add("--sites", err)
				}
			}
			if len(errs) > 0 {
				return errs
			}
			if !fips140.Enabled() && fleet.AnyFIPS(list) {
				return pipeline.FIPSModeError{} // run starts the command again in FIPS 140-3 mode
			}
			created, err := fleet.EnsureOut(o.Out)
			if err != nil {
				return asFlags(err, fleetFlags)
			}
			o.Names = siteNames
			errw := cmd.ErrOrStderr()
			o.Progress = fleet.NewProgress(errw, isTerminal(errw))
			r := fleet.Run(cmd.Context(), list, o)
			if output == "json" {
				if err := r.WriteJSON(stdout); err != nil {
					return err
				}
			} else {
				r.WriteTable(stdout)
			}
			r.WriteWarnings(errw)
			if created {
				_ = os.Remove(o.Out) // only when empty: no site rendered
			}
			if n := r.Failed(); n > 0 {
				return fmt.Errorf("%d of %s failed", n, count(len(r.Results), "site", "sites"))
			}
			if sites := r.NotInstallable(); len(sites) > 0 {
				return exitError{code: exitNotInstallable, err: fmt.Errorf("%d of %s rendered but cannot be installed from the live ISO: live.ign does not fit its embed area (%s; each site's warning above says by how much); boot those sites' PXE images (coreos-installer pxe ignition wrap) or serve their aio.ign over HTTP (docs/install.md, \"When live.ign does not fit\")",
					len(sites), count(len(r.Results), "site", "sites"), strings.Join(sites, ", "))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sites, "sites", "", "a directory of site folders (install-config.yaml + site.yaml) or a YAML list of sites (required)")
	f.StringVar(&o.Out, "out", defaultFleetOut, "output directory: one folder per site, each replaced atomically")
	f.IntVar(&o.Jobs, "jobs", 0, "sites rendered at once (default: the number of cores); memory grows with it, not with the number of sites")
	f.StringVarP(&output, "output", "o", "table", "table or json (one object: every site's fields, docs/fleet.md)")
	f.StringVar(&shard, "shard", "", "render only shard i of n (i from 0), e.g. 2/8; the partition depends only on the site names")
	addInputFlags(f, &o.Common, func(in pipeline.Input) bool { return in.Fleet == pipeline.FleetWide }, "; for every site")
	return cmd
}

// isTerminal reports whether w is a terminal (the progress bar is redrawn in place only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// exitNotInstallable is fleet's exit code when every site rendered but some cannot be installed from the live ISO
// (live.ign does not fit its embed area).
const exitNotInstallable = 3

// exitError is an error that ends the command with its own exit code (run prints it as any other).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }
