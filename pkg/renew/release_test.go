package renew

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/releasetest"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/pipeline"
)

// TestRenewKeepsTheRelease: renew takes the saved release input (the input table's releaseInfo): a forced renewal
// rolls every component to a new revision whose pods still run the release's images, and its update holds no
// default pull spec.
func TestRenewKeepsTheRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("renders and renews")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "aio")
	info := releasetest.Payload("4.20.8", "amd64", components.PulledImages(clusterconfig.FlavorOpenShift, true))
	o := pipeline.Options{InstallConfig: repo("examples/sno/install-config.yaml"), NodeIP: "192.168.126.10", NodeName: pipeline.DefaultNodeName,
		Dir: dir, CertValidity: certs.DefaultLeafValidity, ReleaseInfo: "release.json", ReleaseInfoData: releasetest.JSON(info)}
	if _, err := pipeline.Render(ctx, o); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, Options{Dir: dir, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Update == nil {
		t.Fatal("a forced renewal made no update")
	}
	pods := 0
	err = filepath.WalkDir(filepath.Join(dir, "update"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "quay.io/openshift/origin-") {
			t.Errorf("%s: a default pull spec", p)
		}
		if strings.HasSuffix(p, "-pod.yaml") && strings.Contains(string(b), releasetest.Repository+"@"+releasetest.Digest("hyperkube")) {
			pods++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pods == 0 {
		t.Errorf("no pod of the update runs the release's hyperkube")
	}
}
