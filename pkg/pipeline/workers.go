package pipeline

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/render-static/render-static/internal/inputfile"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/state"
)

// Workers (seed 004): worker nodes beside the control-plane node. Day 1, the install-config's compute replicas ask
// for N of them and the workers file (InWorkers) names each: its node name and IPs, as a fleet's site file names
// the control-plane node, and its own live ISO install (installDevice, networkKeyfiles), as the agent installer's
// hosts list gives each host its rootDeviceHints and networkConfig. Day 2, `render-static worker` (pkg/worker, AddWorker) adds one to the saved cluster
// (Options.AddedWorkers). Both are inputs the state keeps (state.Inputs.Workers, AddedWorkers), so every later run
// (a re-render, renew, certs) knows them; each run writes DIR/workers/<name>/ from them (WorkersDir).

// WorkersDir holds, in a render directory, one folder per worker: worker.ign (0600: it holds the worker's key),
// live.ign (0600: it carries worker.ign) and rootfs/ (exactly what worker.ign lays down).
const WorkersDir = inventory.WorkersDir

// WorkerIgnition is a worker's Ignition config in its folder; WorkerLiveIgnition its live ISO's config, which
// installs it with worker.ign.
const (
	WorkerIgnition     = "worker.ign"
	WorkerLiveIgnition = "live.ign"
)

// workerEntry is one worker of a workers file: its node name, its IPs (as --node-ip takes them), and its live ISO
// install's inputs as the agent installer's hosts list gives each host its own rootDeviceHints and networkConfig:
// the disk its live.ign installs it to, and the paths of its NetworkManager keyfiles (relative to the workers
// file's folder, or absolute).
type workerEntry struct {
	NodeName        string   `yaml:"nodeName"`
	NodeIP          string   `yaml:"nodeIP"`
	InstallDevice   string   `yaml:"installDevice"`
	NetworkKeyfiles []string `yaml:"networkKeyfiles"`
}

// readWorkersFile reads a workers file when one was given (data not nil; file names it, and its folder is where
// relative keyfile paths are): a YAML list of workers (workerEntry), unknown fields refused, each worker's keyfiles
// read (inputfile.ReadNoFollow: a symlink is refused). A file that does not parse is a problem of InWorkers; a keyfile that cannot be read one of
// its worker's (workers[i].networkKeyfiles), and the worker is returned without it.
func readWorkersFile(file string, data []byte) ([]state.Worker, installconfig.ErrorList) {
	if data == nil {
		return nil, nil
	}
	var entries []workerEntry
	if err := inputfile.DecodeStrict(data, &entries); err != nil {
		return nil, installconfig.ErrorList{{Field: InWorkers, Detail: fmt.Sprintf("%s: %v", file, err)}}
	}
	var errs installconfig.ErrorList
	ws := make([]state.Worker, 0, len(entries))
	for i, e := range entries {
		w := state.Worker{NodeName: e.NodeName, NodeIP: e.NodeIP, InstallDevice: e.InstallDevice}
		for _, p := range e.NetworkKeyfiles {
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(file), p)
			}
			b, err := inputfile.ReadNoFollow(p)
			if err != nil {
				errs = append(errs, installconfig.FieldError{Field: fmt.Sprintf("%s[%d].%s", InWorkers, i, InNetworkKeyfiles), Detail: err.Error()})
				continue
			}
			w.NetworkKeyfiles = append(w.NetworkKeyfiles, state.Keyfile{Name: filepath.Base(p), Contents: string(b), Source: p})
		}
		ws = append(ws, w)
	}
	return ws, errs
}

// SavedWorkers are saved workers (state.Inputs.Workers, AddedWorkers) as a run takes them again: their keyfiles
// named in messages by where they are saved (where, e.g. "state/render.json inputs.workers", [i].networkKeyfiles[j]).
func SavedWorkers(where string, ws []state.Worker) []state.Worker {
	if ws == nil {
		return nil
	}
	out := make([]state.Worker, len(ws))
	for i, w := range ws {
		w.NetworkKeyfiles = slices.Clone(w.NetworkKeyfiles)
		for j := range w.NetworkKeyfiles {
			k := &w.NetworkKeyfiles[j]
			k.Source = fmt.Sprintf("%s[%d].%s[%d] (%s)", where, i, InNetworkKeyfiles, j, k.Name)
		}
		out[i] = w
	}
	return out
}

