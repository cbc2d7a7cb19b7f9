package pipeline

import (
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
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

// cpuShares is what a profile says of a stretch of CPU time: the time in RSA key generation, in RSA signatures made
// outside key generation (certificates, tokens) and in all samples.
type cpuShares struct {
	keygen, signing, total time.Duration
}

// stop stops the profile and returns its shares; ok is false when the profile did not run. With
// RENDER_STATIC_BENCH_CPUPROFILE set, it also writes the profile to that file, for go tool pprof (each benchmark run
// overwrites it: the last one stays).
func (p *cpuProfile) stop(tb testing.TB) (shares cpuShares, ok bool) {
	if !p.on {
		return cpuShares{}, false
	}
	pprof.StopCPUProfile()
	p.on = false
	if f := os.Getenv("RENDER_STATIC_BENCH_CPUPROFILE"); f != "" {
		if err := os.WriteFile(f, p.buf.Bytes(), 0644); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("CPU profile written to %s (go tool pprof -top -cum %s)", f, f)
	}
	// Key generation first: the FIPS module's GenerateKey signs once itself (its pairwise consistency test).
	matched, total, err := profileCPU(p.buf.Bytes(), isRSAKeyGeneration, isRSASignature)
	if err != nil {
		tb.Fatalf("reading the benchmark's own CPU profile: %v", err)
	}
	return cpuShares{keygen: matched[0], signing: matched[1], total: total}, true
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

// isRSASignature matches the functions that make an RSA signature (x509.CreateCertificate and JWT signers end in
// them): crypto/rsa's SignPKCS1v15 and SignPSS, and the FIPS 140 module's.
func isRSASignature(fn string) bool {
	switch fn {
	case "crypto/rsa.SignPKCS1v15", "crypto/rsa.SignPSS":
		return true
	}
	return strings.HasPrefix(fn, "crypto/internal/fips140") && (strings.HasSuffix(fn, "/rsa.SignPKCS1v15") || strings.HasSuffix(fn, "/rsa.SignPSS"))
}

var errProfile = errors.New("malformed profile")

// profileCPU decodes a CPU profile as runtime/pprof writes it and returns, for each class, the CPU time of the
// samples whose stack holds a function the class accepts (inlined frames included) and no earlier class does, and
// the CPU time of all samples.
func profileCPU(gz []byte, classes ...func(function string) bool) (matched []time.Duration, total time.Duration, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, 0, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, 0, err
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
		return nil, 0, err
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
		return nil, 0, fmt.Errorf("not a CPU profile: no cpu/nanoseconds sample type among %d", len(types))
	}
	classOf := map[uint64]int{} // location id -> the first class one of its functions is in
	for id, fns := range locations {
		for _, f := range fns {
			for c, match := range classes {
				if match(str(functions[f])) {
					if prev, ok := classOf[id]; !ok || c < prev {
						classOf[id] = c
					}
				}
			}
		}
	}
	matched = make([]time.Duration, len(classes))
	for _, s := range samples {
		if cpu >= len(s.values) {
			return nil, 0, fmt.Errorf("%w: a sample has %d values, not %d", errProfile, len(s.values), len(types))
		}
		d := time.Duration(s.values[cpu])
		total += d
		first := len(classes)
		for _, l := range s.locations {
			if c, ok := classOf[l]; ok && c < first {
				first = c
			}
		}
		if first < len(classes) {
			matched[first] += d
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
// key generation, RSA signatures and other work, each of about the same CPU time.
func TestProfileCPUFindsKeyGeneration(t *testing.T) {
	p := startCPUProfile(t, "the check")
	if !p.on {
		t.Skip("go test -cpuprofile holds the CPU profiler")
	}
	t0 := time.Now()
	var key *rsa.PrivateKey
	for i := 0; i < 3; i++ {
		var err error
		if key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			p.stop(t)
			t.Fatal(err)
		}
	}
	keys := time.Since(t0)
	digest := sha256.Sum256([]byte("render-static"))
	signatures := 0
	for t1 := time.Now(); time.Since(t1) < keys; signatures++ {
		if _, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:]); err != nil {
			p.stop(t)
			t.Fatal(err)
		}
	}
	sink := 0
	for t1 := time.Now(); time.Since(t1) < keys; {
		for i := 0; i < 1000; i++ {
			sink += i * i
		}
	}
	shares, _ := p.stop(t)
	t.Logf("key generation %v wall, then %d signatures and other work as long; profile: %v of %v CPU in key generation, %v in signatures (sink %d)",
		keys, signatures, shares.keygen, shares.total, shares.signing, sink)
	// About a third of the profiled CPU each; sampling (100 Hz) and a busy machine leave a wide margin.
	for _, c := range []struct {
		name string
		d    time.Duration
	}{{"key generation", shares.keygen}, {"signatures", shares.signing}} {
		if f := float64(c.d) / float64(shares.total); f < 0.1 || f > 0.6 {
			t.Errorf("profile: %.0f %% of the CPU in %s, want about a third", 100*f, c.name)
		}
	}
}
