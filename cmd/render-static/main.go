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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/render-static/render-static/internal/startgc"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/conformance"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/outdir"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/renew"
)

func main() {
	restartInFIPSMode = execInFIPSMode
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, for tests: 0 on success, 1 on bad input or a failed render, 130 or 143 when
// SIGINT or SIGTERM ended it, a command's own code for an exitError (fleet: exitNotInstallable).
func run(args []string, stdout, stderr io.Writer) int {
	quietKlog()
	cmd := newRootCommand(stdout)
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	outdir.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, "render-static: "+format+"\n", a...) }
	if len(args) == 0 {
		// Nothing asked: say how to ask.
		cmd.SetOut(stdout)
		_ = cmd.Usage()
		return 0
	}
	if err := unknownCommand(cmd, args); err != nil {
		printError(stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	var got atomic.Value // the signal that ended the command
	go func() {
		s, ok := <-sig
		if !ok {
			return
		}
		got.Store(s)
		cancel()
		// A command that does not stop promptly (it is waiting on something the context does not reach) is ended:
		// an output directory is never left half-replaced (outdir.Lock.Replace), and the next run removes the
		// temporary tree this one may leave.
		time.AfterFunc(interruptGrace, func() {
			fmt.Fprintf(stderr, "error: interrupted (%v); stopped without waiting for the command to finish\n", s)
			os.Exit(signalExit(s))
		})
	}()
	err := cmd.ExecuteContext(ctx)
	if s, ok := got.Load().(os.Signal); ok {
		fmt.Fprintf(stderr, "error: interrupted (%v); a directory it was writing is as it was before\n", s)
		return signalExit(s)
	}
	if err != nil {
		if errors.As(err, new(pipeline.FIPSModeError)) && restartInFIPSMode != nil {
			// A FIPS cluster's render (fips: true) in a process not in FIPS 140-3 mode: nothing is made or
			// written yet (pipeline.CheckCryptoMode), so the command starts again, as it was started, in that mode.
			if rerr := restartInFIPSMode(); rerr != nil {
				err = fmt.Errorf("%w (starting again in FIPS 140-3 mode: %v)", err, rerr)
			}
		}
		printError(stderr, err)
		if ee := (exitError{}); errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// interruptGrace is how long a command may take to stop after SIGINT or SIGTERM.
const interruptGrace = 10 * time.Second

// signalExit is the shell's exit code of a command a signal ended: 128 + its number.
func signalExit(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}

// unknownCommand refuses a first word that is not a command: the root command takes no arguments, and cobra would
// otherwise print the root's help for "render-static nosuch --help" and exit 0.
func unknownCommand(root *cobra.Command, args []string) error {
	c, rest, err := root.Find(args)
	if err != nil || c != root {
		return nil // a subcommand, or cobra's own error later
	}
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	fs := root.Flags()
	// cobra parses the flags again: a repeatable flag (--network-keyfile) would keep what this parse gave it and
	// get each value twice.
	defer fs.Visit(func(f *pflag.Flag) {
		if s, ok := f.Value.(pflag.SliceValue); ok {
			_ = s.Replace(nil)
		}
		f.Changed = false
	})
	if err := fs.Parse(rest); err != nil {
		return nil // cobra reports bad flags itself
	}
	if fs.NArg() > 0 {
		var names []string
		for _, sub := range root.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return fmt.Errorf("unknown command %q%s: the commands are %s, and a render takes only flags (render-static --help)", fs.Arg(0),
			didYouMean(fs.Arg(0), names, "%q"), strings.Join(names, ", "))
	}
	return nil
}

// didYouMean is " (did you mean X?)" with X the one of known that name most likely misspells, said as format says
// it, or "" when none is near: the install-config's rule (installconfig.Suggest), for the command line.
func didYouMean(name string, known []string, format string) string {
	s := installconfig.Suggest(name, known)
	if s == "" {
		return ""
	}
	return " (did you mean " + fmt.Sprintf(format, s) + "?)"
}

// suggestFlag is every command's flag error function: an unknown flag near one of the command's gets a suggestion.
func suggestFlag(c *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if !errors.As(err, &unknown) || unknown.GetSpecifiedShortnames() != "" {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := didYouMean(unknown.GetSpecifiedName(), names, "--%s"); s != "" {
		return fmt.Errorf("%w%s", err, s)
	}
	return err
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
		fmt.Fprintf(w, "error: invalid input (%s):\n", count(len(list), "problem", "problems"))
		for _, e := range list {
			fmt.Fprintf(w, "  %s\n", e.Error())
		}
		return
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "unknown shorthand flag") || strings.HasPrefix(msg, "unknown command") {
		if !strings.Contains(msg, "--help") && !strings.Contains(msg, "(did you mean ") {
			msg += " (render-static [command] --help lists them)"
		}
	}
	fmt.Fprintf(w, "error: %s\n", msg)
}

// The inputs as this command's flags: the packages below name them by their input names (the input table,
// pipeline.Inputs; installconfig.Ref), and only cmd says them as flags.
var (
	renderFlags = func() map[string]string {
		m := map[string]string{}
		for _, in := range pipeline.Inputs {
			if in.Flag != "" {
				m[in.Name] = "--" + in.Flag
			}
		}
		return m
	}()
	renewFlags = map[string]string{pipeline.InDir: renderFlags[pipeline.InDir], renew.InWithin: "--within", renew.InForce: "--force",
		pipeline.InFresh: "render-static " + renderFlags[pipeline.InFresh]}
	conformanceFlags = map[string]string{"component": "--component", pipeline.InDir: renderFlags[pipeline.InDir]}
)

// addInputFlags makes a flag of every input of the table that has one and that keep takes (nil: all), setting o's
// field, with the row's help and suffix.
func addInputFlags(f *pflag.FlagSet, o *pipeline.Options, keep func(pipeline.Input) bool, suffix string) {
	for _, in := range pipeline.Inputs {
		if in.Flag == "" || keep != nil && !keep(in) {
			continue
		}
		usage := installconfig.Expand(in.Usage, renderFlags) + suffix
		switch p := in.Bind(o).(type) {
		case *string:
			f.StringVar(p, in.Flag, *p, usage)
		case *time.Duration:
			f.Var(durationValue{p}, in.Flag, usage) // days too: 30d

		case *bool:
			f.BoolVar(p, in.Flag, *p, usage)
		case *[]string:
			f.StringArrayVar(p, in.Flag, *p, usage)
		default:
			panic(fmt.Sprintf("input %s: no flag for a %T", in.Name, p))
		}
	}
}

// asFlags is err as a command says it: the inputs it names, and refers to, as the command's flags (names).
func asFlags(err error, names map[string]string) error {
	if err == nil {
		return nil
	}
	var list installconfig.ErrorList
	if errors.As(err, &list) {
		return list.Named(names)
	}
	return &saidError{err: err, msg: installconfig.Expand(err.Error(), names)}
}

// saidError is an error with its message said by a command (asFlags); it unwraps to the error.
type saidError struct {
	err error
	msg string
}

func (e *saidError) Error() string { return e.msg }
func (e *saidError) Unwrap() error { return e.err }

// count is "1 problem", "2 problems".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
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
	o := pipeline.Options{Dir: "aio"}
	cmd := &cobra.Command{
		Use:   "render-static --install-config FILE --node-ip IP [flags]",
		Short: "Render an install-config into aio.ign, an all-in-one control plane of static pods",
		Long: `render-static runs the control-plane operators' loops (cert rotation, encryption, static resources,
config observation, resource sync, revision) offline, in a fixed order, to a fixpoint, against fake clients,
then lays out the revision-1 static pods as the operators' installer would and packs everything into one
Ignition config (spec 3.2.0).

Output in --dir: aio.ign (0600), live.ign (0600: the RHCOS live ISO's config that installs the node with
aio.ign, to embed in the ISO), auth/kubeconfig (cluster-admin, 0600), manifests/ (every exported object),
rootfs/ (exactly what aio.ign lays down on the node), trace.txt (which loop wrote which object in which pass),
state/ (SECRET, directories 0700, files 0600: every object and key of the cluster, with SHA256SUMS), workers/
(workers/<name>/: each worker's worker.ign and live.ign, 0600), update/ and updates/ (node updates made by renew,
worker and re-renders, kept by every later run) and .render-static (the marker: render-static may replace this directory).
Running again with the same --dir continues the cluster in state/ (same keys; the same inputs give a
byte-identical aio.ign), and every input not given is the saved one; a re-render that changes what the installed
node has writes update/ for it, as renew does (one that only a reinstall applies is refused without --reinstall);
an install-config of another cluster is refused; --fresh starts a new cluster (over one only with
--replace-cluster, which keeps the old --dir beside it). One run writes --dir at a time (a lock beside it,
.<dir>.lock), and it is replaced in one step. Invalid input exits 1 with every problem listed, and --dir is left
untouched.`,
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
			s, err := renew.Render(cmd.Context(), o)
			if err != nil {
				return asFlags(err, renderFlags)
			}
			s.NodeUpdate = installconfig.Expand(s.NodeUpdate, renderFlags)
			for i, w := range s.Warnings {
				s.Warnings[i] = installconfig.Expand(w, renderFlags)
			}
			s.PeakRSSMB = peakRSSMB()
			s.Print(stdout, o.Dir)
			s.PrintNextSteps(stdout, o.Dir, func(m string) string { return installconfig.Expand(m, renderFlags) })
			s.PrintWarnings(cmd.ErrOrStderr())
			return nil
		},
	}
	addInputFlags(cmd.Flags(), &o, nil, "")
	cmd.AddCommand(newConformanceCommand(stdout))
	cmd.AddCommand(newFleetCommand(stdout))
	cmd.AddCommand(newCertsCommand(stdout))
	cmd.AddCommand(newRenewCommand(stdout))
	cmd.AddCommand(newWorkerCommand(stdout))
	cmd.AddCommand(newVersionCommand(stdout))
	setVersionFlag(cmd)
	// --help lists only commands that run: "help" is made here, so that unknownCommand finds it (cobra would add it
	// only once the command runs, after unknownCommand refused it), and cobra's "completion" is not offered (its
	// scripts call a hidden command unknownCommand would refuse too).
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetFlagErrorFunc(suggestFlag) // the subcommands' too: cobra asks the parent
	cmd.InitDefaultHelpCmd()
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
			release, err := outdir.ReadLock(o.RenderDir) // read whole, never while a writer exchanges it
			if err != nil {
				return err
			}
			defer release()
			r, err := conformance.Compare(o)
			if err != nil {
				return asFlags(err, conformanceFlags)
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
