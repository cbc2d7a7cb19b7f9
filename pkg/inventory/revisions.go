package inventory

import (
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/export"
)

// Running is what the node's static pods run, as their manifests in export.PodManifestDir say. The installer's
// layout (pkg/export installer.go, as library-go's installer pod lays it out): a pod's revision N lives in
// export.ResourceDir/<pod configmap>-<N>/{configmaps,secrets}/<name>/<key>, the manifest laid down there too, and
// the pod's "revision" label is N (the OpenShift pods also mount that directory). A revision directory no manifest names, and the revision copies of its objects
// (<name>-<N>, made by library-go's revision controller), are kept for a rollback but used by nothing.
type Running struct {
	// Dirs are the revisions pods run, by revision directory prefix (the pod configmap's name, "etcd-pod").
	Dirs map[string][]int
	// Namespaces are the revision directory prefixes of each namespace's pods.
	Namespaces map[string][]string
	// revisioned are the names of the configmaps and secrets the running revisions hold ("secrets/etcd-client"),
	// by namespace: the objects the revision controller copies.
	revisioned map[string]map[string]bool
}

var revisionDirName = regexp.MustCompile(`^(.+)-(\d+)$`)

// RunningRevisions reads what the static pods of files (node paths to contents; only the manifests' contents are
// read) run. Files without manifests give an empty Running: nothing is known not to run.
func RunningRevisions(files map[string][]byte) Running {
	r := Running{Dirs: map[string][]int{}, Namespaces: map[string][]string{}, revisioned: map[string]map[string]bool{}}
	// The revision directories that hold each manifest file name, and what each revision directory holds.
	holding := map[string][]string{}     // manifest file name -> revision directories holding it
	held := map[string]map[string]bool{} // revision directory -> "configmaps/<name>", "secrets/<name>"
	for p := range files {
		rel, ok := strings.CutPrefix(p, export.ResourceDir+"/")
		if !ok {
			continue
		}
		parts := strings.Split(rel, "/")
		switch {
		case len(parts) == 2:
			holding[parts[1]] = append(holding[parts[1]], parts[0])
		case len(parts) >= 3 && (parts[1] == "configmaps" || parts[1] == "secrets"):
			if held[parts[0]] == nil {
				held[parts[0]] = map[string]bool{}
			}
			held[parts[0]][parts[1]+"/"+parts[2]] = true
		}
	}
	for p, data := range files {
		if path.Dir(p) != export.PodManifestDir {
			continue
		}
		var pod struct {
			Metadata struct {
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				Volumes []struct {
					HostPath *struct {
						Path string `json:"path"`
					} `json:"hostPath"`
				} `json:"volumes"`
			} `json:"spec"`
		}
		// The installer writes JSON: decoded as such, else as YAML.
		if json.Unmarshal(data, &pod) != nil && yaml.Unmarshal(data, &pod) != nil {
			continue
		}
		rev, err := strconv.Atoi(pod.Metadata.Labels["revision"])
		if err != nil {
			continue
		}
		dirs := holding[path.Base(p)]
		for _, v := range pod.Spec.Volumes {
			if v.HostPath != nil && path.Dir(v.HostPath.Path) == export.ResourceDir {
				dirs = append(dirs, path.Base(v.HostPath.Path))
			}
		}
		for _, d := range dirs {
			m := revisionDirName.FindStringSubmatch(d)
			if m == nil || m[2] != strconv.Itoa(rev) {
				continue
			}
			prefix, ns := m[1], pod.Metadata.Namespace
			if !slices.Contains(r.Dirs[prefix], rev) {
				r.Dirs[prefix] = append(r.Dirs[prefix], rev)
				slices.Sort(r.Dirs[prefix])
			}
			if !slices.Contains(r.Namespaces[ns], prefix) {
				r.Namespaces[ns] = append(r.Namespaces[ns], prefix)
			}
			if r.revisioned[ns] == nil {
				r.revisioned[ns] = map[string]bool{}
			}
			for name := range held[d] {
				r.revisioned[ns][name] = true
			}
		}
	}
	return r
}

// Current is the latest revision pods run from a revision directory prefix ("etcd-pod"), 0 when none does.
func (r Running) Current(prefix string) int {
	if revs := r.Dirs[prefix]; len(revs) > 0 {
		return revs[len(revs)-1]
	}
	return 0
}

// UnusedDir says whether a revision directory ("etcd-pod-1") is one no static pod runs, of a prefix some pod runs.
func (r Running) UnusedDir(dir string) bool {
	m := revisionDirName.FindStringSubmatch(dir)
	if m == nil {
		return false
	}
	revs, ok := r.Dirs[m[1]]
	n, _ := strconv.Atoi(m[2])
	return ok && !slices.Contains(revs, n)
}

// unused says whether a location is only a revision's copy that no static pod runs: a file of an unused revision
// directory, or an object <name>-<N> in a namespace whose pods run other revisions, where <name> is a configmap or
// secret those revisions hold (so that a name merely ending in a number, "etcd-peer-sno-1", is never taken for a
// copy).
func (r Running) unused(l Location) bool {
	if l.Kind == "file" {
		rel, ok := strings.CutPrefix(l.Path, export.ResourceDir+"/")
		dir, _, nested := strings.Cut(rel, "/")
		return ok && nested && r.UnusedDir(dir)
	}
	m := revisionDirName.FindStringSubmatch(l.Name)
	if m == nil || !r.revisioned[l.Namespace][l.Kind+"s/"+m[1]] {
		return false
	}
	n, _ := strconv.Atoi(m[2])
	for _, prefix := range r.Namespaces[l.Namespace] {
		if slices.Contains(r.Dirs[prefix], n) {
			return false
		}
	}
	return true
}
