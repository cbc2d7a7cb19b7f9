package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/outdir"
)

func newCertsCommand(stdout io.Writer) *cobra.Command {
	var output string
	var within time.Duration
	cmd := &cobra.Command{
		Use:   "certs [--dir DIR | --ignition aio.ign | --root /] [-o table|json] [--expiring-within DURATION]",
		Short: "List every certificate and CA bundle, where it lives, who signed it and when it expires",
		Long: `certs lists every certificate and CA bundle of a render (--dir, default "aio"), of an Ignition config
(--ignition) or of a node (--root /, run as root on the node): where each lives (its Secret or ConfigMap and
every file path), subject, SANs, issuer, key type and size, not-before, not-after and time left, then the CA
bundles and the signer tree. Certificates found only in copies of revisions no static pod runs any more (kept
after renew for a rollback; the static pod manifests say which revision runs) are listed apart, under NOT IN USE;
so are the admin kubeconfig's client certificate (ADMIN KUBECONFIG: renew never renews it) and the CAs of the
install-config's additionalTrustBundle (USER CAs: yours to replace).
With --expiring-within it exits 1 when any certificate in use, one renew renews, expires within that time.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := certsSource(cmd)
			if err != nil {
				return err
			}
			if err := certsSourceExists(cmd, src); err != nil {
				return err
			}
			if output != "table" && output != "json" {
				return fmt.Errorf("-o: %q is not table or json", output)
			}
			if !cmd.Flags().Changed("ignition") && !cmd.Flags().Changed("root") {
				// A render directory is read whole, never while a writer exchanges it (outdir.ReadLock).
				release, err := outdir.ReadLock(src)
				if err != nil {
					return err
				}
				defer release()
			}
			inv, err := inventory.Read(src, time.Now())
			if err != nil {
				return err
			}
			if output == "json" {
				err = inv.WriteJSON(stdout)
			} else {
				err = inv.WriteTable(stdout)
			}
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("expiring-within") {
				// What renew cannot renew never trips it (renew could not clear it): said apart, on stderr.
				if a := inv.AdminKubeconfig; a != nil && a.NotAfter.Before(inv.Now.Add(within)) {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: the admin kubeconfig's client certificate (%s) expires at %s, within %s: render-static renew cannot renew it; after it, use the node's %s\n",
						inventory.AdminKubeconfig, a.NotAfter.Format(time.RFC3339), within, inventory.LocalhostKubeconfig)
				}
				for _, c := range inv.ExpiredUserCAs() {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", inventory.ExpiredUserCA(c))
				}
				if due := inv.ExpiringWithin(within); len(due) > 0 { // certificates in use only
					dir := "DIR"
					if !cmd.Flags().Changed("ignition") && !cmd.Flags().Changed("root") {
						dir = src
					}
					return fmt.Errorf("%d certificates expire within %s, first %s at %s: renew them where you rendered (render-static renew --dir %s --within %s)", len(due), within, due[0].Name, due[0].NotAfter.Format(time.RFC3339), dir, within)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.String("dir", "aio", "a render's output directory")
	f.String("ignition", "", "an Ignition config (aio.ign) instead of --dir")
	f.String("root", "", "a node's root directory (\"/\" on the node) instead of --dir")
	f.StringVarP(&output, "output", "o", "table", "table or json")
	f.Var(durationValue{&within}, "expiring-within", "exit 1 when any certificate in use (one renew renews) expires within this duration (e.g. 720h or 30d)")
	return cmd
}

// certsSourceExists says, when the source src is not there, what happened and what to do: no render where the
// default --dir looks, or no such path where a flag points.
func certsSourceExists(cmd *cobra.Command, src string) error {
	_, err := os.Stat(src)
	if !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or a problem reading it that the reader says
	}
	f := cmd.Flags()
	for _, name := range []string{"ignition", "root", "dir"} {
		if f.Changed(name) {
			return fmt.Errorf("--%s %s: no such file or directory: name a render's output directory (--dir), an Ignition config (--ignition) or a node's root (--root)", name, src)
		}
	}
	return fmt.Errorf("no render in %s (--dir's default; no such directory here): render one first (render-static --install-config FILE --node-ip IP --dir %s), "+
		"or name a render's output directory with --dir, an Ignition config with --ignition or a node's root with --root", src, src)
}

// certsSource is the one of --dir, --ignition and --root given (--dir by default).
func certsSource(cmd *cobra.Command) (string, error) {
	f := cmd.Flags()
	var set []string
	for _, n := range []string{"dir", "ignition", "root"} {
		if f.Changed(n) {
			set = append(set, n)
		}
	}
	if len(set) > 1 {
		return "", fmt.Errorf("--%s and --%s: give only one source", set[0], set[1])
	}
	name := "dir"
	if len(set) == 1 {
		name = set[0]
	}
	v, _ := f.GetString(name)
	if v == "" {
		return "", fmt.Errorf("--%s: empty", name)
	}
	return v, nil
}
