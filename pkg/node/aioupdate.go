package node

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/podnetwork"
)

// The node side of `render-static renew` (pkg/renew): aio.ign installs aio-update (manifests/node/scripts/aio-update.sh)
// and its settings, so that an update made offline (DIR/update) is applied on the running node with one command:
// `aio-update apply <update dir>`, and undone with `aio-update rollback`. It runs only when the user runs it: no
// unit, no timer.

// Bounds of aio-update's waits.
const (
	// UpdatePodWaitSeconds bounds the wait for each component's new static pod (image already on the node: the
	// update changes files, not images) and for /readyz.
	UpdatePodWaitSeconds = 900
	UpdateRetrySeconds   = 5
	UpdateAttempts       = 10
)

// updaterEnv is aio-update's configuration, written to AIOUpdateConfig.
func (n *Node) updaterEnv() map[string]string {
	env := map[string]string{
		"AIO_UPDATE_NODE_NAME":               n.in.NodeName,
		"AIO_UPDATE_KUBECONFIG":              LocalhostKubeconfig,
		"AIO_UPDATE_STATE_DIR":               AIOUpdateStateDir,
		"AIO_UPDATE_STATIC_POD_RESOURCES":    export.ResourceDir,
		"AIO_UPDATE_POD_MANIFESTS":           export.PodManifestDir,
		"AIO_UPDATE_CLIENT_IMAGE":            n.in.Images.Image("tools"),
		"AIO_UPDATE_POD_WAIT_SECONDS":        strconv.Itoa(UpdatePodWaitSeconds),
		"AIO_UPDATE_RETRY_SECONDS":           strconv.Itoa(UpdateRetrySeconds),
		"AIO_UPDATE_ATTEMPTS":                strconv.Itoa(UpdateAttempts),
		"AIO_UPDATE_REQUEST_TIMEOUT_SECONDS": strconv.Itoa(RequestTimeoutSeconds),
	}
	if podnetwork.Enabled(n.in) {
		// A new routes file (a worker added) is installed by running aio-pod-network again.
		env["AIO_UPDATE_POD_NETWORK_ROUTES"] = podnetwork.RoutesPath
		env["AIO_UPDATE_POD_NETWORK_UNIT"] = PodNetworkUnit
	}
	return env
}

// shellAssignments renders variables as shell assignments, sorted, each value single-quoted.
func shellAssignments(env map[string]string) (string, error) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# aio-update's settings, written by render-static (aio.ign).\n")
	for _, k := range keys {
		if strings.ContainsAny(env[k], "'\n") {
			return "", fmt.Errorf("aio-update: %s=%q: a value may not hold a quote or a newline", k, env[k])
		}
		fmt.Fprintf(&b, "%s='%s'\n", k, env[k])
	}
	return b.String(), nil
}

func (n *Node) addUpdater(t *export.Tree) error {
	cfg, err := shellAssignments(n.updaterEnv())
	if err != nil {
		return err
	}
	if err := addProgram(t, AIOUpdateScript, "aio-update.sh"); err != nil {
		return err
	}
	return t.AddFile(AIOUpdateConfig, 0644, []byte(cfg))
}

// ReadAtStart are the node files (and the directories whose files) the node reads only when a service starts or
// at boot, each with who reads it: aio-update replaces an update's files but restarts no service and installs no
// unit (aio-update.sh: only the pod network's unit runs again, for its routes file), so a change of one of them (or
// of a systemd unit, which Ignition installs) reaches a running node only when it is installed again. A re-render
// that changes one is refused unless told (pkg/pipeline, InReinstall). The kubelet's client CA and kubeconfig, the
// pull secret and /etc/hosts are not among them: the kubelet reloads its client CA file
// (k8s.io/apiserver/pkg/server/dynamiccertificates, dynamic_cafile_content.go), CRI-O reads the pull secret at each
// pull, /etc/hosts is read at each lookup, and the kubelet's kubeconfig is renew's own (the kubelet keeps the
// client certificate it rotated and falls back to it only at a start).
func ReadAtStart() map[string]string {
	return map[string]string{
		KubeletConfigPath:             "the kubelet, at its start",
		WorkloadPinningPath:           "the kubelet, at its start",
		CRIODropinPath:                "CRI-O, at its start",
		CRIOWorkloadPinningPath:       "CRI-O, at its start",
		RegistriesConfPath:            "CRI-O, at its start or reload",
		UserCATrustAnchorPath:         "update-ca-trust, at boot",
		EncapsulatedMachineConfigPath: "the first boot",
		"/etc/hostname":               "systemd, at boot",
		export.KeyfileDir:             "NetworkManager, at its start",
		"/etc/systemd/system":         "systemd, at boot",
	}
}
