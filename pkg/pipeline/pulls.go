package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"go.podman.io/image/v5/docker/reference"

	"github.com/render-static/render-static/internal/registries"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/node"
)

// What the nodes pull, and from where: every image the control-plane node, the workers and an update pull
// (components.PulledImages), each resolved through the registries.conf the nodes get (node.RegistriesConf: the
// install-config's mirrors, every one digest-only) as CRI-O resolves it (internal/registries). Without mirrors the
// node keeps RHCOS's registries.conf, and every image comes from its own registry.

// Pulls is what the nodes pull, as the summary says it.
type Pulls struct {
	// Images are the pulled images' keys (the --images keys), in components.PulledImages' order, and Specs their
	// pull specs.
	Images, Specs []string
	// Mirrored says whether the install-config names mirrors (a registries.conf is rendered).
	Mirrored bool
	// Through are the mirror hosts the images pulled through a mirror are pulled from first, in order of first use;
	// ViaMirror those images' keys.
	Through, ViaMirror []string
	// Direct are the images' keys pulled from their own registry; Blocked those no source serves (their registry
	// blocked, no mirror for them).
	Direct, Blocked []string
	// ByTag counts the images named by tag.
	ByTag int
	// Warnings name every image never pulled through a mirror when the install-config names mirrors.
	Warnings []string
}

// zeroDigest names an image by some digest, to ask whether its repository has mirrors at all.
const zeroDigest = "@sha256:0000000000000000000000000000000000000000000000000000000000000000"

// imagePulls resolves what the nodes of in pull.
func imagePulls(in *clusterconfig.Inputs) (Pulls, error) {
	var p Pulls
	p.Images = components.PulledImages(in.Flavor, in.InstallConfig.BuiltinPodNetwork())
	for _, k := range p.Images {
		p.Specs = append(p.Specs, in.Images.Image(k))
	}
	conf := node.RegistriesConf(in.InstallConfig)
	p.Mirrored = conf != nil
	// Each image, and its repository by digest: whether a tag's repository has (digest-only) mirrors.
	var asked []string
	for _, s := range p.Specs {
		ref, err := reference.ParseNormalizedNamed(s)
		if err != nil {
			return p, fmt.Errorf("image %q: %w", s, err)
		}
		asked = append(asked, s, ref.Name()+zeroDigest)
	}
	if !p.Mirrored {
		conf = []byte{} // RHCOS's file names no mirror: every image from its own registry
	}
	pulls, err := registries.Resolve(conf, asked)
	if err != nil {
		return p, err
	}
	for i, k := range p.Images {
		pull, twin := pulls[2*i], pulls[2*i+1]
		said := fmt.Sprintf("%s (%s)", k, p.Specs[i])
		if !pull.Digest {
			p.ByTag++
		}
		reachable := pull.Reachable()
		if len(reachable) > 0 && reachable[0].Mirror {
			if host := reference.Domain(mustParse(reachable[0].Ref)); !slices.Contains(p.Through, host) {
				p.Through = append(p.Through, host)
			}
			p.ViaMirror = append(p.ViaMirror, k)
			continue
		}
		if len(reachable) == 0 {
			p.Blocked = append(p.Blocked, k)
		} else {
			p.Direct = append(p.Direct, k)
		}
		if !p.Mirrored {
			continue
		}
		repo := mustParse(pull.Sources[0].Ref).Name()
		why := fmt.Sprintf("the install-config names no mirror for %s", repo)
		if !pull.Digest && hasMirror(twin) {
			why = fmt.Sprintf("it is named by tag, and the install-config's mirrors of %s are digest-only", repo)
		}
		then := "the node pulls it from " + reference.Domain(mustParse(pull.Sources[0].Ref))
		if len(reachable) == 0 {
			then = "and its source is blocked (sourcePolicy NeverContactSource): the node cannot pull it"
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("image %s is never pulled through a mirror: %s; %s (give it by digest with %s or %s, and mirror it)",
			said, why, then, installconfig.Ref(InReleaseInfo), installconfig.Ref(InImages)))
	}
	return p, nil
}

func hasMirror(p registries.Pull) bool {
	return slices.ContainsFunc(p.Sources, func(s registries.Source) bool { return s.Mirror })
}

// mustParse parses a reference Resolve wrote.
func mustParse(s string) reference.Named {
	ref, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		panic(fmt.Sprintf("registries.Resolve wrote %q: %v", s, err))
	}
	return ref
}

// Line is the summary's images line: how many images the nodes pull, by digest or tag, and from where.
func (p Pulls) Line() string {
	n := len(p.Images)
	how := "all by digest"
	switch {
	case p.ByTag == n:
		how = "all by tag"
	case p.ByTag > 0:
		how = fmt.Sprintf("%d by digest, %d by tag", n-p.ByTag, p.ByTag)
	}
	if !p.Mirrored {
		return fmt.Sprintf("pulls %d images, %s, each from its own registry (the install-config names no mirror)", n, how)
	}
	if len(p.ViaMirror) == n {
		return fmt.Sprintf("pulls %d images, %s through %s", n, how, strings.Join(p.Through, ", "))
	}
	parts := []string{}
	if len(p.ViaMirror) > 0 {
		parts = append(parts, fmt.Sprintf("%d by digest through %s", len(p.ViaMirror), strings.Join(p.Through, ", ")))
	}
	if len(p.Direct) > 0 {
		parts = append(parts, fmt.Sprintf("%d from their own registries (the internet), not through a mirror (see the warnings): %s", len(p.Direct), strings.Join(p.Direct, ", ")))
	}
	if len(p.Blocked) > 0 {
		parts = append(parts, fmt.Sprintf("%d from nowhere, their source blocked and no mirror for them (see the warnings): %s", len(p.Blocked), strings.Join(p.Blocked, ", ")))
	}
	return fmt.Sprintf("pulls %d images: %s", n, strings.Join(parts, "; "))
}
