package pipeline

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/outdir"
	"github.com/render-static/render-static/pkg/state"
)

// stateFormatFixture is a state written by render-static before the input table (commit 71f6eb2): the sno-workers
// example with every input given (install-config, node IP and name, cert validity 4380h, an images file, two
// day-1 workers with their devices and a keyfile, the node's install device and keyfile) and one worker added by
// the worker command (worker-9). testdata/state-format/README says how it was made.
const stateFormatFixture = "../../testdata/state-format/state"

// copyState lays the fixture out as a render directory's state, with the modes a render gives it (git keeps none).
func copyState(t *testing.T, from, dir string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		to := filepath.Join(dir, state.Dir, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// savedInputsOf decodes the inputs object of a state's render.json, by input name.
func savedInputsOf(t *testing.T, stateDir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, "render.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		InfraID string         `json:"infraID"`
		Inputs  map[string]any `json:"inputs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc.Inputs["(infraID)"] = doc.InfraID
	return doc.Inputs
}

// TestStateOfEarlierFormatContinues: a state written before the input table is read by today's render: a bare
// re-render (no input given) takes every saved input, sees none changed, continues the same cluster, and saves
// the same inputs again.
func TestStateOfEarlierFormatContinues(t *testing.T) {
	testtools.Tool(t, "nmcli") // the saved keyfiles are read by NetworkManager again
	dir := filepath.Join(t.TempDir(), "aio")
	copyState(t, stateFormatFixture, dir)
	marker, err := os.ReadFile(filepath.Join(stateFormatFixture, "..", "render-static-marker"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, outdir.MarkerFile), marker, 0o644); err != nil {
		t.Fatal(err)
	}
	was := savedInputsOf(t, stateFormatFixture)

	s, err := Render(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Continued {
		t.Errorf("the render did not continue the saved cluster")
	}
	if len(s.Changed) > 0 {
		t.Errorf("changed inputs %q, want none: every input was the saved one", s.Changed)
	}
	for _, want := range []string{"install-config", "node IP", "cert validity", "images", "flavor", "workers", "install device", "network keyfiles"} {
		if !slices.Contains(s.FromState, want) {
			t.Errorf("saved inputs %q lack %s", s.FromState, want)
		}
	}
	if s.Node != "sno-0, 192.168.126.10" {
		t.Errorf("node %q", s.Node)
	}
	if len(s.Workers) != 3 {
		t.Errorf("workers %q, want worker-0, worker-1 and the added worker-9", s.Workers)
	}
	now := savedInputsOf(t, filepath.Join(dir, state.Dir))
	for k, v := range was {
		a, _ := json.Marshal(v)
		b, _ := json.Marshal(now[k])
		if string(a) != string(b) {
			t.Errorf("saved input %s changed by a bare re-render:\n was %s\n now %s", k, a, b)
		}
	}
	for k := range now {
		if _, ok := was[k]; !ok {
			t.Errorf("saved input %s is new after a bare re-render", k)
		}
	}
}
