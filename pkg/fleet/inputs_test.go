package fleet

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/render-static/render-static/pkg/pipeline"
)

// TestSiteFieldsAreTheTablesPerSiteInputs: a site's fields (a list's entries and site.yaml) are exactly the input
// table's per-site inputs, by name, so that an input added to the table as a site's is one a site can give.
func TestSiteFieldsAreTheTablesPerSiteInputs(t *testing.T) {
	var want []string
	for _, in := range pipeline.Inputs {
		if in.Fleet == pipeline.PerSite {
			want = append(want, in.Name)
		}
	}
	slices.Sort(want)
	for _, c := range []struct {
		what string
		typ  reflect.Type
		more []string // fields that are not inputs, or inputs a site's folder gives
	}{
		{"a list's site", reflect.TypeFor[Site](), []string{"name"}},
		{"site.yaml", reflect.TypeFor[siteFields](), []string{pipeline.InInstallConfig}},
	} {
		var got []string
		for f := range c.typ.Fields() {
			if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag != "" {
				got = append(got, tag)
			}
		}
		for _, m := range c.more {
			if i := slices.Index(got, m); i >= 0 {
				got = slices.Delete(got, i, i+1)
			} else if m != pipeline.InInstallConfig {
				t.Errorf("%s has no field %s", c.what, m)
			}
		}
		if c.what == "site.yaml" {
			got = append(got, pipeline.InInstallConfig) // the install-config beside it
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s has fields %q; the input table's per-site inputs are %q", c.what, got, want)
		}
	}
}
