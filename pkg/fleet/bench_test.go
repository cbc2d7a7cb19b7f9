package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/pipeline"
)

// Benchmark of a fleet (issue 13: throughput >= 90 % of cores x single-render rate over >= 50 sites, memory
// bounded by --jobs); `make bench` runs it with -benchtime 1x. BenchmarkFleet renders RENDER_STATIC_BENCH_SITES
// (default 50) copies of the bundled example with --jobs = cores, between renders one at a time (baselineSites
// sites, half before and half after the fleet), and reports:
//
//	sites, fleet-sites/s         how many sites, and the fleet's throughput
//	fleet-cpu-s/site             the process's CPU time per site in the fleet (user + system)
//	percore-s/site               one render at a time on one core (GOMAXPROCS 1): a core's single-render rate
//	cores*percore-sites/s        cores / percore-s/site: linear scaling of that rate over every core
//	%-of-cores*percore-single    the fleet against linear scaling: what the fleet makes of the cores
//	single-s/site                one render at a time with every core (its key generation spreads over them)
//	cores*single-sites/s         cores / single-s/site
//	%-of-cores*single            the fleet against it; a single render already keeps more than one core busy, so
//	                             cores*single-sites/s can exceed what the CPU allows and this % understates the fleet
//	peak-RSS-MB                  the process's peak RSS, bounded by --jobs
//
// RENDER_STATIC_BENCH_COMPARE=N also renders the sites N times each way, alternately (to share the machine's
// noise), with --jobs = cores and each render's loops one at a time (pipeline.Options.Parallelism 1) and with
// the engine's default, and reports both throughputs and CPU times per site (parallelism1-sites/s,
// parallelism-default-sites/s, parallelism1-cpu-s/site, parallelism-default-cpu-s/site).
// Measured on the 2-core machine (20 sites, 3 + 3 rounds each way, under load from other work): the same CPU per
// site both ways (3.79 s with Parallelism 1, 3.75 s with 4) and throughputs within the load's noise, so the fleet
// keeps the engine's default: one loop at a time per render is not clearly faster when jobs = cores.
// baselineSites is how many sites the single-render rates take (baseline in BenchmarkFleet), half before the fleet
// and half after it.
const baselineSites = 8

func BenchmarkFleet(b *testing.B) {
	n := 50
	if v, err := strconv.Atoi(os.Getenv("RENDER_STATIC_BENCH_SITES")); err == nil && v > 0 {
		n = max(v, baselineSites) // the baseline renders sites of the fleet's
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
	cores := runtime.GOMAXPROCS(0)
	ctx := context.Background()
	// baseline renders baselineSites sites one at a time, with every core and then on one core (GOMAXPROCS 1),
	// and adds their seconds per site to single and perCore. A render's key generation varies by a fifth from
	// one render to the next (RSA's prime search is random) and this machine's speed drifts from minute to minute:
	// the baseline takes several sites, half of them before the fleet and half after it.
	var single, perCore float64
	baseline := func(from int) {
		for _, procs := range []int{cores, 1} {
			runtime.GOMAXPROCS(procs)
			r := Run(ctx, sites[from:from+baselineSites/2], Options{Common: common, Out: b.TempDir(), Jobs: 1})
			runtime.GOMAXPROCS(cores)
			if r.Failed() > 0 {
				b.Fatalf("single renders failed: %v", r.Results)
			}
			perSite := r.Elapsed.Seconds() / float64(len(r.Results)) / 2 // half of the baseline's sites
			if procs == 1 {
				perCore += perSite
			} else {
				single += perSite
			}
		}
	}
	baseline(0)

	// fleet returns the throughput of a fleet of every site with --jobs = cores, and its CPU time per site.
	fleet := func(common pipeline.Options) (rate, cpuPerSite float64) {
		cpu0 := cpuTime()
		r := Run(ctx, sites, Options{Common: common, Out: b.TempDir(), Jobs: cores})
		cpu := cpuTime() - cpu0
		if r.Failed() > 0 {
			b.Fatalf("%d sites failed", r.Failed())
		}
		return float64(len(r.Results)) / r.Elapsed.Seconds(), cpu.Seconds() / float64(len(r.Results))
	}
	b.ResetTimer()
	var rate, cpu float64
	for i := 0; i < b.N; i++ {
		rate, cpu = fleet(common)
	}
	b.StopTimer()
	baseline(baselineSites / 2)
	b.ReportMetric(float64(n), "sites")
	b.ReportMetric(rate, "fleet-sites/s")
	b.ReportMetric(cpu, "fleet-cpu-s/site")
	b.ReportMetric(perCore, "percore-s/site")
	b.ReportMetric(float64(cores)/perCore, "cores*percore-sites/s")
	b.ReportMetric(100*rate*perCore/float64(cores), "%-of-cores*percore-single")
	b.ReportMetric(single, "single-s/site")
	b.ReportMetric(float64(cores)/single, "cores*single-sites/s")
	b.ReportMetric(100*rate*single/float64(cores), "%-of-cores*single")
	b.ReportMetric(testtools.PeakRSSMB(), "peak-RSS-MB")

	if rounds, _ := strconv.Atoi(os.Getenv("RENDER_STATIC_BENCH_COMPARE")); rounds > 0 {
		var one, def, oneCPU, defCPU float64
		for i := 0; i < rounds; i++ {
			p1, pd := common, common
			p1.Parallelism, pd.Parallelism = 1, pipeline.DefaultParallelism()
			r1, c1 := fleet(p1)
			rd, cd := fleet(pd)
			b.Logf("round %d: Parallelism 1: %.3f sites/s, %.2f CPU s/site; Parallelism %d: %.3f sites/s, %.2f CPU s/site", i+1, r1, c1, pd.Parallelism, rd, cd)
			one, def, oneCPU, defCPU = one+r1, def+rd, oneCPU+c1, defCPU+cd
		}
		k := float64(rounds)
		b.ReportMetric(one/k, "parallelism1-sites/s")
		b.ReportMetric(def/k, "parallelism-default-sites/s")
		b.ReportMetric(oneCPU/k, "parallelism1-cpu-s/site")
		b.ReportMetric(defCPU/k, "parallelism-default-cpu-s/site")
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
