package pipeline

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/state"
)

// TestNodeNameFileNames: every path component of a render (the directory, aio.ign's and each worker.ign's files)
// that holds a node's name, the control-plane node's or a worker's, is one of nodeFileNames, so that validation's
// bound (MaxNodeName) is the one the file layout needs.
func TestNodeNameFileNames(t *testing.T) {
	testtools.Long(t, "renders the whole cluster")
	const node, worker = "cpnodename", "wknodename"
	dir := filepath.Join(t.TempDir(), "aio")
	o := Options{InstallConfig: "install-config.yaml", InstallConfigData: withReplicas(t, "1"), NodeIP: "192.168.126.10", NodeName: node,
		Dir: dir, Flavor: "upstream", Workers: "workers.yaml", WorkerList: []state.Worker{{NodeName: worker, NodeIP: "192.168.126.11"}}}
	if _, err := Render(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		paths = append(paths, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ign := range []string{"aio.ign", filepath.Join(WorkersDir, worker, WorkerIgnition)} {
		b, err := os.ReadFile(filepath.Join(dir, ign))
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Storage struct {
				Files []struct{ Path string } `json:"files"`
			} `json:"storage"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		for _, f := range cfg.Storage.Files {
			paths = append(paths, ign+":"+f.Path)
		}
	}
	seen := 0
	for _, p := range paths {
		for _, c := range strings.Split(filepath.ToSlash(p), "/") {
			for _, name := range []string{node, worker} {
				if !strings.Contains(c, name) {
					continue
				}
				seen++
				if !slices.Contains(nodeFileNames, strings.Replace(c, name, "%s", 1)) {
					t.Errorf("%s: %s takes the node name %s and is not among nodeFileNames", p, c, name)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no path holds a node's name")
	}
	if MaxNodeName < 63 {
		t.Errorf("MaxNodeName is %d: shorter than a DNS label", MaxNodeName)
	}
}
