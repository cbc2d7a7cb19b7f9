// Command render-static renders an OpenShift install-config, offline, into aio.ign: one Ignition config that
// boots a single machine into an all-in-one control plane of static pods.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/render-static/render-static/internal/startgc"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/conformance"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/pipeline"
)

func main() {
	restartInFIPSMode = execInFIPSMode
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, for tests: 0 on success, 1 on bad input or a failed render.
func run(args []string, stdout, stderr io.Writer) int {
	quietKlog()
	cmd := newRootCommand(stdout)
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.ExecuteContext(ctx); err != nil {
		if errors.As(err, new(pipeline.FIPSModeError)) && restartInFIPSMode != nil {
			// A FIPS cluster's render (fips: true) in a process not in FIPS 140-3 mode: nothing is made or
			// written yet (pipeline.CheckCryptoMode), so the command starts again, as it was started, in that mode.
			if rerr := restartInFIPSMode(); rerr != nil {
				err = fmt.Errorf("%w (starting again in FIPS 140-3 mode: %v)", err, rerr)
			}
		}
		printError(stderr, err)
		return 1
	}
	return 0
}

// restartInFIPSMode, when set (by main, not by tests, which run the command in their own process), replaces the
// process with the command started again in FIPS 140-3 mode; it returns only when it could not.
var restartInFIPSMode func() error

// execInFIPSMode executes this program again with the same arguments and environment plus GODEBUG=fips140=on
// (pipeline.FIPSModeEnv); it returns an error when it cannot, or when GODEBUG already names a fips140 setting
// (say fips140=off: the user's choice, which a new start would keep).
func execInFIPSMode() error {
	env, added := pipeline.FIPSModeEnv(os.Environ())
	if !added {
		return errors.New("GODEBUG already sets fips140")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, env)
}

func printError(w io.Writer, err error) {
	var list installconfig.ErrorList
	if errors.As(err, &list) {
		fmt.Fprintf(w, "error: invalid input (%d problems):\n", len(list))
		for _, e := range list {
			fmt.Fprintf(w, "  %s\n", e.Error())
		}
		return
	}
	fmt.Fprintf(w, "error: %v\n", err)
}

// quietKlog keeps library-go's informational logging out of the CLI's output.
func quietKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

// gcAnnotation marks the commands that make one render (the root command, renew): they keep collection off after
// initialization until they set the heap floor (pipeline.SingleRenderGC).
const gcAnnotation, gcSingleRender = "render-static/gc", "single-render"

func newRootCommand(stdout io.Writer) *cobra.Command {
	o := pipeline.Options{NodeName: pipeline.DefaultNodeName, Dir: "aio", CertValidity: certs.DefaultLeafValidity}
	cmd := &cobra.Command{
		Use:   "render-static --install-config FILE --node-ip IP [flags]",
		Short: "Render an install-config into aio.ign, an all-in-one control plane of static pods",
		Long: `render-static runs the control-plane operators' loops (cert rotation, encryption, static resources,
config observation, resource sync, revision) offline, in a fixed order, to a fixpoint, against fake clients,
then lays out the revision-1 static pods as the operators' installer would and packs everything into one
Ignition config (spec 3.2.0).

Output in --dir: aio.ign (0600), auth/kubeconfig (cluster-admin, 0600), manifests/ (every exported object),
rootfs/ (exactly what aio.ign lays down on the node), trace.txt (which loop wrote which object in which pass),
state/ (SECRET, 0600: every object and key of the cluster). Running again with the same --dir continues from
state/ (same cluster, same keys; the same inputs give a byte-identical aio.ign); --fresh starts a new cluster.
Invalid input exits 1 with every problem listed, and --dir is left untouched.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Collection stays off from the packages' initialization (internal/startgc) until the command sets
		// its own: one render and renew a heap floor (pipeline.SingleRenderGC), the others the runtime's default.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if cmd.Annotations[gcAnnotation] != gcSingleRender {
				startgc.Release()
			}
		},
		Annotations: map[string]string{gcAnnotation: gcSingleRender},
		RunE: func(cmd *cobra.Command, _ []string) error {
			pipeline.SingleRenderGC()
			s, err := pipeline.Render(cmd.Context(), o)
			if err != nil {
				return err
			}
			s.PeakRSSMB = peakRSSMB()
			s.Print(stdout, o.Dir)
			s.PrintWarnings(cmd.ErrOrStderr())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.InstallConfig, "install-config", "", "install-config.yaml to render (required)")
	f.StringVar(&o.NodeIP, "node-ip", "", "the node's IP; for dual stack two comma-separated IPs, primary first (required)")
	f.StringVar(&o.NodeName, "node-name", o.NodeName, "the node's name; aio.ign sets /etc/hostname to it")
	f.StringVar(&o.Dir, "dir", o.Dir, "output directory (replaced atomically)")
	f.DurationVar(&o.CertValidity, "cert-validity", o.CertValidity, "validity of leaf certificates; signers live at least ten years")
	f.StringVar(&o.Images, "images", "", "YAML map of component ("+strings.Join(components.ImageNames(), ", ")+") to image pull spec; unnamed components keep their defaults (the upstream flavor's images: "+strings.Join(components.UpstreamImages(), ", ")+")")
	f.StringVar(&o.Flavor, "flavor", string(clusterconfig.FlavorOpenShift), "static pods to render: openshift (the operators' pods, OpenShift images) or upstream (flag-only pods for the upstream kube-apiserver, kube-controller-manager, kube-scheduler and etcd images); loops, certificates and layout are the same")
	f.BoolVar(&o.Fresh, "fresh", false, "start a new cluster (new keys) even when --dir holds a previous render's state/")
	f.StringVar(&o.InfraID, "infra-id", "", "infrastructure name (default: the one in --dir's state, else <cluster name>-<5 random characters>, as the installer makes it)")
	cmd.AddCommand(newConformanceCommand(stdout))
	cmd.AddCommand(newFleetCommand(stdout))
	cmd.AddCommand(newCertsCommand(stdout))
	cmd.AddCommand(newRenewCommand(stdout))
	cmd.AddCommand(newVersionCommand(stdout))
	setVersionFlag(cmd)
	return cmd
}

func newConformanceCommand(stdout io.Writer) *cobra.Command {
	var o conformance.Options
	var component, images string
	cmd := &cobra.Command{
		Use:   "conformance --dir D --against EXPECTED [--component NAME]",
		Short: "Compare a render with what the real operators produce",
		Long: `conformance compares the static pods, config files and file modes of a render (--dir, the output of
render-static) with an operator-produced tree (--against: pods/, rootfs/, FILES.txt). Revision numbers,
certificate material, image names (through the image map), the infrastructure name and version strings are
normalised (a renewed render is compared at the revision its static pods run); embedded shell scripts are
compared by their exec statements. Every other difference is reported
with its path; documented adaptations are listed apart. Exit 0 only when nothing unexplained remains.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.RenderDir == "" || o.ExpectedDir == "" {
				return fmt.Errorf("--dir and --against are required")
			}
			if component != "" {
				o.Components = []string{component}
			}
			img, err := clusterconfig.LoadImages(images, components.DefaultImages())
			if err != nil {
				return err
			}
			o.Images = img
			r, err := conformance.Compare(o)
			if err != nil {
				return err
			}
			r.Write(stdout)
			if !r.OK() {
				return fmt.Errorf("%d unexplained differences", len(r.Unexplained))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.RenderDir, "dir", "", "a render's output directory")
	f.StringVar(&o.ExpectedDir, "against", "", "an operator-produced tree: pods/, rootfs/, FILES.txt")
	f.StringVar(&component, "component", "", "compare only this component ("+strings.Join(components.Names(), ", ")+")")
	f.StringVar(&images, "images", "", "the --images file the render used")
	return cmd
}
