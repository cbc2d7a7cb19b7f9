package components_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/emulate"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/loops"
	"github.com/render-static/render-static/pkg/node"
)

// TestRegistry: names are unique, every component's upstream image is one of its images, the images of all
// components and the node side agree, and the constructors build components with the registered names.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range components.Registry {
		if r.Name == "" || seen[r.Name] {
			t.Errorf("component name %q empty or registered twice", r.Name)
		}
		seen[r.Name] = true
		if r.Images[r.UpstreamImage] == "" {
			t.Errorf("%s: upstream image %q is not one of its images %v", r.Name, r.UpstreamImage, r.Images.Names())
		}
		if len(r.Namespaces) == 0 || r.New == nil {
			t.Errorf("%s: no namespaces or no constructor", r.Name)
		}
	}
	images := components.DefaultImages() // panics on two different defaults for one image
	for _, r := range components.Registry {
		for name := range r.Images {
			if images[name] == "" {
				t.Errorf("DefaultImages misses %s's image %s", r.Name, name)
			}
		}
	}
	for name := range node.Images {
		if images[name] == "" {
			t.Errorf("DefaultImages misses the node side's image %s", name)
		}
	}

	c, err := loops.NewCluster(components.Namespaces(), clusterconfig.DynamicKinds)
	if err != nil {
		t.Fatal(err)
	}
	in := &clusterconfig.Inputs{InstallConfig: &installconfig.InstallConfig{}, Images: images}
	built := components.Build(c, in)
	if got, want := len(built), len(components.Registry); got != want {
		t.Fatalf("Build made %d components, want %d", got, want)
	}
	for i, comp := range built {
		if comp.Name() != components.Names()[i] {
			t.Errorf("component %d is %s, registered as %s", i, comp.Name(), components.Names()[i])
		}
	}
}

// TestInputsProducers: every producer an input names exists: a registered component, the installer's seeds
// ("installer") or an emulation loop of pkg/emulate; a component's own outputs are not its inputs.
func TestInputsProducers(t *testing.T) {
	c, err := loops.NewCluster(components.Namespaces(), clusterconfig.DynamicKinds)
	if err != nil {
		t.Fatal(err)
	}
	in := &clusterconfig.Inputs{InstallConfig: &installconfig.InstallConfig{}, Images: components.DefaultImages()}
	producers := map[string]bool{"installer": true}
	for _, l := range emulate.Emulations(c, in) {
		producers[l.Name] = true
	}
	for _, name := range components.Names() {
		producers[name] = true
	}
	for _, r := range components.Registry {
		if len(r.Inputs) == 0 {
			t.Errorf("%s declares no inputs", r.Name)
		}
		for _, i := range r.Inputs {
			switch {
			case !producers[i.From]:
				t.Errorf("%s: input %s: producer %q is no registered component, installer or emulation (known: %s)",
					r.Name, i, i.From, strings.Join(slices.Sorted(maps.Keys(producers)), ", "))
			case i.From == r.Name:
				t.Errorf("%s: input %s is its own output", r.Name, i)
			}
		}
	}
}