// workerCheck is what a worker is checked against: the install-config, the control-plane node, and the workers
// before it.
type workerCheck struct {
	ic      *installconfig.InstallConfig
	node    string
	nodeIPs []netip.Addr
	names   map[string]string     // node name -> which node has it ("the control-plane node", "workers[0]")
	ips     map[netip.Addr]string // IP -> which node has it
	errs    installconfig.ErrorList
	warns   installconfig.ErrorList // what is accepted but looks like a mistake (readKeyfiles)
}

func newWorkerCheck(ic *installconfig.InstallConfig, node string, nodeIPs []netip.Addr) *workerCheck {
	c := &workerCheck{ic: ic, node: node, nodeIPs: nodeIPs, names: map[string]string{node: "the control-plane node"}, ips: map[netip.Addr]string{}}
	for _, ip := range nodeIPs {
		c.ips[ip] = "the control-plane node " + node
	}
	return c
}

// worker checks one worker, whose fields problems name base+".nodeName", ".nodeIP", ".installDevice" and
// ".networkKeyfiles" (the live ISO install's inputs, checked as the control-plane node's: live.go), and returns it.
// prior are the problems found before (reading its keyfiles): a keyfile that could not be read is not checked
// against the worker's IPs.
func (c *workerCheck) worker(base string, w state.Worker, prior installconfig.ErrorList) (clusterconfig.Worker, bool) {
	nameField, ipField := base+".nodeName", base+".nodeIP"
	deviceField, keyfilesField := base+"."+InInstallDevice, base+"."+InNetworkKeyfiles
	add := func(field, format string, args ...any) {
		c.errs = append(c.errs, installconfig.FieldError{Field: field, Detail: fmt.Sprintf(format, args...)})
	}
	n := len(c.errs)
	switch msgs := validation.IsDNS1123Subdomain(w.NodeName); {
	case w.NodeName == "":
		add(nameField, "required")
	case len(msgs) > 0:
		add(nameField, "%q is not a valid node name: %s", w.NodeName, strings.Join(msgs, "; "))
	case checkNodeNameFits(w.NodeName) != "":
		add(nameField, "%s", checkNodeNameFits(w.NodeName))
	case c.names[w.NodeName] != "":
		add(nameField, "%s is already the name of %s: every node needs a name of its own", w.NodeName, c.names[w.NodeName])
	default:
		c.names[w.NodeName] = c.which(base, w.NodeName)
	}
	if w.InstallDevice != "" {
		if err := checkInstallDevice(w.InstallDevice); err != nil {
			add(deviceField, "%v", err)
		}
	}
	ips, err := installconfig.ParseNodeIPsOf(ipField, w.NodeIP)
	if err != nil {
		c.errs = append(c.errs, asFieldErrors(ipField, err)...)
		return clusterconfig.Worker{}, false
	}
	var keyfiles []clusterconfig.Keyfile
	if !prior.Has(keyfilesField) {
		given := make([]clusterconfig.Keyfile, len(w.NetworkKeyfiles))
		for i, k := range w.NetworkKeyfiles {
			given[i] = clusterconfig.Keyfile{Name: k.Name, Source: k.Source, Contents: []byte(k.Contents)}
		}
		var kerrs, kwarns installconfig.ErrorList
		keyfiles, kerrs, kwarns = readKeyfiles(keyfilesField, ipField, given, ips, c.ic.MachineCIDRs())
		c.errs = append(c.errs, kerrs...)
		c.warns = append(c.warns, kwarns...)
	}
	placed := c.ic.CheckNodeIPs(ipField, ips)
	c.errs = append(c.errs, placed...)
	if len(placed) == 0 && len(c.nodeIPs) > 0 && (len(ips) != len(c.nodeIPs) || ips[0].Is6() != c.nodeIPs[0].Is6()) {
		add(ipField, "%s: a worker has the control-plane node's IP families, primary first (%s), so that the cluster reaches it on each",
			w.NodeIP, joinIPs(c.nodeIPs))
	}
	for _, ip := range ips {
		if o := c.ips[ip]; o != "" {
			add(ipField, "%s is already the IP of %s: every node needs addresses of its own", ip, o)
			continue
		}
		c.ips[ip] = c.which(base, w.NodeName)
	}
	return clusterconfig.Worker{Name: w.NodeName, IPs: ips, InstallDevice: w.InstallDevice, NetworkKeyfiles: keyfiles}, len(c.errs) == n
}

