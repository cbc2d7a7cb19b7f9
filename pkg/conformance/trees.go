// What is compared: the static pods, the config files (structured, or env files line by line) and the file list
// of the two trees.

package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/inventory"
)

// pods compares every expected static pod of the components with the render's manifest of the same name.
func (c *comparison) pods() error {
	entries, err := os.ReadDir(filepath.Join(c.opts.ExpectedDir, "pods"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !c.owned("etc/kubernetes/manifests/" + name) {
			continue
		}
		c.compared++
		label := "pods/" + name
		expected, err := readObject(filepath.Join(c.opts.ExpectedDir, "pods", name))
		if err != nil {
			return err
		}
		gotPath := filepath.Join(c.opts.RenderDir, "rootfs", "etc", "kubernetes", "manifests", name)
		if _, err := os.Stat(gotPath); err != nil {
			c.add(label, "a static pod", nil)
			continue
		}
		got, err := readObject(gotPath)
		if err != nil {
			return err
		}
		c.diff(label+":", c.norm.pod(expected, true), c.norm.pod(got, false))
	}
	return nil
}

// walkOwned calls fn for every file below root that belongs to the compared components, with its slash-separated
// path relative to root.
func (c *comparison) walkOwned(root string, fn func(rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if !c.owned(rel) {
			return nil
		}
		return fn(rel, d)
	})
}

// configFiles compares every file of the expected rootfs/ that belongs to the components with the render's file
// of the same path, in the revision the render's pods run; a difference names the render's path.
func (c *comparison) configFiles() error {
	root := filepath.Join(c.opts.ExpectedDir, "rootfs")
	return c.walkOwned(root, func(rel string, _ fs.DirEntry) error {
		c.compared++
		gotRel := c.renderPath(rel)
		label := "rootfs/" + gotRel
		want, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(c.opts.RenderDir, "rootfs", gotRel))
		if err != nil {
			c.add(label, "a file", nil)
			return nil
		}
		base := filepath.Base(rel)
		switch {
		case base == "version" || base == "forceRedeploymentReason":
			// operator version strings and redeployment reasons differ by design
		case strings.HasSuffix(base, ".env"):
			c.diffEnvFile(label, string(want), string(got))
		default:
			var wv, gv interface{}
			if yaml.Unmarshal(want, &wv) == nil && yaml.Unmarshal(got, &gv) == nil && isStructured(wv) {
				c.diff(label+":", c.norm.value(wv, true), c.norm.value(gv, false))
			} else if w, g := c.norm.text(string(want), true), c.norm.text(string(got), false); w != g {
				c.add(label, w, g)
			}
		}
		return nil
	})
}

func isStructured(v interface{}) bool {
	switch v.(type) {
	case map[string]interface{}, []interface{}:
		return true
	}
	return false
}

// diffEnvFile compares "export K=V" files as sets of assignments.
func (c *comparison) diffEnvFile(label, want, got string) {
	parse := func(s string, expected bool) map[string]string {
		out := map[string]string{}
		sc := bufio.NewScanner(strings.NewReader(s))
		for sc.Scan() {
			line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export "))
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, _ := strings.Cut(line, "=")
			out[k] = c.norm.text(strings.Trim(v, `"`), expected)
		}
		return out
	}
	w, g := parse(want, true), parse(got, false)
	for _, k := range sortedKeys(w, g) {
		if w[k] != g[k] {
			var wv, gv interface{}
			if v, ok := w[k]; ok {
				wv = v
			}
			if v, ok := g[k]; ok {
				gv = v
			}
			c.add(label+":"+k, wv, gv)
		}
	}
}

// fileList compares FILES.txt with the files of the render's rootfs that belong to the components (those of
// revisions no static pod runs aside).
func (c *comparison) fileList() error {
	f, err := os.Open(filepath.Join(c.opts.ExpectedDir, "FILES.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		mode, p, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok || !c.owned(p) {
			continue
		}
		want[c.norm.path(p)] = mode
	}
	if err := sc.Err(); err != nil {
		return err
	}
	got := map[string]string{}
	root := filepath.Join(c.opts.RenderDir, "rootfs")
	err = c.walkOwned(root, func(rel string, d fs.DirEntry) error {
		if c.notRunning(rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		got[c.norm.path(rel)] = strconv.FormatUint(uint64(info.Mode().Perm()), 8)
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range sortedKeys(want, got) {
		c.compared++
		w, wok := want[p]
		g, gok := got[p]
		switch {
		case !gok:
			c.add("files:"+p, "mode "+w, nil)
		case !wok:
			c.add("files:"+p, nil, "mode "+g)
		case w != g:
			c.add("files:"+p, "mode "+w, "mode "+g)
		}
	}
	return nil
}

func sortedKeys[V any](ms ...map[string]V) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func readObject(p string) (interface{}, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var v interface{}
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return v, nil
}

// runningRevisions reads what the static pods of a render's rootfs run (inventory.RunningRevisions): its pod
// manifests and the paths below its resource directory.
func runningRevisions(root string) (inventory.Running, error) {
	files := map[string][]byte{}
	manifests, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(export.PodManifestDir), "*"))
	if err != nil {
		return inventory.Running{}, err
	}
	for _, p := range manifests {
		b, err := os.ReadFile(p)
		if err != nil {
			return inventory.Running{}, err
		}
		files[export.PodManifestDir+"/"+filepath.Base(p)] = b
	}
	res := filepath.Join(root, filepath.FromSlash(export.ResourceDir))
	err = filepath.WalkDir(res, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(res, p)
		files[export.ResourceDir+"/"+filepath.ToSlash(rel)] = nil
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return inventory.Running{}, err
	}
	return inventory.RunningRevisions(files), nil
}

// revisionDir splits a node path (relative, slash-separated) below the resource directory into its directory there
// and the rest.
func revisionDir(rel string) (dir, rest string, ok bool) {
	under, ok := strings.CutPrefix(rel, strings.TrimPrefix(export.ResourceDir, "/")+"/")
	if !ok {
		return "", "", false
	}
	return strings.Cut(under, "/")
}

// renderPath is where the render holds an expected tree's node path: a revision directory's file in the revision
// the render's pods run.
func (c *comparison) renderPath(rel string) string {
	dir, rest, ok := revisionDir(rel)
	if !ok {
		return rel
	}
	m := revisionDirRE.FindStringIndex(dir)
	if m == nil || m[1] != len(dir) {
		return rel
	}
	prefix := dir[:m[0]] + "-pod"
	if cur := c.running.Current(prefix); cur > 0 {
		return fmt.Sprintf("%s/%s-%d/%s", strings.TrimPrefix(export.ResourceDir, "/"), prefix, cur, rest)
	}
	return rel
}

// notRunning says whether a render's node path is in a revision directory no static pod runs (a node keeps the
// previous one for a rollback): it is not compared.
func (c *comparison) notRunning(rel string) bool {
	dir, _, ok := revisionDir(rel)
	return ok && c.running.UnusedDir(dir)
}
