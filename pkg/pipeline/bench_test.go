package pipeline

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testtools"
	"github.com/render-static/render-static/pkg/certs"
)

func benchOptions(dir string) Options {
	return Options{InstallConfig: repo("examples/sno/install-config.yaml"), NodeIP: "192.168.126.10", NodeName: "sno-0",
		CertValidity: certs.DefaultLeafValidity, InfraID: "sno-x7k2p", Dir: dir}
}

// BenchmarkRender renders the bundled example afresh (new keys) and reports the wall time of each part of a
// render: key generation outside the loops, the loops (which generate most keys, several at once), export,
// Ignition packing, and the rest (validation and the synced atomic write); plus the process CPU time per render
// and the peak RSS.
func BenchmarkRender(b *testing.B) {
	var p phases
	for i := 0; i < b.N; i++ {
		o := benchOptions(filepath.Join(b.TempDir(), "out"))
		p.measure(b, o)
	}
	p.report(b)
}

// BenchmarkRerender renders the bundled example again from the state a first render left in --dir (no new keys:
// the loops find every certificate valid), which is everything a render does besides key generation.
func BenchmarkRerender(b *testing.B) {
	o := benchOptions(filepath.Join(b.TempDir(), "out"))
	if _, err := Render(context.Background(), o); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var p phases
	for i := 0; i < b.N; i++ {
		p.measure(b, o)
	}
	p.report(b)
}

type phases struct {
	n                                     int
	keygen, loops, export, ign, rest, cpu time.Duration
}

func (p *phases) measure(b *testing.B, o Options) {
	cpu0 := cpuTime()
	s, err := Render(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	p.cpu += cpuTime() - cpu0
	p.n++
	p.keygen += s.KeygenTime
	p.loops += s.LoopsTime
	p.export += s.ExportTime
	p.ign += s.IgnitionTime
	p.rest += s.Elapsed - s.KeygenTime - s.LoopsTime - s.ExportTime - s.IgnitionTime
}

func (p *phases) report(b *testing.B) {
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(p.n) }
	b.ReportMetric(ms(p.keygen), "keygen-ms/op")
	b.ReportMetric(ms(p.loops), "loops-ms/op")
	b.ReportMetric(ms(p.export), "export-ms/op")
	b.ReportMetric(ms(p.ign), "ignition-ms/op")
	b.ReportMetric(ms(p.rest), "write+validate-ms/op")
	b.ReportMetric(ms(p.cpu), "cpu-ms/op")
	b.ReportMetric(testtools.PeakRSSMB(), "peak-RSS-MB") // renders run one after another: the peak bounds one render's
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
