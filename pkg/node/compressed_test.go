package node_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/rendertest"
	"github.com/render-static/render-static/internal/testkit/testtools"
	"github.com/render-static/render-static/pkg/node"
)

// TestProgramsCompressed checks, on the conformance sample's render, what export.Tree.AddCompressedFile is for: the
// files aio.ign carries gzip-compressed are the node's four programs, no plain file of the node repeats any part of
// them (so xz, which compresses aio.ign whole in live.ign, would find nothing in them to share), and in aio.ign
// each is gzip in base64 that gives back the very file, while every other file has no compression.
func TestProgramsCompressed(t *testing.T) {
	testtools.Long(t, "renders the whole cluster")
	r, err := rendertest.SNO()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{node.AIOKubeScript, node.AIOUpdateScript, node.ApproverScript, node.PodNetworkScript}
	slices.Sort(want)
	var compressed []string
	files := r.Tree.Files()
	for _, f := range files {
		if f.Compressed {
			compressed = append(compressed, f.Path)
		}
	}
	if !slices.Equal(compressed, want) {
		t.Fatalf("compressed files %v, want the node's programs %v", compressed, want)
	}

	// Hardly any 64-byte window of a program (at every 16th byte) is found in a plain file: a path the program
	// defaults to may also be in its settings file, but no stretch of text.
	const window, stride = 64, 16
	for _, f := range files {
		if !f.Compressed {
			continue
		}
		var windows, shared int
		var where []string
		for i := 0; i+window <= len(f.Contents); i += stride {
			windows++
			w := f.Contents[i : i+window]
			for _, g := range files {
				if !g.Compressed && bytes.Contains(g.Contents, w) {
					shared++
					where = append(where, fmt.Sprintf("%s holds bytes %d-%d", g.Path, i, i+window))
					break
				}
			}
		}
		if shared*100 > windows {
			t.Errorf("%s: %d of its %d windows are in plain files, over 1 %%: %s", f.Path, shared, windows, strings.Join(where, "; "))
		}
	}

	raw, err := os.ReadFile(filepath.Join(r.Dir, "aio.ign"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Storage struct {
			Files []struct {
				Path     string
				Contents struct {
					Source      string
					Compression *string
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range cfg.Storage.Files {
		isProgram := slices.Contains(want, f.Path)
		if !isProgram {
			if f.Contents.Compression != nil {
				t.Errorf("%s: compression %q in aio.ign", f.Path, *f.Contents.Compression)
			}
			continue
		}
		n++
		if f.Contents.Compression == nil || *f.Contents.Compression != "gzip" {
			t.Errorf("%s: compression %v in aio.ign, want gzip", f.Path, f.Contents.Compression)
			continue
		}
		z, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(f.Contents.Source, "data:;base64,"))
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		nf, _ := r.File(f.Path)
		if !bytes.Equal(got, nf.Contents) || len(got) == 0 {
			t.Errorf("%s: aio.ign gives %d bytes, the node file is %d", f.Path, len(got), len(nf.Contents))
		}
	}
	if n != len(want) {
		t.Errorf("aio.ign holds %d of the %d programs", n, len(want))
	}
}
