// Command oci-image writes one image archive holding several single-layer images built from local files, for
// `ctr images import`, or an OCI image layout of them, for the e2e mirror (oci-registry serves a layout's images
// by digest). Nothing can be pulled on the e2e machine, so every image the rendered static pods name is made here
// from the binaries built from the Go module proxy.
//
//	oci-image -o images.tar -i 'registry.k8s.io/etcd:3.6.5-0=/bin/etcd:/usr/local/bin/etcd,/bin/etcdctl:/usr/local/bin/etcdctl' ...
//	oci-image -layout DIR -i 'etcd-upstream=/bin/etcd:/usr/local/bin/etcd,...' ...
//
// Each -i is NAME=SRC:DST[,SRC:DST...]; files are added with mode 0755 (they are the images' executables).
// The first DST of an image is its entrypoint. The archive is written with go-containerregistry's tarball
// package (a `docker save` archive with one manifest per name), which containerd imports under those names.
// The layout (go-containerregistry's layout package, OCI image-layout 1.0) has each image in its index.json under
// its NAME (annotation org.opencontainers.image.ref.name) with the digest of its manifest, exactly as written: a
// registry serving those bytes serves that digest.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type images []string

func (i *images) String() string     { return strings.Join(*i, " ") }
func (i *images) Set(v string) error { *i = append(*i, v); return nil }

func main() {
	var out, dir string
	var specs images
	flag.StringVar(&out, "o", "", "the archive to write")
	flag.StringVar(&dir, "layout", "", "the OCI image layout directory to write (it must not exist)")
	flag.Var(&specs, "i", "NAME=SRC:DST[,SRC:DST...] (repeatable)")
	flag.Parse()
	if (out == "") == (dir == "") || len(specs) == 0 {
		fmt.Fprintln(os.Stderr, "usage: oci-image -o ARCHIVE|-layout DIR -i NAME=SRC:DST[,SRC:DST...] ...")
		os.Exit(2)
	}
	refs := map[name.Reference]v1.Image{}
	var names []string
	for _, s := range specs {
		ref, img, err := build(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "oci-image: %s: %v\n", s, err)
			os.Exit(1)
		}
		refs[ref] = img
		n, _, _ := strings.Cut(s, "=")
		names = append(names, n)
	}
	if dir != "" {
		if err := writeLayout(dir, names, refs); err != nil {
			fmt.Fprintf(os.Stderr, "oci-image: writing %s: %v\n", dir, err)
			os.Exit(1)
		}
		return
	}
	tmp := out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		fmt.Fprintf(os.Stderr, "oci-image: writing %s: %v\n", out, err)
		os.Exit(1)
	}
	if err := os.Rename(tmp, out); err != nil {
		fmt.Fprintf(os.Stderr, "oci-image: %v\n", err)
		os.Exit(1)
	}
}

// writeLayout writes the images into a new layout at dir (built in dir.tmp, then renamed) and prints each
// image's NAME and manifest digest.
func writeLayout(dir string, names []string, refs map[name.Reference]v1.Image) error {
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	byName := map[string]v1.Image{}
	for ref, img := range refs {
		byName[ref.String()] = img
	}
	for _, n := range names {
		ref, _ := name.ParseReference(n, name.WeakValidation)
		img := byName[ref.String()]
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": n})); err != nil {
			return err
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s\n", n, d)
	}
	return os.Rename(tmp, dir)
}

func build(spec string) (name.Reference, v1.Image, error) {
	n, files, ok := strings.Cut(spec, "=")
	if !ok {
		return nil, nil, fmt.Errorf("want NAME=SRC:DST[,SRC:DST...]")
	}
	ref, err := name.ParseReference(n, name.WeakValidation)
	if err != nil {
		return nil, nil, err
	}
	var layerFiles []layerFile
	for _, f := range strings.Split(files, ",") {
		src, dst, ok := strings.Cut(f, ":")
		if !ok || !strings.HasPrefix(dst, "/") {
			return nil, nil, fmt.Errorf("%q: want SRC:/ABSOLUTE/DST", f)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, nil, err
		}
		layerFiles = append(layerFiles, layerFile{path: dst, data: data})
	}
	layer, err := newLayer(layerFiles)
	if err != nil {
		return nil, nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = []string{layerFiles[0].path}
	// Docker's default PATH: kube-proxy finds iptables in /usr/sbin (as in its upstream image).
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	img, err = mutate.ConfigFile(img, cf)
	return ref, img, err
}

type layerFile struct {
	path string
	data []byte
}

// newLayer is one layer holding the files (mode 0755, root-owned, a fixed mtime so the image is reproducible),
// their parent directories and a world-writable /tmp. crane.Layer would do, but it writes mode 0 files, and
// these are executables. The tar stream is written by the standard library's archive/tar; go-containerregistry
// computes digests and writes manifests and the archive.
func newLayer(files []layerFile) (v1.Layer, error) {
	b := &bytes.Buffer{}
	w := tar.NewWriter(b)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	addDir := func(d string, mode int64) error {
		if dirs[d] {
			return nil
		}
		dirs[d] = true
		return w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: mode, ModTime: epoch})
	}
	if err := addDir("/tmp", 0o1777); err != nil {
		return nil, err
	}
	// Sorted on a copy: the caller's first file is the image's entrypoint.
	files = append([]layerFile(nil), files...)
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	for _, f := range files {
		var parents []string
		for d := path.Dir(f.path); d != "/"; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := addDir(d, 0o755); err != nil {
				return nil, err
			}
		}
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.path, "/"), Mode: 0o755,
			Size: int64(len(f.data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	data := b.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}
