package pipeline

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/inventory"
)

// Summary is what the CLI prints.
type Summary struct {
	Loops, Passes, Objects, Files int
	IgnitionBytes                 int
	EarliestExpiry                time.Time
	EarliestExpirySubject         string // the certificate's name in `render-static certs`
	Elapsed                       time.Duration
	// Timing of the render's parts, for benchmarks.
	KeygenTime, LoopsTime, ExportTime, IgnitionTime time.Duration
	// Warnings are printed after the summary: inputs that render but need care (leaves of minutes).
	Warnings []string
}

func (s Summary) Print(w io.Writer, dir string) {
	fmt.Fprintf(w, "rendered %s\n", filepath.Join(dir, "aio.ign"))
	fmt.Fprintf(w, "  loops:            %d, fixpoint after %d passes\n", s.Loops, s.Passes)
	fmt.Fprintf(w, "  objects:          %d manifests\n", s.Objects)
	fmt.Fprintf(w, "  files:            %d on the node\n", s.Files)
	fmt.Fprintf(w, "  aio.ign:          %d bytes\n", s.IgnitionBytes)
	fmt.Fprintf(w, "  earliest expiry:  %s (%s)\n", s.EarliestExpiry.UTC().Format(time.RFC3339), s.EarliestExpirySubject)
	fmt.Fprintf(w, "  elapsed:          %s\n", s.Elapsed.Round(time.Millisecond))
	for _, warning := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
}

// earliestExpiry is the certificate that expires first among the node's files (CA bundles and kubeconfigs
// included), named as `render-static certs` names it (pkg/inventory): by what it is, not by its CN.
func earliestExpiry(t *export.Tree) (time.Time, string) {
	files := map[string][]byte{}
	for _, f := range t.Files() {
		files[f.Path] = f.Contents
	}
	inv, err := inventory.FromFiles(files, time.Now())
	if err != nil {
		return time.Time{}, "unknown: " + err.Error()
	}
	if c := inv.Earliest(); c != nil {
		return c.NotAfter, c.Name
	}
	return time.Time{}, "none"
}
