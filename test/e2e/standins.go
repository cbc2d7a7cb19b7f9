package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The node's systemctl and crictl, as far as the node's own scripts use them (aiokube disables itself, aio-update
// recover restarts the kubelet and removes the static pods' sandboxes). No systemd runs in the node's namespaces
// and Debian ships no crictl, so both are stand-ins (overrides.go) that hand their arguments to the harness, which
// does the work on the node it runs: the kubelet is a process of the harness (restarted by PID, with the rendered
// unit's ExecStartPre and ExecStart, as systemd would), pod sandboxes go through the CRI client the harness
// already uses. A request is a file <id>.req in standInDir (the tool, then one argument per line); the answer is
// <id>.out, then <id>.rc written last. The stand-in waits for it at most 180 s.

// standInDir is where the stand-ins leave their requests (on the node's fresh /run).
const standInDir = "/run/e2e-standin"

// standInScript is the stand-in for tool: it asks the harness and prints its answer.
func standInScript(tool string) string {
	return `#!/bin/sh
# e2e stand-in (test/e2e/overrides.go, standins.go): the harness does what ` + tool + ` is asked.
dir=` + standInDir + `
id=$$-$(date +%s%N)
{
	echo ` + tool + `
	for a in "$@"; do printf '%s\n' "$a"; done
} >"$dir/.$id" && mv "$dir/.$id" "$dir/$id.req" || exit 1
i=0
until [ -e "$dir/$id.rc" ]; do
	i=$((i + 1))
	if [ "$i" -gt 1800 ]; then
		echo "` + tool + ` (e2e stand-in): the harness did not answer within 180 s" >&2
		exit 1
	fi
	sleep 0.1
done
cat "$dir/$id.out"
rc=$(cat "$dir/$id.rc")
rm -f "$dir/$id.req" "$dir/$id.out" "$dir/$id.rc"
exit "$rc"
`
}

// serveStandIns answers the stand-ins' requests until the returned stop is called (stop waits for the loop).
func (n *Node) serveStandIns() (stop func(), err error) {
	if err := os.MkdirAll(standInDir, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			reqs, _ := filepath.Glob(filepath.Join(standInDir, "*.req"))
			for _, r := range reqs {
				id := strings.TrimSuffix(r, ".req")
				if _, err := os.Stat(id + ".rc"); err == nil {
					continue
				}
				data, err := os.ReadFile(r)
				if err != nil {
					continue
				}
				args := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
				out, rc := n.standIn(ctx, args[0], args[1:])
				n.Logf("%s (e2e stand-in) %s: exit %d %s", args[0], strings.Join(args[1:], " "), rc, strings.TrimSpace(out))
				os.WriteFile(id+".out", []byte(out), 0o644)
				os.WriteFile(id+".rc.tmp", []byte(fmt.Sprint(rc)), 0o644)
				os.Rename(id+".rc.tmp", id+".rc")
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}

// standIn does one request: its output and exit code.
func (n *Node) standIn(ctx context.Context, tool string, args []string) (string, int) {
	switch tool {
	case "systemctl":
		return n.systemctl(ctx, args)
	case "crictl":
		out, err := n.crictl(ctx, args)
		if err != nil {
			return out + "crictl (e2e stand-in): " + err.Error() + "\n", 1
		}
		return out, 0
	}
	return "unknown stand-in " + tool + "\n", 2
}

// systemctl: stop, start and restart of the kubelet's unit act on the harness's kubelet; start and restart of a
// oneshot unit the harness models (units.go: aio-pod-network) run it; everything else (aiokube disabling its own
// unit) only succeeds, as nothing else runs as a unit here.
func (n *Node) systemctl(ctx context.Context, args []string) (string, int) {
	var units []string
	verb := ""
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if verb == "" {
			verb = a
		} else {
			units = append(units, strings.TrimSuffix(a, ".service"))
		}
	}
	if len(units) == 1 && oneshotUnits[units[0]] && (verb == "start" || verb == "restart") {
		// A oneshot unit with RemainAfterExit (units.go), as systemd treats it: start runs it unless it already
		// ran in this boot (it stays active), restart runs it again.
		if verb == "start" && n.unitRan(units[0]) {
			return "", 0
		}
		if _, err := n.RunUnit(ctx, units[0]); err != nil {
			return err.Error() + "\n", 1
		}
		return "", 0
	}
	if len(units) != 1 || units[0] != "kubelet" {
		return "", 0
	}
	var err error
	switch verb {
	case "stop":
		n.StopKubelet()
	case "start":
		err = n.RestartKubelet(ctx, false)
	case "restart":
		err = n.RestartKubelet(ctx, true)
	default:
		return "systemctl (e2e stand-in): " + verb + " kubelet is not modelled\n", 1
	}
	if err != nil {
		return err.Error() + "\n", 1
	}
	return "", 0
}

// crictl: `pods [--namespace NS] [--name REGEXP] [-q|--quiet]` (sandbox IDs, one a line), `stopp ID...`,
// `rmp [-f|--force] ID...`: what aio-update recover uses.
func (n *Node) crictl(ctx context.Context, args []string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("no command")
	}
	c, err := DialCRI(n.CRISocket)
	if err != nil {
		return "", err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var ids []string
	switch args[0] {
	case "pods":
		var ns, name string
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "--namespace" && i+1 < len(args):
				i++
				ns = args[i]
			case strings.HasPrefix(a, "--namespace="):
				ns = strings.TrimPrefix(a, "--namespace=")
			case a == "--name" && i+1 < len(args):
				i++
				name = args[i]
			case strings.HasPrefix(a, "--name="):
				name = strings.TrimPrefix(a, "--name=")
			case a == "-q" || a == "--quiet":
			default:
				return "", fmt.Errorf("pods: %s is not modelled", a)
			}
		}
		re, err := regexp.Compile(name)
		if err != nil {
			return "", err
		}
		l, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, s := range l.Items {
			if (ns == "" || s.Metadata.Namespace == ns) && re.MatchString(s.Metadata.Name) {
				fmt.Fprintln(&b, s.Id)
			}
		}
		return b.String(), nil
	case "stopp", "rmp":
		for _, a := range args[1:] {
			if a != "-f" && a != "--force" {
				ids = append(ids, a)
			}
		}
	default:
		return "", fmt.Errorf("%s is not modelled", args[0])
	}
	var b strings.Builder
	for _, id := range ids {
		if _, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			return b.String(), fmt.Errorf("stop %s: %w", id, err)
		}
		if args[0] == "rmp" {
			if _, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
				return b.String(), fmt.Errorf("remove %s: %w", id, err)
			}
			fmt.Fprintf(&b, "Removed sandbox %s\n", id)
		} else {
			fmt.Fprintf(&b, "Stopped sandbox %s\n", id)
		}
	}
	return b.String(), nil
}