// which names a worker in problems about another node: by its name and where it comes from.
func (c *workerCheck) which(base, name string) string {
	switch {
	case name == "":
		return base
	case strings.HasPrefix(base, InAddedWorkers):
		return "worker " + name + " (added by render-static worker)"
	}
	return "worker " + name + " (" + base + ")"
}

func joinIPs(ips []netip.Addr) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, ",")
}

// validateWorkers checks the workers of a render: those of the workers file (o.WorkerList, its problems at
// workers[i].<field>), exactly as many as the install-config's compute replicas ask for, and the added ones
// (addedWorkers[i].<field>); every name and IP its own. prior are the problems found reading the inputs. The
// warnings are those of the workers' keyfiles (readKeyfiles).
func validateWorkers(o Options, ic *installconfig.InstallConfig, nodeIPs []netip.Addr, prior installconfig.ErrorList) ([]clusterconfig.Worker, installconfig.ErrorList, installconfig.ErrorList) {
	listed := o.WorkerList
	var errs installconfig.ErrorList
	if want := ic.ComputeReplicas(); int64(len(listed)) != want {
		noun := "workers"
		if want == 1 {
			noun = "worker"
		}
		detail := fmt.Sprintf("the install-config asks for %d %s (compute replicas; the installer's default pool of %d when compute does not say), but %s",
			want, noun, installconfig.DefaultComputeReplicas, installconfig.Ref(InWorkers))
		switch {
		case listed == nil:
			detail += " names none: name each (nodeName, nodeIP), or set compute[0].replicas: 0 for a single node"
		default:
			detail += fmt.Sprintf(" names %d: name each, and add workers to a running cluster with render-static worker", len(listed))
		}
		errs = append(errs, installconfig.FieldError{Field: InWorkers, Detail: detail})
	}
	c := newWorkerCheck(ic, o.NodeName, nodeIPs)
	var out []clusterconfig.Worker
	for i, w := range listed {
		if wk, ok := c.worker(fmt.Sprintf("%s[%d]", InWorkers, i), w, prior); ok {
			out = append(out, wk)
		}
	}
	for i, w := range o.AddedWorkers {
		if wk, ok := c.worker(fmt.Sprintf("%s[%d]", InAddedWorkers, i), w, prior); ok {
			out = append(out, wk)
		}
	}
	if n := len(o.AddedWorkers); n > 0 {
		// The render allocates every node's pod CIDR (installconfig.PodCIDRs): a worker added beyond the first
		// cluster network's room is refused here, before anything is written, as the install-config's own room
		// rule refuses day-1 workers.
		whose := fmt.Sprintf("the control-plane node, %d day-1 and %d added", len(listed), n)
		errs = append(errs, ic.CheckNodeRoom(int64(1+len(listed)+n), whose+" workers")...)
	}
	return out, append(errs, c.errs...), c.warns
}

// WorkerOutput is one worker's files: its tree (rootfs/), its Ignition config, and its live.ign (the live ISO's
// config that installs it with worker.ign, as the control-plane node's live.ign installs it with aio.ign: live.go).
type WorkerOutput struct {
	Name     string
	Tree     *export.Tree
	Ignition []byte
	Live     []byte
	// embed is live.ign's size in the live ISO's embed area, measured while the output is made (nil once in the
	// summary: Output.workersEmbedded).
	embed *future[LiveEmbed]
}

// WorkerLive is what the summary says of a worker's live.ign: as of the control-plane node's (LiveInstall).
type WorkerLive struct {
	Name string
	LiveInstall
}

