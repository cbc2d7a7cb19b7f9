// Package registries says where a node pulls an image from: the pull sources, in the order CRI-O tries them, that
// containers-registries.conf(5) gives for the image, resolved by the library CRI-O itself resolves them with
// (go.podman.io/image/v5's pkg/sysregistriesv2, through which c/image's docker transport finds its endpoints:
// docker/docker_image_src.go newImageSource, docker/docker_client.go for a blocked registry).
package registries

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"
)

// Source is one place CRI-O tries for an image.
type Source struct {
	// Ref is the reference pulled there (a mirror's rewritten one).
	Ref string
	// Mirror says the source is one of the registry's mirrors, not the image's own registry.
	Mirror bool
	// Blocked says registries.conf blocks the source's registry (CRI-O refuses to contact it).
	Blocked bool
}

// Pull is where an image is pulled from.
type Pull struct {
	// Image is the image as named.
	Image string
	// Digest says the image is named by digest.
	Digest bool
	// Sources are the places tried, in order (the image's own registry last).
	Sources []Source
}

// Reachable are the sources CRI-O may contact (not blocked).
func (p Pull) Reachable() []Source {
	var out []Source
	for _, s := range p.Sources {
		if !s.Blocked {
			out = append(out, s)
		}
	}
	return out
}

// ViaMirrorOnly says every source CRI-O may contact is a mirror (and there is one).
func (p Pull) ViaMirrorOnly() bool {
	r := p.Reachable()
	for _, s := range r {
		if !s.Mirror {
			return false
		}
	}
	return len(r) > 0
}

// The library keeps the configurations it parsed in a process-wide cache keyed by path: one resolution at a time,
// each from its own file, the cache emptied after it.
var mu sync.Mutex

// Resolve gives each image's pull sources under the registries.conf contents conf ("" or nil: no configuration,
// each image from its own registry). An image that is not a valid reference is an error naming it.
func Resolve(conf []byte, images []string) ([]Pull, error) {
	mu.Lock()
	defer mu.Unlock()
	dir, err := os.MkdirTemp("", "registries-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "registries.conf")
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		return nil, err
	}
	defer sysregistriesv2.InvalidateCache()
	// The drop-in directory is one that does not exist: only conf counts, never this machine's configuration.
	sys := &types.SystemContext{SystemRegistriesConfPath: path, SystemRegistriesConfDirPath: filepath.Join(dir, "none.d")}
	if _, err := sysregistriesv2.TryUpdatingCache(sys); err != nil {
		return nil, fmt.Errorf("registries.conf: %w", err)
	}
	out := make([]Pull, 0, len(images))
	for _, image := range images {
		ref, err := reference.ParseNormalizedNamed(image)
		if err != nil {
			return nil, fmt.Errorf("image %q: %w", image, err)
		}
		ref = reference.TagNameOnly(ref)
		_, digest := ref.(reference.Canonical)
		p := Pull{Image: image, Digest: digest}
		reg, err := sysregistriesv2.FindRegistry(sys, ref.Name())
		if err != nil {
			return nil, fmt.Errorf("registries.conf: %w", err)
		}
		if reg == nil {
			p.Sources = []Source{{Ref: ref.String()}}
			out = append(out, p)
			continue
		}
		sources, err := reg.PullSourcesFromReference(ref)
		if err != nil {
			return nil, fmt.Errorf("image %q: %w", image, err)
		}
		for i, s := range sources {
			src := Source{Ref: s.Reference.String(), Mirror: i < len(sources)-1}
			at, err := sysregistriesv2.FindRegistry(sys, s.Reference.Name())
			if err != nil {
				return nil, fmt.Errorf("registries.conf: %w", err)
			}
			src.Blocked = at != nil && at.Blocked
			p.Sources = append(p.Sources, src)
		}
		out = append(out, p)
	}
	return out, nil
}
