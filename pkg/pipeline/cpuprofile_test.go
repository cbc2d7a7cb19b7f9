package pipeline

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// CPU profiles of the benchmarks.
//
// BenchmarkRender reports how much of a render's CPU is RSA key generation, the figure issue 13's wall bound is
// made of. Key generation happens inside library-go, so the only way to see it is a CPU profile: the benchmark
// profiles its renders with runtime/pprof and sums the samples whose stack holds an RSA GenerateKey. The
// profile (profile.proto, gzipped) is decoded here with the standard library: github.com/google/pprof/profile
// is in the module graph only as an indirect dependency, and importing it would add a requirement to go.mod.

// cpuProfile is a CPU profile of the code run between startCPUProfile and stop.
type cpuProfile struct {
	buf bytes.Buffer
	on  bool
}

// startCPUProfile starts a CPU profile of the whole process. When the profiler is already in use (go test
// -cpuprofile), it logs why the figures drawn from it are missing and stop reports nothing.
func startCPUProfile(tb testing.TB, metric string) *cpuProfile {
	p := &cpuProfile{}
	if err := pprof.StartCPUProfile(&p.buf); err != nil {
		tb.Logf("%s not measured: the benchmark profiles its renders itself and the CPU profiler is taken (%v); run it without -cpuprofile", metric, err)
		return p
	}
	p.on = true
	return p
}

// stop stops the profile and returns the CPU time of the samples whose stack holds RSA key generation, and the
// CPU time of all samples; ok is false when the profile did not run. With RENDER_STATIC_BENCH_CPUPROFILE set, it
// also writes the profile to that file, for go tool pprof (each benchmark run overwrites it: the last one stays).
func (p *cpuProfile) stop(tb testing.TB) (keygen, total time.Duration, ok bool) {
	if !p.on {
		return 0, 0, false
	}
	pprof.StopCPUProfile()
	p.on = false
	if f := os.Getenv("RENDER_STATIC_BENCH_CPUPROFILE"); f != "" {
		if err := os.WriteFile(f, p.buf.Bytes(), 0644); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("CPU profile written to %s (go tool pprof -top -cum %s)", f, f)
	}
	keygen, total, err := profileCPU(p.buf.Bytes(), isRSAKeyGeneration)
	if err != nil {
		tb.Fatalf("reading the benchmark's own CPU profile: %v", err)
	}
	return keygen, total, true
}

// isRSAKeyGeneration matches the functions of RSA key generation: crypto/rsa.GenerateKey (and the deprecated
// GenerateMultiPrimeKey) and the FIPS 140 module's rsa.GenerateKey that does the work since Go 1.24, whatever
// the module's version directory (crypto/internal/fips140/rsa, crypto/internal/fips140/v1.0.0/rsa).
func isRSAKeyGeneration(fn string) bool {
	switch fn {
	case "crypto/rsa.GenerateKey", "crypto/rsa.GenerateMultiPrimeKey":
		return true
	}
	return strings.HasPrefix(fn, "crypto/internal/fips140") && strings.HasSuffix(fn, "/rsa.GenerateKey")
}

var errProfile = errors.New("malformed profile")

