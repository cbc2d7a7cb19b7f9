package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/pipeline"
)

// BenchmarkFleet renders RENDER_STATIC_BENCH_SITES (default 50) copies of the bundled example with --jobs =
// cores, after a few renders one at a time for the single-render rate, and reports the fleet's throughput
// against cores x single-render rate and the process's peak RSS. Run it with -benchtime 1x (make bench).
func BenchmarkFleet(b *testing.B) {
	n := 50
	if v, err := strconv.Atoi(os.Getenv("RENDER_STATIC_BENCH_SITES")); err == nil && v > 0 {
		n = v
	}
	ic, err := os.ReadFile(repo("examples/sno/install-config.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	in := filepath.Join(b.TempDir(), "sites")
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("site-%03d", i)
		d := filepath.Join(in, name)
		if err := os.MkdirAll(d, 0755); err != nil {
			b.Fatal(err)
		}
		doc := strings.Replace(string(ic), "name: sno", "name: "+name, 1)
		_ = os.WriteFile(filepath.Join(d, InstallConfigFile), []byte(doc), 0644)
		_ = os.WriteFile(filepath.Join(d, SiteFile), []byte(fmt.Sprintf("nodeIP: 192.168.126.%d\nnodeName: %s-0\n", 10+i%200, name)), 0644)
	}
	sites, err := Load(in)
	if err != nil {
		b.Fatal(err)
	}
	common := pipeline.Options{CertValidity: certs.DefaultLeafValidity}
	cores := runtime.NumCPU()
	ctx := context.Background()

	// The single-render rate: a few sites one at a time.
	single := Run(ctx, sites[:3], Options{Common: common, Out: b.TempDir(), Jobs: 1})
	if single.Failed() > 0 {
		b.Fatalf("single renders failed: %v", single.Results)
	}
	perSite := single.Elapsed.Seconds() / float64(len(single.Results))

	b.ResetTimer()
	var rate float64
	for i := 0; i < b.N; i++ {
		r := Run(ctx, sites, Options{Common: common, Out: b.TempDir(), Jobs: cores})
		if r.Failed() > 0 {
			b.Fatalf("%d sites failed", r.Failed())
		}
		rate = float64(len(r.Results)) / r.Elapsed.Seconds()
	}
	ideal := float64(cores) / perSite
	b.ReportMetric(float64(n), "sites")
	b.ReportMetric(perSite, "single-s/site")
	b.ReportMetric(rate, "fleet-sites/s")
	b.ReportMetric(ideal, "cores*single-sites/s")
	b.ReportMetric(100*rate/ideal, "%-of-cores*single")
	b.ReportMetric(testtools.PeakRSSMB(), "peak-RSS-MB")
}
