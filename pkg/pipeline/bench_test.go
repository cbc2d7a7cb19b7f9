package pipeline

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/render-static/render-static/internal/testtools"
	"github.com/render-static/render-static/pkg/certs"
)

// BenchmarkRender renders the bundled example and reports the wall time of each part of a render: key
// generation outside the loops, the loops (which generate most keys), export, and Ignition packing.
func BenchmarkRender(b *testing.B) {
	o := Options{InstallConfig: repo("examples/sno/install-config.yaml"), NodeIP: "192.168.126.10", NodeName: "sno-0",
		CertValidity: certs.DefaultLeafValidity, InfraID: "sno-x7k2p"}
	var keygen, loops, export, ign float64
	for i := 0; i < b.N; i++ {
		o.Dir = filepath.Join(b.TempDir(), "out")
		s, err := Render(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		keygen += s.KeygenTime.Seconds()
		loops += s.LoopsTime.Seconds()
		export += s.ExportTime.Seconds()
		ign += s.IgnitionTime.Seconds()
	}
	n := float64(b.N)
	b.ReportMetric(keygen/n*1000, "keygen-ms/op")
	b.ReportMetric(loops/n*1000, "loops-ms/op")
	b.ReportMetric(export/n*1000, "export-ms/op")
	b.ReportMetric(ign/n*1000, "ignition-ms/op")
	// Renders run one after another, so the peak bounds one render's.
	b.ReportMetric(testtools.PeakRSSMB(), "peak-RSS-MB")
}
