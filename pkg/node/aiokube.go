package node

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	kubescheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/render-static/render-static/pkg/export"
)

// Bounds of one aiokube run (the unit restarts a failed run at most a few times a day), and its pace.
const (
	APIWaitSeconds = 1800 // first boot pulls every image before the API answers
	// PollSeconds is how often aiokube asks whether the API answers (and tries the namespaces meanwhile): the
	// kubelet's mirror pods wait for their namespaces, so every second the API answers without them counts.
	PollSeconds           = 1
	ApplyAttempts         = 20 // passes over a round of manifests
	RetrySeconds          = 5  // between two passes, and between two looks at the Node and the token secrets
	CRDWaitSeconds        = 120
	RequestTimeoutSeconds = 30
	// BatchSize is how many manifests one client process creates: a process costs a few hundred milliseconds
	// of CPU on a small node, about what creating 50 objects costs the API server.
	BatchSize = 50
)

// builtinGroups are served by kube-apiserver itself; their objects' status belongs to their controllers.
var builtinGroups = map[string]bool{"apiextensions.k8s.io": true, "apiregistration.k8s.io": true}

func builtin(group string) bool {
	return group == "" || builtinGroups[group] || kubescheme.Scheme.IsGroupRegistered(group)
}

// StatusPatches are the merge patches aiokube applies to the status subresource right after creating an object:
// one per custom resource that carries a status (the Infrastructure's topology and API URLs, the Network's
// applied networks, the operator resources' revisions), since creating an object drops its status. Keyed by
// manifest file. A kind whose exported CRD has no status subresource (config.openshift.io Network) gets no patch:
// there the create keeps the status, and a patch of /status would be NotFound.
func StatusPatches(ms []export.Manifest) (map[string][]byte, error) {
	out := map[string][]byte{}
	withoutStatus := kindsWithoutStatusSubresource(ms)
	for _, m := range ms {
		if builtin(m.GVK.Group) || withoutStatus[m.GVK.Group+"/"+m.GVK.Kind] {
			continue
		}
		st, ok := m.Object["status"].(map[string]any)
		if !ok {
			continue
		}
		// What no one set (typed zero values) stays out: the patch then changes only what the render decided.
		raw, err := json.Marshal(st)
		if err != nil {
			return nil, fmt.Errorf("%s: status: %w", m.File, err)
		}
		st = map[string]any{}
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("%s: status: %w", m.File, err)
		}
		if pruneZero(st, func(v any) bool { return v == nil || v == "" || v == false || v == float64(0) }) {
			continue
		}
		b, err := json.Marshal(map[string]any{"status": st})
		if err != nil {
			return nil, fmt.Errorf("%s: status: %w", m.File, err)
		}
		out[m.File] = append(b, '\n')
	}
	return out, nil
}

// kindsWithoutStatusSubresource lists group/kind of every exported CRD none of whose versions has a status
// subresource.
func kindsWithoutStatusSubresource(ms []export.Manifest) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		if m.GVK.Kind != "CustomResourceDefinition" {
			continue
		}
		spec, _ := m.Object["spec"].(map[string]any)
		names, _ := spec["names"].(map[string]any)
		versions, _ := spec["versions"].([]any)
		has := false
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			sub, _ := vm["subresources"].(map[string]any)
			if _, ok := sub["status"]; ok {
				has = true
			}
		}
		if !has {
			out[fmt.Sprintf("%v/%v", spec["group"], names["kind"])] = true
		}
	}
	return out
}

// cleanupPaths are the first-boot inputs aiokube removes once every manifest is created: the manifests, the
// admin kubeconfig (the user has their copy in the render's output directory; nothing on the node uses it after
// the apply) and the status patches. aiokube then disables and removes its unit and script, and its state.
func (o Options) cleanupPaths() []string {
	return []string{o.ManifestsDir, o.AdminKubeconfig, StatusDir}
}

// BootstrapOnly are the node paths only the first boot needs: after a successful aiokube run none of them is left.
func (o Options) BootstrapOnly() []string {
	return append(o.cleanupPaths(), path.Join("/etc/systemd/system", AIOKubeUnit), AIOKubeScript, AIOKubeDir)
}

// cleanupDirs are the directories above the removed paths that aiokube removes when they are left empty,
// deepest first (never a top-level directory such as /opt).
func (o Options) cleanupDirs() []string {
	set := map[string]bool{}
	for _, p := range append(o.cleanupPaths(), AIOKubeDir) {
		for d := path.Dir(p); strings.Count(d, "/") >= 2; d = path.Dir(d) {
			set[d] = true
		}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := strings.Count(out[i], "/"), strings.Count(out[j], "/"); a != b {
			return a > b
		}
		return out[i] < out[j]
	})
	return out
}

// aiokubeEnv is aiokube.sh's configuration, set by aiokube.service. tokens are the exported legacy token secrets
// (legacyTokens) whose live token aiokube copies to the node; labels are what it sets on the Node named node through
// the API (APILabels).
func (o Options) aiokubeEnv(clientImage string, tokens []string, node string, labels []string) map[string]string {
	return map[string]string{
		"AIOKUBE_NODE_NAME":               node,
		"AIOKUBE_NODE_LABELS":             strings.Join(labels, " "),
		"AIOKUBE_MANIFESTS":               o.ManifestsDir,
		"AIOKUBE_KUBECONFIG":              o.AdminKubeconfig,
		"AIOKUBE_STATUS_DIR":              StatusDir,
		"AIOKUBE_STATE_DIR":               StateDir,
		"AIOKUBE_UNIT":                    AIOKubeUnit,
		"AIOKUBE_SCRIPT":                  AIOKubeScript,
		"AIOKUBE_CLEANUP":                 strings.Join(o.cleanupPaths(), " "),
		"AIOKUBE_CLEANUP_DIRS":            strings.Join(o.cleanupDirs(), " "),
		"AIOKUBE_CLIENT_IMAGE":            clientImage,
		"AIOKUBE_API_WAIT_SECONDS":        strconv.Itoa(APIWaitSeconds),
		"AIOKUBE_ATTEMPTS":                strconv.Itoa(ApplyAttempts),
		"AIOKUBE_RETRY_SECONDS":           strconv.Itoa(RetrySeconds),
		"AIOKUBE_POLL_SECONDS":            strconv.Itoa(PollSeconds),
		"AIOKUBE_BATCH":                   strconv.Itoa(BatchSize),
		"AIOKUBE_CRD_WAIT_SECONDS":        strconv.Itoa(CRDWaitSeconds),
		"AIOKUBE_REQUEST_TIMEOUT_SECONDS": strconv.Itoa(RequestTimeoutSeconds),
		"AIOKUBE_LEGACY_TOKENS":           strings.Join(tokens, " "),
		"AIOKUBE_TOKEN_WAIT_SECONDS":      strconv.Itoa(TokenWaitSeconds),
		"AIOKUBE_STATIC_POD_RESOURCES":    export.ResourceDir,
	}
}
