package node

import (
	"os"
	"path/filepath"
	"testing"
)

// What package node_test (the tests that render through the pipeline, which imports this package) uses of this
// package's test helpers.

// FirstBoot runs aiokube on a rendered node root (a render's rootfs/) as its aiokube.service would, against the
// stub API, and returns its output, the manifest files it created, in order, and its error.
func FirstBoot(t *testing.T, root string) (string, []string, error) {
	t.Helper()
	unit, err := os.ReadFile(filepath.Join(root, "/etc/systemd/system", AIOKubeUnit))
	if err != nil {
		t.Fatal(err)
	}
	a := newStubRun(t, root, string(unit))
	out, err := a.run(t)
	return out, creates(a.calls(t)), err
}
