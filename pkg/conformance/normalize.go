package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// normalizer rewrites what must differ between two renders into placeholders, on both sides.
type normalizer struct {
	// images: pull spec → "<image:component>", per side.
	renderImages map[string]string
	renderSpecs  []string
	// infra IDs of each side → "<infra-id>".
	expectedInfraID, renderInfraID string
}

var (
	expectedImageRE = regexp.MustCompile(`quay\.io/openshift/([a-z0-9-]+):refs`)
	scriptSummaryRE = regexp.MustCompile(`(?s)^<shell script, \d+ lines; body omitted \(write your own\)\. exec statements: (.*)>$`)
	pemRE           = regexp.MustCompile(`(?s)-----BEGIN [A-Z ]+-----.*?-----END [A-Z ]+-----\n?`)
	revisionDirRE   = regexp.MustCompile(`-pod-\d+\b`)
	revisionFlagRE  = regexp.MustCompile(`^--revision=\d+$`)
	clusterNameRE   = regexp.MustCompile(`cluster-name["']?\s*[=:]\s*\[?\s*["']?([a-z0-9][a-z0-9-]*)`)
	spacesRE        = regexp.MustCompile(`\s+`)
)

func newNormalizer(o Options) *normalizer {
	n := &normalizer{renderImages: map[string]string{}}
	for comp, spec := range o.Images {
		n.renderImages[spec] = "<image:" + comp + ">"
		n.renderSpecs = append(n.renderSpecs, spec)
	}
	// Longest first, so that a pull spec that contains another is replaced whole.
	sort.Slice(n.renderSpecs, func(i, j int) bool { return len(n.renderSpecs[i]) > len(n.renderSpecs[j]) })
	n.expectedInfraID = findInfraID(o.ExpectedDir)
	n.renderInfraID = renderInfraID(o.RenderDir)
	return n
}

// findInfraID looks for kube-controller-manager's cluster name (the infrastructure name) in an expected tree.
func findInfraID(dir string) string {
	var found string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != "" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if m := clusterNameRE.FindSubmatch(b); m != nil {
			found = string(m[1])
		}
		return nil
	})
	return found
}

// renderInfraID reads the infrastructure name from a render's Infrastructure manifest.
func renderInfraID(dir string) string {
	matches, _ := filepath.Glob(filepath.Join(dir, "manifests", "*_cluster_infrastructure.config.openshift.io_cluster.yaml"))
	if len(matches) == 0 {
		return ""
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		return ""
	}
	var infra struct {
		Status struct {
			InfrastructureName string `json:"infrastructureName"`
		} `json:"status"`
	}
	if yaml.Unmarshal(b, &infra) != nil {
		return ""
	}
	return infra.Status.InfrastructureName
}

// path normalises a node path: revision directories.
func (n *normalizer) path(p string) string { return revisionDirRE.ReplaceAllString(p, "-pod-N") }

// text normalises one string value.
func (n *normalizer) text(s string, expected bool) string {
	infra := n.renderInfraID
	if expected {
		infra = n.expectedInfraID
		s = expectedImageRE.ReplaceAllString(s, "<image:$1>")
	} else {
		for _, spec := range n.renderSpecs {
			s = strings.ReplaceAll(s, spec, n.renderImages[spec])
		}
	}
	s = pemRE.ReplaceAllString(s, "<pem>")
	s = revisionDirRE.ReplaceAllString(s, "-pod-N")
	if infra != "" {
		s = strings.ReplaceAll(s, infra, "<infra-id>")
	}
	return s
}

// value normalises every string in a decoded YAML/JSON value.
func (n *normalizer) value(v interface{}, expected bool) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(x))
		for k, e := range x {
			out[k] = n.value(e, expected)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = n.value(e, expected)
		}
		return out
	case string:
		return n.text(x, expected)
	default:
		return v
	}
}

// pod normalises a static pod: no status or creationTimestamp; the revision in labels, env and the startup
// monitor's --revision; version strings;
// embedded shell scripts compared by their effect (the exec statements, whitespace folded).
func (n *normalizer) pod(v interface{}, expected bool) interface{} {
	m, ok := v.(map[string]interface{})
	if !ok {
		return n.value(v, expected)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]interface{}); ok {
		delete(md, "creationTimestamp")
		if labels, ok := md["labels"].(map[string]interface{}); ok && labels["revision"] != nil {
			labels["revision"] = "<revision>"
		}
	}
	if spec, ok := m["spec"].(map[string]interface{}); ok {
		for _, key := range []string{"containers", "initContainers"} {
			list, _ := spec[key].([]interface{})
			for _, c := range list {
				n.container(c, expected)
			}
		}
	}
	return n.value(m, expected)
}

func (n *normalizer) container(v interface{}, expected bool) {
	c, ok := v.(map[string]interface{})
	if !ok {
		return
	}
	for _, key := range []string{"command", "args"} {
		list, _ := c[key].([]interface{})
		for i, a := range list {
			s, ok := a.(string)
			if !ok {
				continue
			}
			if revisionFlagRE.MatchString(s) {
				list[i] = "--revision=<revision>"
			} else if m := scriptSummaryRE.FindStringSubmatch(s); expected && m != nil {
				list[i] = "<script exec: " + foldStatements(strings.Split(m[1], " ;; ")) + ">"
			} else if strings.Contains(s, "\n") {
				list[i] = "<script exec: " + foldStatements(execStatements(s)) + ">"
			}
		}
	}
	env, _ := c["env"].([]interface{})
	for _, e := range env {
		em, ok := e.(map[string]interface{})
		if !ok {
			continue
		}
		name, _ := em["name"].(string)
		switch {
		case strings.HasSuffix(name, "STATIC_POD_VERSION"):
			em["value"] = "<revision>"
		case strings.HasSuffix(name, "IMAGE_VERSION"):
			em["value"] = "<version>"
		}
	}
}

// execStatements are the lines of a shell script that start with "exec " (continuation lines joined).
func execStatements(script string) []string {
	var out []string
	lines := strings.Split(strings.ReplaceAll(script, "\\\n", " "), "\n")
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "exec ") {
			out = append(out, t)
		}
	}
	return out
}

func foldStatements(stmts []string) string {
	var out []string
	for _, s := range stmts {
		s = strings.TrimSpace(spacesRE.ReplaceAllString(s, " "))
		if s != "" && s != "none" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ;; ")
}
