package export

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
)

// TestVendoredCRDsMatchThePinnedModule: manifests/crds holds exactly what hack/synccrds selects from the pinned
// openshift/api, byte for byte.
func TestVendoredCRDsMatchThePinnedModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	files, err := ReadCRDSources(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	want, err := SelectCRDSources(files)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := filepath.Glob(filepath.Join("..", "..", "manifests", "crds", "*.crd.yaml"))
	var names []string
	for _, g := range got {
		names = append(names, filepath.Base(g))
	}
	sort.Strings(names)
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Fatalf("manifests/crds is stale; run go run ./hack/synccrds\nhave %v\nwant %v", names, want)
	}
	for _, n := range want {
		raw, err := manifests.Read("crds/" + n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, files[n]) {
			t.Errorf("manifests/crds/%s differs from the pinned module's; run go run ./hack/synccrds", n)
		}
	}
}

// TestVendoredCRDHeaders: the header vendoredCRDs reads of every vendored CRD (the part before spec.versions) says
// what the whole file says, and the object parsed on first use is the whole file.
func TestVendoredCRDHeaders(t *testing.T) {
	vendored, err := vendoredCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(vendored) == 0 {
		t.Fatal("no vendored CRDs")
	}
	for _, h := range vendored {
		raw, err := manifests.Read("crds/" + h.name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte("\n  versions:\n")) || !bytes.Equal(h.raw, raw) {
			t.Errorf("%s: not read as laid out by openshift/api (metadata, spec.group, spec.names, then spec.versions)", h.name)
		}
		full, err := parseCRD(h.name, raw)
		if err != nil {
			t.Fatal(err)
		}
		if h.groupKind != full.groupKind || !reflect.DeepEqual(h.profiles, full.profiles) || !reflect.DeepEqual(h.featureSets, full.featureSets) {
			t.Errorf("%s: header %s %v %v, whole file %s %v %v", h.name, h.groupKind, h.profiles, h.featureSets, full.groupKind, full.profiles, full.featureSets)
		}
		var want map[string]interface{}
		if err := yaml.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := h.object()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the object parsed on first use is not the whole file", h.name)
		}
	}
}

func TestCRDsForExportedKinds(t *testing.T) {
	ms := []Manifest{
		{GVK: schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Infrastructure"}},
		{GVK: schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Infrastructure"}},
		{GVK: schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "IngressController"}},
		{GVK: schema.GroupVersionKind{Group: "", Version: "v1", Kind: "ConfigMap"}},
	}
	for _, fs := range []string{"", "TechPreviewNoUpgrade", "CustomNoUpgrade"} {
		crds, err := CRDs(ms, fs)
		if err != nil {
			t.Fatalf("%q: %v", fs, err)
		}
		if len(crds) != 2 {
			t.Fatalf("%q: %d CRDs, want 2", fs, len(crds))
		}
		if crds[0].Name != "infrastructures.config.openshift.io" || !strings.HasPrefix(crds[0].File, "01_cluster_customresourcedefinition.apiextensions.k8s.io_") {
			t.Errorf("%q: first CRD %s %s", fs, crds[0].Name, crds[0].File)
		}
		want := fs
		if want == "" {
			want = "Default"
		}
		ann, _ := crds[0].Object["metadata"].(map[string]interface{})["annotations"].(map[string]interface{})
		if ann["release.openshift.io/feature-set"] != want {
			t.Errorf("%q: picked the %v variant", fs, ann["release.openshift.io/feature-set"])
		}
	}
	if _, err := CRDs([]Manifest{{GVK: schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "ClusterVersion"}}}, ""); err == nil {
		t.Errorf("an exported custom kind without a vendored CRD was accepted")
	}
}

