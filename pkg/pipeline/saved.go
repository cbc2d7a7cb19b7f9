package pipeline

import (
	"encoding/json"
	"fmt"

	"github.com/render-static/render-static/internal/inputfile"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/state"
)

// savedHeadroom is what state/render.json holds besides the inputs (the format version, the infrastructure name,
// the admin credential, the node keys, the embed sizes: a few tens of KiB), with room to spare.
const savedHeadroom = 1 << 20

// CheckSaved checks that the inputs a run saves (SaveInputs) can be read again: state/render.json is read as any
// input file is, at most inputfile.MaxSize bytes, and JSON writes some characters of a file's contents as six
// bytes (\u003c for "<"), so an input under the limit can be saved over it. Such a state could never be loaded:
// the cluster could not be re-rendered, renewed or given a worker. The problem names the input that takes the most
// of render.json; a run checks before any work, so nothing is written.
func CheckSaved(si state.Inputs) installconfig.ErrorList {
	head, err := json.MarshalIndent(&state.State{Inputs: si}, "", "  ")
	if err != nil || len(head)+savedHeadroom <= inputfile.MaxSize {
		return nil
	}
	largest := ""
	for name, raw := range si {
		if largest == "" || len(raw) > len(si[largest]) || len(raw) == len(si[largest]) && name < largest {
			largest = name
		}
	}
	return installconfig.ErrorList{{Field: largest, Detail: fmt.Sprintf(
		"its copy saved in %s/render.json would take %.1f MiB (JSON writes some characters, such as <, > and &, and control characters, as six bytes), and render.json with it %.1f MiB, over the %d MiB a later run reads: the cluster could never be re-rendered, renewed or given a worker; make it smaller (long comments, for example)",
		state.Dir, float64(len(si[largest]))/(1<<20), float64(len(head)+savedHeadroom)/(1<<20), inputfile.MaxSize>>20)}}
}
