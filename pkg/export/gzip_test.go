package export

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_2/types"
)

// gunzipSource decodes a compressed file's source as Ignition does: the data URL's base64, then gzip.
func gunzipSource(t *testing.T, res types.Resource) []byte {
	t.Helper()
	if res.Compression == nil || *res.Compression != "gzip" {
		t.Fatalf("compression %v, want gzip", res.Compression)
	}
	b64, ok := strings.CutPrefix(*res.Source, "data:;base64,")
	if !ok {
		t.Fatalf("source %.40q is not a base64 data URL", *res.Source)
	}
	z, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "" || !r.ModTime.IsZero() {
		t.Errorf("gzip header names %q and time %v: the source would not be the same for the same contents", r.Name, r.ModTime)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A compressed file reaches aio.ign gzip-compressed and comes back as it was (Ignition's own parse and validation
// pass, and the config is the same on every build); a plain file with the same contents stays plain; the tree
// keeps the flag through Merge and refuses the same path added again with the other flag.
func TestCompressedFile(t *testing.T) {
	script := []byte("#!/bin/bash\n# a program of the node's own\nset -euo pipefail\n" + strings.Repeat("echo \"${1:-x}\" | tr '[:lower:]' '[:upper:]'\n", 40))
	build := func() *Tree {
		tr := NewTree()
		if err := tr.AddCompressedFile("/usr/local/bin/prog", 0o755, script); err != nil {
			t.Fatal(err)
		}
		if err := tr.AddFile("/etc/prog-copy", 0o644, script); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	raw, err := Ignition(build(), IgnitionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseIgnition(t, raw)
	if len(cfg.Storage.Files) != 2 {
		t.Fatalf("files: %+v", cfg.Storage.Files)
	}
	for _, f := range cfg.Storage.Files {
		var got []byte
		switch f.Path {
		case "/usr/local/bin/prog":
			got = gunzipSource(t, f.Contents)
		case "/etc/prog-copy":
			got = decodeSource(t, f.Contents)
			if !strings.HasPrefix(*f.Contents.Source, "data:,") {
				t.Errorf("the plain copy is not plain: %.40q", *f.Contents.Source)
			}
		}
		if !bytes.Equal(got, script) {
			t.Errorf("%s: %q, want %q", f.Path, got, script)
		}
	}
	if again, err := Ignition(build(), IgnitionOptions{}); err != nil || !bytes.Equal(again, raw) {
		t.Errorf("a second build of the same tree differs (%v)", err)
	}

	merged := NewTree()
	if err := merged.Merge(build()); err != nil {
		t.Fatal(err)
	}
	for _, f := range merged.Files() {
		if want := f.Path == "/usr/local/bin/prog"; f.Compressed != want {
			t.Errorf("%s after Merge: compressed %v, want %v", f.Path, f.Compressed, want)
		}
	}
	tr := build()
	if err := tr.AddCompressedFile("/usr/local/bin/prog", 0o755, script); err != nil {
		t.Errorf("adding the same compressed file again: %v", err)
	}
	if err := tr.AddFile("/usr/local/bin/prog", 0o755, script); err == nil || !strings.Contains(err.Error(), "compressed") {
		t.Errorf("adding the compressed file again as plain: %v, want an error", err)
	}
}
