package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
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
// the control-plane node. Day 2, `render-static worker` (pkg/renew, AddWorker) adds one to the saved cluster
// (Options.AddedWorkers). Both are inputs the state keeps (state.Inputs.Workers, AddedWorkers), so every later run
// (a re-render, renew, certs) knows them; each run writes DIR/workers/<name>/ from them (WorkersDir).

// WorkersDir holds, in a render directory, one folder per worker: worker.ign (0600: it holds the worker's key)
// and rootfs/ (exactly what it lays down).
const WorkersDir = inventory.WorkersDir

// WorkerIgnition is a worker's Ignition config in its folder.
const WorkerIgnition = "worker.ign"

// InAddedWorkers names the workers `render-static worker` added, in problems about them (their saved inputs).
const InAddedWorkers = "addedWorkers"

// ParseWorkers reads a workers file: a YAML list of workers, each with nodeName and nodeIP (as --node-ip takes
// it), unknown fields refused.
func ParseWorkers(data []byte) ([]state.Worker, error) {
	var ws []state.Worker
	if err := inputfile.DecodeStrict(data, &ws); err != nil {
		return nil, err
	}
	return ws, nil
}

// WorkersData is a list of workers as a workers file holds it (JSON is YAML): the saved list as a run takes it.
func WorkersData(ws []state.Worker) []byte {
	b, _ := json.Marshal(ws) // strings only: never fails
	return b
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
}

func newWorkerCheck(ic *installconfig.InstallConfig, node string, nodeIPs []netip.Addr) *workerCheck {
	c := &workerCheck{ic: ic, node: node, nodeIPs: nodeIPs, names: map[string]string{node: "the control-plane node"}, ips: map[netip.Addr]string{}}
	for _, ip := range nodeIPs {
		c.ips[ip] = "the control-plane node " + node
	}
	return c
}

// worker checks one worker, whose fields problems name base+".nodeName" and base+".nodeIP", and returns it.
func (c *workerCheck) worker(base string, w state.Worker) (clusterconfig.Worker, bool) {
	nameField, ipField := base+".nodeName", base+".nodeIP"
	add := func(field, format string, args ...any) {
		c.errs = append(c.errs, installconfig.FieldError{Field: field, Detail: fmt.Sprintf(format, args...)})
	}
	n := len(c.errs)
	switch msgs := validation.IsDNS1123Subdomain(w.NodeName); {
	case w.NodeName == "":
		add(nameField, "required")
	case len(msgs) > 0:
		add(nameField, "%q is not a valid node name: %s", w.NodeName, strings.Join(msgs, "; "))
	case c.names[w.NodeName] != "":
		add(nameField, "%s is already the name of %s: every node needs a name of its own", w.NodeName, c.names[w.NodeName])
	default:
		c.names[w.NodeName] = c.which(base, w.NodeName)
	}
	ips, err := installconfig.ParseNodeIPsOf(ipField, w.NodeIP)
	if err != nil {
		c.errs = append(c.errs, asFieldErrors(ipField, err)...)
		return clusterconfig.Worker{}, false
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
	return clusterconfig.Worker{Name: w.NodeName, IPs: ips}, len(c.errs) == n
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

// validateWorkers checks the workers of a render: those of the workers file (data, its problems at
// workers[i].<field>), exactly as many as the install-config's compute replicas ask for, and the added ones
// (addedWorkers[i].<field>); every name and IP its own.
func validateWorkers(o Options, ic *installconfig.InstallConfig, nodeIPs []netip.Addr) ([]clusterconfig.Worker, installconfig.ErrorList) {
	var listed []state.Worker
	var errs installconfig.ErrorList
	if o.WorkersData != nil {
		ws, err := ParseWorkers(o.WorkersData)
		if err != nil {
			return nil, installconfig.ErrorList{{Field: InWorkers, Detail: fmt.Sprintf("%s: %v", o.Workers, err)}}
		}
		listed = ws
	}
	if want := ic.ComputeReplicas(); int64(len(listed)) != want {
		noun := "workers"
		if want == 1 {
			noun = "worker"
		}
		detail := fmt.Sprintf("the install-config asks for %d %s (compute replicas; the installer's default pool of %d when compute does not say), but %s",
			want, noun, installconfig.DefaultComputeReplicas, installconfig.Ref(InWorkers))
		switch {
		case o.WorkersData == nil:
			detail += " names none: name each (nodeName, nodeIP), or set compute[0].replicas: 0 for a single node"
		default:
			detail += fmt.Sprintf(" names %d: name each, and add workers to a running cluster with render-static worker", len(listed))
		}
		errs = append(errs, installconfig.FieldError{Field: InWorkers, Detail: detail})
	}
	c := newWorkerCheck(ic, o.NodeName, nodeIPs)
	var out []clusterconfig.Worker
	for i, w := range listed {
		if wk, ok := c.worker(fmt.Sprintf("%s[%d]", InWorkers, i), w); ok {
			out = append(out, wk)
		}
	}
	for i, w := range o.AddedWorkers {
		if wk, ok := c.worker(fmt.Sprintf("%s[%d]", InAddedWorkers, i), w); ok {
			out = append(out, wk)
		}
	}
	return out, append(errs, c.errs...)
}

// WorkerOutput is one worker's files: its tree (rootfs/) and its Ignition config.
type WorkerOutput struct {
	Name     string
	Tree     *export.Tree
	Ignition []byte
}

// workerOutputs builds every worker's tree and Ignition config (validated) from the settled cluster.
func workerOutputs(ctx context.Context, e *Settled) ([]WorkerOutput, error) {
	var out []WorkerOutput
	for _, w := range e.Inputs.Workers {
		tree, err := e.Node.WorkerTree(ctx, w)
		if err != nil {
			return nil, err
		}
		ign, err := export.Ignition(tree, export.IgnitionOptions{SSHAuthorizedKeys: e.Inputs.InstallConfig.SSHKeys()})
		if err != nil {
			return nil, fmt.Errorf("worker %s: ignition: %w", w.Name, err)
		}
		out = append(out, WorkerOutput{Name: w.Name, Tree: tree, Ignition: ign})
	}
	return out, nil
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
		if err := plan.Rootfs(dir+"/rootfs", w.Tree); err != nil {
			return err
		}
	}
	return nil
}

// savedWorkers are the workers as the state keeps them: the workers file's (parsed again: it was validated) and
// the added ones.
func savedWorkers(o Options) (listed, added []state.Worker) {
	if o.WorkersData != nil {
		listed, _ = ParseWorkers(o.WorkersData)
	}
	return listed, slices.Clone(o.AddedWorkers)
}
