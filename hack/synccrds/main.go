// Command synccrds vendors, unmodified, the CRDs of the custom kinds render-static exports (export.CRDKinds)
// from the pinned github.com/openshift/api module into manifests/crds. Run it from the repository root after
// changing the pin or the kind list: go run ./hack/synccrds
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/render-static/render-static/pkg/export"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "synccrds:", err)
		os.Exit(1)
	}
}

func run() error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		return fmt.Errorf("locating github.com/openshift/api (run go mod download first): %w", err)
	}
	moduleDir := strings.TrimSpace(string(out))
	files, err := export.ReadCRDSources(moduleDir)
	if err != nil {
		return err
	}
	names, err := export.SelectCRDSources(files)
	if err != nil {
		return err
	}
	dest := filepath.Join("manifests", "crds")
	old, _ := filepath.Glob(filepath.Join(dest, "*.crd.yaml"))
	for _, o := range old {
		if err := os.Remove(o); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dest, 0755); err != nil {
		return err
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dest, n), files[n], 0644); err != nil {
			return err
		}
	}
	fmt.Printf("vendored %d CRD files from %s\n", len(names), moduleDir)
	return nil
}
