package pipeline

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/render-static/render-static/pkg/certs"
)

// What differs between two renders of the same inputs however they are scheduled: key material (PEM blocks,
// random keys, tokens signed with them) and the clock (timestamps, the Unix time in signer names, the trace's
// durations). maskKeys replaces exactly those with placeholders; base64 that decodes to text is decoded and masked
// in turn, so a secret's non-key contents (kubeconfigs, configs) are still compared.
var (
	pemBlockRE   = regexp.MustCompile(`(?s)-----BEGIN [A-Z ]+-----.*?-----END [A-Z ]+-----`)
	escPEMRE     = regexp.MustCompile(`-----BEGIN [A-Z ]+-----(\\n|[A-Za-z0-9+/=])*?-----END [A-Z ]+-----`)
	jwtRE        = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)
	base64RE     = regexp.MustCompile(`[A-Za-z0-9+/]{40,}={0,2}`)
	timestampRE  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	unixSuffixRE = regexp.MustCompile(`@\d{10}\b`)
	durationRE   = regexp.MustCompile(`, [0-9.]+(ns|µs|ms|s|m)\b`)
	skippedRE    = regexp.MustCompile(`, \d+ skipped \(unchanged\)`)
	// The live ISO's embed size (state.LiveEmbed) is xz's output over live.ign, keys included: it moves with them.
	embedBytesRE = regexp.MustCompile(`"bytes": \d+`)
)

func maskKeys(s string, depth int) string {
	s = pemBlockRE.ReplaceAllString(s, "<pem>")
	s = escPEMRE.ReplaceAllString(s, "<pem>")
	s = jwtRE.ReplaceAllString(s, "<jwt>")
	s = base64RE.ReplaceAllStringFunc(s, func(b string) string {
		raw, err := base64.StdEncoding.DecodeString(b)
		if err != nil || depth > 3 || !utf8.Valid(raw) || strings.ContainsRune(string(raw), 0) {
			return fmt.Sprintf("<base64 %d bytes>", len(raw))
		}
		return "<base64:" + maskKeys(string(raw), depth+1) + ">"
	})
	s = timestampRE.ReplaceAllString(s, "<time>")
	return unixSuffixRE.ReplaceAllString(s, "@<unix>")
}

// renderObserved runs the engine with the given options and returns, by name, everything a render leaves with
// key material and times masked: the trace (without the count of loops a pass skipped), every file of the node
// (the manifests included), every state file (every object with its UID and resourceVersion, every operator
// resource with its conditions in order); and how many loop runs the passes skipped (loops.Loop.Unchanged).
func renderObserved(t *testing.T, config, nodeIP string, opts SettleOptions) (map[string]string, int) {
	t.Helper()
	o := Options{InstallConfig: repo(config), NodeIP: nodeIP, NodeName: "sno-0",
		Dir: filepath.Join(t.TempDir(), "out"), CertValidity: certs.DefaultLeafValidity, InfraID: "sno-x7k2p"}
	in, err := Validate(o)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := SettleWith(context.Background(), in, nil, nil, opts)
	if err != nil {
		t.Fatalf("%+v: %v", opts, err)
	}
	out, err := Export(context.Background(), eng)
	if err != nil {
		t.Fatal(err)
	}
	// The trace whole, with only its timings masked: a write lands in the same pass and place in every render
	// (the resource sync, which visits its rules in map order, settles within its step and its writes are listed
	// by object: loops.Loop.Settling).
	got := map[string]string{"trace.txt": durationRE.ReplaceAllString(skippedRE.ReplaceAllString(out.Trace, ""), "")}
	for _, f := range out.Tree.Files() {
		got["node:"+f.Path] = maskKeys(string(f.Contents), 0)
	}
	files, err := out.State.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got["state:"+f.Path] = embedBytesRE.ReplaceAllString(maskKeys(string(f.Contents), 0), `"bytes": <xz of keys>`)
	}
	return got, len(eng.Result.Skipped)
}

func diffObserved(want, got map[string]string) []string {
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, k+": missing")
		case g != w:
			diffs = append(diffs, k+": differs:\n"+firstDifference(w, g))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, k+": extra")
		}
	}
	sort.Strings(diffs)
	return diffs
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("  line %d\n  - %s\n  + %s", i+1, x, y)
		}
	}
	return ""
}

// TestConcurrentEngineMatchesSequential: the engine with loops in flight together (the default, and more than
// the loops of a pass) leaves exactly what the engine running one loop at a time leaves, apart from key material
// and the clock: the same trace, node files, manifests, objects (UIDs, resourceVersions) and operator resources.
// The reference runs every loop in every pass (RunUnchanged); every other render skips the cert-rotation rows
// nothing they read changed for (loops.Loop.Unchanged), and must skip some and leave the same. Two reference
// renders are compared first, so that the masking is shown to hide only what differs anyway.
func TestConcurrentEngineMatchesSequential(t *testing.T) {
	config, ip := "examples/sno/install-config.yaml", "192.168.126.10"
	reference := SettleOptions{Parallelism: 1, RunUnchanged: true}
	want, skipped := renderObserved(t, config, ip, reference)
	if !strings.Contains(want["trace.txt"], "cert-rotation/ServiceNetworkServing") {
		t.Fatalf("the trace has no cert-rotation loop:\n%s", want["trace.txt"])
	}
	if skipped != 0 {
		t.Fatalf("the reference skipped %d loop runs", skipped)
	}
	if d := diffObserved(want, first(renderObserved(t, config, ip, reference))); len(d) > 0 {
		t.Fatalf("two reference renders differ beyond key material and times (%d):\n%s", len(d), strings.Join(d, "\n"))
	}
	runs := []int{1, DefaultParallelism(), 64, 3}
	if testing.Short() {
		runs = runs[:2]
	}
	for _, par := range runs {
		got, skipped := renderObserved(t, config, ip, SettleOptions{Parallelism: par})
		if skipped == 0 {
			t.Errorf("parallelism %d: no loop run was skipped", par)
		}
		if d := diffObserved(want, got); len(d) > 0 {
			t.Errorf("parallelism %d differs from the sequential render of every loop (%d):\n%s", par, len(d), strings.Join(d, "\n"))
		}
	}
}

func first[T any](v T, _ int) T { return v }