// profileCPU decodes a CPU profile as runtime/pprof writes it and returns the CPU time of the samples whose
// stack holds a function match accepts (inlined frames included), and the CPU time of all samples.
func profileCPU(gz []byte, match func(function string) bool) (matched, total time.Duration, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return 0, 0, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return 0, 0, err
	}
	// profile.proto: 1 sample_type {1 type, 2 unit}, 2 sample {1 location_id, 2 value}, 4 location {1 id,
	// 4 line {1 function_id}}, 5 function {1 id, 2 name}, 6 string_table; names are string_table indexes.
	type sample struct {
		locations []uint64
		values    []uint64
	}
	var types [][2]uint64
	var samples []sample
	locations := map[uint64][]uint64{} // location id -> function ids
	functions := map[uint64]uint64{}   // function id -> name
	var stringTable []string
	err = protoFields(raw, func(field int, v uint64, data []byte) error {
		switch field {
		case 1:
			var t [2]uint64
			err := protoFields(data, func(f int, v uint64, _ []byte) error {
				if f == 1 || f == 2 {
					t[f-1] = v
				}
				return nil
			})
			types = append(types, t)
			return err
		case 2:
			var s sample
			err := protoFields(data, func(f int, v uint64, d []byte) error {
				var err error
				switch f {
				case 1:
					s.locations, err = appendUvarints(s.locations, v, d)
				case 2:
					s.values, err = appendUvarints(s.values, v, d)
				}
				return err
			})
			samples = append(samples, s)
			return err
		case 4:
			var id uint64
			var fns []uint64
			err := protoFields(data, func(f int, v uint64, d []byte) error {
				switch f {
				case 1:
					id = v
				case 4:
					return protoFields(d, func(f int, v uint64, _ []byte) error {
						if f == 1 {
							fns = append(fns, v)
						}
						return nil
					})
				}
				return nil
			})
			locations[id] = fns
			return err
		case 5:
			var id, name uint64
			err := protoFields(data, func(f int, v uint64, _ []byte) error {
				switch f {
				case 1:
					id = v
				case 2:
					name = v
				}
				return nil
			})
			functions[id] = name
			return err
		case 6:
			stringTable = append(stringTable, string(data))
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	str := func(i uint64) string {
		if i < uint64(len(stringTable)) {
			return stringTable[i]
		}
		return ""
	}
	cpu := -1
	for i, t := range types {
		if str(t[0]) == "cpu" && str(t[1]) == "nanoseconds" {
			cpu = i
		}
	}
	if cpu < 0 {
		return 0, 0, fmt.Errorf("not a CPU profile: no cpu/nanoseconds sample type among %d", len(types))
	}
	matches := map[uint64]bool{} // location id -> holds a matching function
	for id, fns := range locations {
		for _, f := range fns {
			if match(str(functions[f])) {
				matches[id] = true
			}
		}
	}
	for _, s := range samples {
		if cpu >= len(s.values) {
			return 0, 0, fmt.Errorf("%w: a sample has %d values, not %d", errProfile, len(s.values), len(types))
		}
		d := time.Duration(s.values[cpu])
		total += d
		for _, l := range s.locations {
			if matches[l] {
				matched += d
				break
			}
		}
	}
	return matched, total, nil
}

// protoFields calls f with every field of a protocol buffer message: a varint or fixed field's value as v, a
// length-delimited field's bytes as data.
func protoFields(b []byte, f func(field int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errProfile
		}
		b = b[n:]
		var v uint64
		var data []byte
		switch key & 7 {
		case 0:
			if v, n = binary.Uvarint(b); n <= 0 {
				return errProfile
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return errProfile
			}
			v, b = binary.LittleEndian.Uint64(b), b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errProfile
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
		case 5:
			if len(b) < 4 {
				return errProfile
			}
			v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		default:
			return fmt.Errorf("%w: wire type %d", errProfile, key&7)
		}
		if err := f(int(key>>3), v, data); err != nil {
			return err
		}
	}
	return nil
}

// appendUvarints appends a repeated integer field's values: one value (v), or a packed run of them (data).
func appendUvarints(to []uint64, v uint64, data []byte) ([]uint64, error) {
	if data == nil {
		return append(to, v), nil
	}
	for len(data) > 0 {
		x, n := binary.Uvarint(data)
		if n <= 0 {
			return to, errProfile
		}
		to, data = append(to, x), data[n:]
	}
	return to, nil
}

// TestProfileCPUFindsKeyGeneration checks the profile reading the benchmarks rely on against a profile of RSA
// key generation next to other work of about the same CPU time.
func TestProfileCPUFindsKeyGeneration(t *testing.T) {
	p := startCPUProfile(t, "the check")
	if !p.on {
		t.Skip("go test -cpuprofile holds the CPU profiler")
	}
	t0 := time.Now()
	for i := 0; i < 3; i++ {
		if _, err := rsa.GenerateKey(rand.Reader, 2048); err != nil {
			p.stop(t)
			t.Fatal(err)
		}
	}
	keys := time.Since(t0)
	sink := 0
	for t1 := time.Now(); time.Since(t1) < keys; {
		for i := 0; i < 1000; i++ {
			sink += i * i
		}
	}
	keygen, total, _ := p.stop(t)
	t.Logf("key generation %v wall, profile: %v of %v CPU in key generation (sink %d)", keys, keygen, total, sink)
	if keygen <= 0 || keygen >= total {
		t.Fatalf("profile: %v of %v CPU in key generation; want some but not all", keygen, total)
	}
	// About half of the profiled CPU is key generation; sampling (100 Hz) and a busy machine leave a wide margin.
	if f := float64(keygen) / float64(total); f < 0.2 || f > 0.8 {
		t.Fatalf("profile: %.0f %% of the CPU in key generation, want about 50 %%", 100*f)
	}
}
