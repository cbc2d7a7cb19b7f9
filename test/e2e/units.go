package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The rendered oneshot units the harness runs as systemd would (no systemd runs in the node's namespaces,
// overrides.go): aio-pod-network.service sets up the node's pod network (issue 37: forwarding, bridge netfilter,
// the routes to the other nodes' pod CIDRs, the egress masquerade) and is ordered Before=kubelet.service
// crio.service, so bootNode runs it before containerd and the kubelet on every boot; `systemctl start|restart` of
// it (a day-2 worker's update) runs it again (standins.go).

// PodNetworkUnit is the rendered unit of the pod network.
const PodNetworkUnit = "aio-pod-network"

// oneshotUnits are the units the systemctl stand-in runs on start and restart.
var oneshotUnits = map[string]bool{PodNetworkUnit: true}

// Unit is what a rendered unit says to run.
type Unit struct {
	Env   []string   // Environment= (KEY=VALUE) and the EnvironmentFile= files' lines, in order
	Pre   [][]string // ExecStartPre, in order
	Start [][]string // ExecStart (a oneshot unit may have several), in order
}

// ReadUnit parses /etc/systemd/system/<name>.service under root (continuation lines joined, systemd quoting).
// It returns an error wrapping os.ErrNotExist when the unit is not rendered.
func ReadUnit(root, name string) (*Unit, error) {
	p := filepath.Join(root, "etc", "systemd", "system", name+".service")
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	u := &Unit{}
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(string(data), "\\\n", " ")))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch strings.TrimSpace(k) {
		case "Environment":
			u.Env = append(u.Env, systemdWords(v)...)
		case "EnvironmentFile":
			f := strings.TrimSpace(v)
			optional := strings.HasPrefix(f, "-")
			b, err := os.ReadFile(filepath.Join(root, strings.TrimPrefix(f, "-")))
			if err != nil && !(optional && errors.Is(err, os.ErrNotExist)) {
				return nil, fmt.Errorf("%s: EnvironmentFile %s: %w", p, f, err)
			}
			for _, l := range strings.Split(string(b), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					u.Env = append(u.Env, l)
				}
			}
		case "ExecStartPre":
			u.Pre = append(u.Pre, systemdWords(strings.TrimLeft(v, "-@+!:")))
		case "ExecStart":
			u.Start = append(u.Start, systemdWords(strings.TrimLeft(v, "-@+!:")))
		}
	}
	if len(u.Start) == 0 {
		return nil, fmt.Errorf("%s has no ExecStart", p)
	}
	return u, nil
}

// RunUnit runs a rendered oneshot unit's commands in order (each bounded by 2 minutes), with its output in
// LogDir/<name>.log, and records in the timeline when it finished. ran is false when the unit is not rendered.
func (n *Node) RunUnit(ctx context.Context, name string) (ran bool, err error) {
	u, err := ReadUnit("/", name)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f, err := openLog(filepath.Join(n.LogDir(), name+".log"))
	if err != nil {
		return false, err
	}
	defer f.Close()
	t0 := time.Now()
	for _, argv := range append(append([][]string{}, u.Pre...), u.Start...) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		cmd := nodeCommand(cctx, u.Env, argv...)
		w := &stampWriter{w: f}
		cmd.Stdout, cmd.Stderr = w, w
		fmt.Fprintf(f, "%s + %s\n", time.Now().Format(stampFormat), strings.Join(argv, " "))
		err := cmd.Run()
		cancel()
		if err != nil {
			return true, fmt.Errorf("%s.service: %s: %w\n%s", name, strings.Join(argv, " "), err, tail(f.Name(), 20))
		}
	}
	n.mu.Lock()
	if n.unitsRan == nil {
		n.unitsRan = map[string]bool{}
	}
	n.unitsRan[name] = true
	n.mu.Unlock()
	n.event(fmt.Sprintf("%s.service done (%.2fs)", name, time.Since(t0).Seconds()))
	n.Logf("%s.service ran in %.2fs (log %s)", name, time.Since(t0).Seconds(), f.Name())
	return true, nil
}

// unitRan says whether a oneshot unit ran to its end in this boot (it is active: RemainAfterExit).
func (n *Node) unitRan(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.unitsRan[name]
}