// workerOutputs builds every worker's tree, Ignition config (validated) and live.ign from the settled cluster,
// and starts measuring each live.ign's embed size (taken from the state when that live.ign is the one measured
// before: measureLive).
func workerOutputs(ctx context.Context, e *Settled) ([]WorkerOutput, error) {
	var out []WorkerOutput
	ssh := e.Inputs.InstallConfig.SSHKeys()
	// One xz per core at most, however many workers (a worker's live.ign is small: milliseconds each).
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, w := range e.Inputs.Workers {
		tree, err := e.Node.WorkerTree(ctx, w)
		if err != nil {
			return nil, err
		}
		// The installed worker keeps its static network: worker.ign lays its keyfiles as aio.ign lays the
		// control-plane node's.
		if err := addKeyfiles(tree, w.NetworkKeyfiles); err != nil {
			return nil, fmt.Errorf("worker %s: %w", w.Name, err)
		}
		ign, err := export.Ignition(tree, export.IgnitionOptions{SSHAuthorizedKeys: ssh})
		if err != nil {
			return nil, fmt.Errorf("worker %s: ignition: %w", w.Name, err)
		}
		live, err := export.LiveIgnition(ign, export.LiveOptions{Carries: WorkerIgnition, InstallDevice: w.InstallDevice, Keyfiles: exportKeyfiles(w.NetworkKeyfiles),
			SSHAuthorizedKeys: ssh})
		if err != nil {
			return nil, fmt.Errorf("worker %s: live.ign: %w", w.Name, err)
		}
		var earlier *state.LiveEmbed
		if e.From != nil {
			earlier = e.From.WorkerLiveEmbeds[w.Name]
		}
		embed := goFuture(func() (LiveEmbed, error) {
			slots <- struct{}{}
			defer func() { <-slots }()
			return measureLive(ctx, live, earlier), nil
		})
		out = append(out, WorkerOutput{Name: w.Name, Tree: tree, Ignition: ign, Live: live, embed: embed})
	}
	return out, nil
}

// workerLives are the summary's workers' live.ign, their embed sizes not measured yet (workersEmbedded).
func workerLives(in *clusterconfig.Inputs, ws []WorkerOutput) []WorkerLive {
	var out []WorkerLive
	for i, w := range in.Workers {
		wl := WorkerLive{Name: w.Name, LiveInstall: LiveInstall{LiveBytes: len(ws[i].Live), InstallDevice: w.InstallDevice}}
		for _, k := range w.NetworkKeyfiles {
			wl.Keyfiles = append(wl.Keyfiles, k.Name)
		}
		out = append(out, wl)
	}
	return out
}

// workersEmbedded waits for the workers' live.ign embed sizes and puts them into Summary and State (which keeps
// them for the next run, by worker).
func (o *Output) workersEmbedded() {
	for i := range o.Workers {
		w := &o.Workers[i]
		if w.embed == nil {
			continue
		}
		e, _ := w.embed.Get()
		w.embed = nil
		o.Summary.XZTime += e.xzTime
		e.xzTime = 0
		if i < len(o.Summary.WorkerLive) {
			o.Summary.WorkerLive[i].LiveEmbed = e
		}
		if o.State != nil && e.Saved != nil {
			if o.State.WorkerLiveEmbeds == nil {
				o.State.WorkerLiveEmbeds = map[string]*state.LiveEmbed{}
			}
			o.State.WorkerLiveEmbeds[w.Name] = e.Saved
		}
	}
}

// Print writes the worker's live.ign lines of a summary.
func (w WorkerLive) Print(out io.Writer) {
	if lines := w.liveLines(); len(lines) == 2 {
		fmt.Fprintf(out, "  %s live.ign: %s\n", w.Name, lines[0])
		fmt.Fprintf(out, "  %s install:  %s\n", w.Name, lines[1])
	}
}

// Warning is the warning the worker's live.ign (in the render directory dir) gives when it does not fit the live
// ISO's embed area, as the control-plane node's (LiveInstall.liveWarning).
func (w WorkerLive) Warning(dir string) string {
	return w.liveWarning(filepath.Join(dir, WorkersDir, w.Name), WorkerIgnition)
}

// planWorkers adds the workers' folders to the output's plan (WorkersDir).
func planWorkers(plan *export.Plan, ws []WorkerOutput) error {
	if len(ws) > 0 {
		plan.Dir(WorkersDir, 0o755)
	}
	for _, w := range ws {
		dir := WorkersDir + "/" + w.Name
		plan.Dir(dir, 0o700)
		plan.File(dir+"/"+WorkerIgnition, 0600, w.Ignition)
		// 0600 as worker.ign, which it carries.
		plan.File(dir+"/"+WorkerLiveIgnition, 0600, w.Live)
		if err := plan.Rootfs(dir+"/rootfs", w.Tree); err != nil {
			return err
		}
	}
	return nil
}