func TestPruneToCRDs(t *testing.T) {
	obj := map[string]interface{}{
		"apiVersion": "config.openshift.io/v1", "kind": "Scheduler",
		"metadata": map[string]interface{}{"name": "cluster"},
		"spec": map[string]interface{}{
			"mastersSchedulable":    true,
			"profileCustomizations": map[string]interface{}{},
			"notAField":             "x",
		},
	}
	m, err := fromMap(obj)
	if err != nil {
		t.Fatal(err)
	}
	ms := []Manifest{m}
	crds, err := CRDs(ms, "")
	if err != nil {
		t.Fatal(err)
	}
	pruned, err := PruneToCRDs(ms, crds)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(pruned[m.File], ",")
	if !strings.Contains(got, "spec.notAField") || !strings.Contains(string(ms[0].YAML), "mastersSchedulable: true") || strings.Contains(string(ms[0].YAML), "notAField") {
		t.Errorf("pruned %q, yaml:\n%s", got, ms[0].YAML)
	}
	// An unserved version is an error, not a silent export.
	m.GVK.Version = "v9"
	if _, err := PruneToCRDs([]Manifest{m}, crds); err == nil {
		t.Error("an object of a version the CRD does not serve was accepted")
	}
}

// TestCRDsAreNotShared: the vendored CRDs are parsed once per process, but every call gets its own objects, so a
// render changing its manifests cannot leak into the next render's.
func TestCRDsAreNotShared(t *testing.T) {
	ms := []Manifest{{GVK: schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Proxy"}}}
	a, err := CRDs(ms, "")
	if err != nil || len(a) != 1 {
		t.Fatalf("%d CRDs, %v", len(a), err)
	}
	delete(a[0].Object, "spec")
	a[0].YAML[0] = '#'
	b, err := CRDs(ms, "")
	if err != nil || len(b) != 1 {
		t.Fatalf("%d CRDs, %v", len(b), err)
	}
	if _, ok := b[0].Object["spec"]; !ok || b[0].YAML[0] == '#' {
		t.Error("a change to one call's CRD shows in the next call's")
	}
}

// TestCRDsOnTheNodeAsJSON: every vendored CRD's node form (Manifest.NodeBytes) is compact JSON that parses, as YAML
// (what oc and kubectl read) and as JSON, to the object its YAML manifest parses to without the schemas'
// descriptions (found by the API's own types here, not by the map walk the render uses), without HTML escapes,
// and is shorter once escaped for a data URL (the reason it exists). The manifest keeps the descriptions.
func TestCRDsOnTheNodeAsJSON(t *testing.T) {
	files, err := vendoredCRDs()
	if err != nil {
		t.Fatal(err)
	}
	var yamlEscaped, jsonEscaped, described int
	for _, f := range files {
		m, err := f.manifest()
		if err != nil {
			t.Fatal(err)
		}
		node := m.NodeBytes()
		if !bytes.Equal(node, m.Compact) || len(node) == 0 || node[0] != '{' || !bytes.HasSuffix(node, []byte("}\n")) || bytes.Count(node, []byte("\n")) != 1 {
			t.Fatalf("%s: the node form is not one line of JSON: %.80q", f.name, node)
		}
		if bytes.Contains(node, []byte(`\u003c`)) || bytes.Contains(node, []byte(`\u0026`)) {
			t.Errorf("%s: HTML escapes in the node form", f.name)
		}
		var fromYAML, asYAML, asJSON apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(m.YAML, &fromYAML); err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(node, &asYAML); err != nil {
			t.Fatalf("%s: the node form is not YAML: %v", f.name, err)
		}
		if err := json.Unmarshal(node, &asJSON); err != nil {
			t.Fatalf("%s: the node form is not JSON: %v", f.name, err)
		}
		n := 0
		for i := range fromYAML.Spec.Versions {
			if v := fromYAML.Spec.Versions[i].Schema; v != nil && v.OpenAPIV3Schema != nil {
				n += clearDescriptions(v.OpenAPIV3Schema)
			}
		}
		described += n
		if !reflect.DeepEqual(fromYAML, asYAML) || !reflect.DeepEqual(fromYAML, asJSON) {
			t.Errorf("%s: the node form is another object than the manifest without its %d descriptions", f.name, n)
		}
		if !bytes.Contains(m.YAML, []byte("description:")) {
			t.Errorf("%s: the manifest lost its descriptions", f.name)
		}
		yamlEscaped += escapedLen(m.YAML)
		jsonEscaped += escapedLen(node)
	}
	if len(files) < len(CRDKinds) || jsonEscaped*3 > yamlEscaped || described == 0 {
		t.Errorf("%d CRDs (%d descriptions): %d bytes escaped as JSON against %d as YAML: want at most a third", len(files), described, jsonEscaped, yamlEscaped)
	}
	t.Logf("%d CRDs: %d bytes escaped on the node, %d as YAML; %d descriptions left out", len(files), jsonEscaped, yamlEscaped, described)
}

// clearDescriptions clears the description of s and of every schema it holds, by the API's types, and counts them.
func clearDescriptions(s *apiextensionsv1.JSONSchemaProps) int {
	n := 0
	if s.Description != "" {
		s.Description = ""
		n++
	}
	for _, m := range []map[string]apiextensionsv1.JSONSchemaProps{s.Properties, s.PatternProperties, s.Definitions} {
		for k, sub := range m {
			n += clearDescriptions(&sub)
			m[k] = sub
		}
	}
	for k, d := range s.Dependencies {
		if d.Schema != nil {
			n += clearDescriptions(d.Schema)
			s.Dependencies[k] = d
		}
	}
	if s.Items != nil {
		if s.Items.Schema != nil {
			n += clearDescriptions(s.Items.Schema)
		}
		for i := range s.Items.JSONSchemas {
			n += clearDescriptions(&s.Items.JSONSchemas[i])
		}
	}
	for _, l := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range l {
			n += clearDescriptions(&l[i])
		}
	}
	for _, b := range []*apiextensionsv1.JSONSchemaPropsOrBool{s.AdditionalProperties, s.AdditionalItems} {
		if b != nil && b.Schema != nil {
			n += clearDescriptions(b.Schema)
		}
	}
	if s.Not != nil {
		n += clearDescriptions(s.Not)
	}
	return n
}

// TestNodeFormKeepsFieldsNamedDescription: a field named "description" (a key of properties) stays in the node
// form, without its own description, in every place a schema can hold schemas; the manifest is not changed.
func TestNodeFormKeepsFieldsNamedDescription(t *testing.T) {
	const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        description: A widget.
        type: object
        properties:
          description: {type: string, description: The widget's description.}
          spec:
            type: object
            description: Spec.
            additionalProperties: {type: string, description: A value.}
            properties:
              list:
                type: array
                description: A list.
                items: {type: object, description: An item., properties: {description: {type: string}}}
              any:
                description: One of.
                anyOf: [{type: integer, description: A number.}, {type: string, description: A name.}]
                x-kubernetes-int-or-string: true
`
	var obj map[string]interface{}
	if err := yaml.Unmarshal([]byte(crd), &obj); err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(obj)
	node, err := json.Marshal(withoutSchemaDescriptions(obj))
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(obj); !bytes.Equal(before, after) {
		t.Errorf("the manifest's object changed:\n%s\n%s", before, after)
	}
	want := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},` +
		`"spec":{"group":"example.com","names":{"kind":"Widget","plural":"widgets"},"scope":"Cluster","versions":[{"name":"v1",` +
		`"schema":{"openAPIV3Schema":{"properties":{"description":{"type":"string"},"spec":{"additionalProperties":{"type":"string"},` +
		`"properties":{"any":{"anyOf":[{"type":"integer"},{"type":"string"}],"x-kubernetes-int-or-string":true},` +
		`"list":{"items":{"properties":{"description":{"type":"string"}},"type":"object"},"type":"array"}},"type":"object"}},` +
		`"type":"object"}},"served":true,"storage":true}]}}`
	if string(node) != want {
		t.Errorf("node form:\n%s\nwant:\n%s", node, want)
	}
}

// TestNodeBytesWithoutCompact: a manifest without a compact form is its YAML on the node.
func TestNodeBytesWithoutCompact(t *testing.T) {
	m := Manifest{YAML: []byte("kind: ConfigMap\n")}
	if string(m.NodeBytes()) != "kind: ConfigMap\n" {
		t.Errorf("NodeBytes %q", m.NodeBytes())
	}
}
