package export

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/manifests"
	"github.com/render-static/render-static/pkg/codec"
)

// CRDKinds are the custom resource kinds a render exports (group/Kind). Their CRDs are vendored, unmodified, from
// the pinned github.com/openshift/api (manifests/crds, written by `go run ./hack/synccrds`), so that the first-boot
// apply can create them before the objects; a render that exports a custom kind not listed here fails.
var CRDKinds = []string{
	"config.openshift.io/APIServer", "config.openshift.io/Authentication", "config.openshift.io/DNS",
	"config.openshift.io/FeatureGate", "config.openshift.io/Image", "config.openshift.io/Infrastructure", "config.openshift.io/Ingress",
	"config.openshift.io/Network", "config.openshift.io/Proxy", "config.openshift.io/Scheduler",
	"operator.openshift.io/Etcd", "operator.openshift.io/IngressController", "operator.openshift.io/KubeAPIServer",
	"operator.openshift.io/KubeControllerManager", "operator.openshift.io/KubeScheduler",
	// The mirror sets of install-config imageDigestSources / imageContentSources.
	"config.openshift.io/ImageDigestMirrorSet", "operator.openshift.io/ImageContentSourcePolicy",
}

// crdSourceDirs are where openshift/api keeps the generated CRDs of the groups above.
var crdSourceDirs = []string{"config/v1/zz_generated.crd-manifests", "operator/v1/zz_generated.crd-manifests",
	"operator/v1alpha1/zz_generated.crd-manifests"}

// groupsWithCRDs are the API groups whose objects need a CRD (everything else is built into kube-apiserver).
var groupsWithCRDs = map[string]bool{"config.openshift.io": true, "operator.openshift.io": true}

type crdFile struct {
	name        string // file name
	groupKind   string
	profiles    map[string]bool // include.release.openshift.io/<profile>: "true"
	featureSets []string        // release.openshift.io/feature-set (comma-separated); none means all

	raw    []byte
	once   sync.Once
	parsed map[string]interface{}
	err    error

	// exported is the CRD as a manifest (fromMap of the parsed object), made once (manifestOnce) and read-only:
	// CRDs hands out copies.
	manifestOnce sync.Once
	exported     Manifest
	exportErr    error
}

// manifest is the CRD's manifest, made on first use (PrefetchCRDs makes those a render will likely export while
// the loops run: marshalling a CRD's schemas is most of what exporting it costs), with its node form
// (Manifest.NodeBytes): compact JSON without the schemas' descriptions. Its Object, YAML and Compact are shared.
func (f *crdFile) manifest() (Manifest, error) {
	f.manifestOnce.Do(func() {
		// Parsed here rather than through object(), whose parse would stay in memory beside the manifest's.
		obj, err := parseVendoredCRD(f.raw)
		if err != nil {
			f.exportErr = fmt.Errorf("%s: %w", f.name, err)
			return
		}
		if f.exported, err = fromMap(obj); err != nil {
			f.exportErr = fmt.Errorf("CRD %s: %w", f.name, err)
			return
		}
		if f.exported.Compact, err = codec.MarshalObjectJSON(withoutSchemaDescriptions(f.exported.Object)); err != nil {
			f.exportErr = fmt.Errorf("CRD %s: %w", f.name, err)
		}
	})
	return f.exported, f.exportErr
}

// object is the whole CRD, parsed on first use (the tests read it; a render uses manifest): a render exports one
// variant of a few kinds, and parsing every vendored CRD (1.5 MB of YAML) was ~0.18 s of CPU in each render-static
// process.
func (f *crdFile) object() (map[string]interface{}, error) {
	f.once.Do(func() {
		if f.parsed, f.err = parseVendoredCRD(f.raw); f.err != nil {
			f.err = fmt.Errorf("%s: %w", f.name, f.err)
		}
	})
	return f.parsed, f.err
}

// parseVendoredCRD is sigs.k8s.io/yaml.Unmarshal of a vendored CRD into a map, without its JSON round trip:
// codec.UnmarshalOwnYAML where the file is in the subset it reads (most vendored CRDs), else codec.UnmarshalYAML.
// Both give exactly what sigs.k8s.io/yaml gives (TestVendoredCRDHeaders compares on every vendored CRD). Each
// render-static process parses the CRDs it exports once (~0.6 MB of YAML for the Default feature set), and with
// sigs.k8s.io/yaml that was a tenth of a re-render's CPU.
func parseVendoredCRD(raw []byte) (map[string]interface{}, error) {
	if m, ok := codec.UnmarshalOwnYAML(raw); ok {
		return m, nil
	}
	return codec.UnmarshalYAML(raw)
}

const selfManagedProfile = "self-managed-high-availability"

// crdHeader is what selecting a CRD reads of it.
type crdHeader struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
	} `json:"spec"`
}

// parseCRD reads a CRD file's kind, annotations, group and kind name (nil when it is not a CRD); the whole object is
// parsed on first use (crdFile.object).
func parseCRD(name string, raw []byte) (*crdFile, error) {
	var crd crdHeader
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return crdFileOf(name, raw, crd), nil
}

// parseCRDHeader is parseCRD reading only the part of the file before spec.versions (the schemas, nearly all of a
// CRD) when the file is laid out as openshift/api generates it (metadata, then spec.group and spec.names, then
// spec.versions); otherwise the whole file. TestVendoredCRDHeaders checks it against parseCRD on every vendored CRD.
func parseCRDHeader(name string, raw []byte) (*crdFile, error) {
	if i := bytes.Index(raw, []byte("\n  versions:\n")); i >= 0 {
		var crd crdHeader
		if err := yaml.Unmarshal(raw[:i+1], &crd); err == nil && crd.Kind == "CustomResourceDefinition" &&
			crd.Spec.Group != "" && crd.Spec.Names.Kind != "" {
			return crdFileOf(name, raw, crd), nil
		}
	}
	return parseCRD(name, raw)
}

func crdFileOf(name string, raw []byte, crd crdHeader) *crdFile {
	if crd.Kind != "CustomResourceDefinition" {
		return nil
	}
	f := &crdFile{name: name, groupKind: crd.Spec.Group + "/" + crd.Spec.Names.Kind, profiles: map[string]bool{}, raw: raw}
	for k, v := range crd.Metadata.Annotations {
		if p, ok := strings.CutPrefix(k, "include.release.openshift.io/"); ok && v == "true" {
			f.profiles[p] = true
		}
		if k == "release.openshift.io/feature-set" {
			for _, s := range strings.Split(v, ",") {
				f.featureSets = append(f.featureSets, strings.TrimSpace(s))
			}
		}
	}
	return f
}

// forSelfManaged: a CRD without profile annotations applies everywhere.
func (f *crdFile) forSelfManaged() bool {
	return len(f.profiles) == 0 || f.profiles[selfManagedProfile]
}

func (f *crdFile) forFeatureSet(fs string) bool {
	if len(f.featureSets) == 0 {
		return true
	}
	for _, s := range f.featureSets {
		if s == fs {
			return true
		}
	}
	return false
}

// SelectCRDSources returns the file names, among the given CRD files, of every variant of every CRDKinds kind a
// self-managed cluster may use (all feature sets). It is what hack/synccrds vendors.
func SelectCRDSources(files map[string][]byte) ([]string, error) {
	want := map[string]bool{}
	for _, k := range CRDKinds {
		want[k] = true
	}
	found := map[string]bool{}
	var out []string
	for name, raw := range files {
		f, err := parseCRD(name, raw)
		if err != nil {
			return nil, err
		}
		if f == nil || !want[f.groupKind] || !f.forSelfManaged() {
			continue
		}
		found[f.groupKind] = true
		out = append(out, name)
	}
	for _, k := range CRDKinds {
		if !found[k] {
			return nil, fmt.Errorf("no CRD for %s in the openshift/api sources", k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ReadCRDSources reads every CRD file of the pinned openshift/api module checked out at moduleDir.
func ReadCRDSources(moduleDir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, d := range crdSourceDirs {
		entries, err := os.ReadDir(filepath.Join(moduleDir, d))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".crd.yaml") {
				continue
			}
			raw, err := os.ReadFile(filepath.Join(moduleDir, d, e.Name()))
			if err != nil {
				return nil, err
			}
			out[e.Name()] = raw
		}
	}
	return out, nil
}

// CRDs returns the CRD manifests the exported objects need: for every kind of a group served by CRDs, the vendored
// variant for a self-managed cluster and the install-config's feature set ("" is Default). An exported kind with
// no CRD, or with more than one candidate, is an error.
func CRDs(ms []Manifest, featureSet string) ([]Manifest, error) {
	if featureSet == "" {
		featureSet = "Default"
	}
	byKind := map[string][]*crdFile{}
	vendored, err := vendoredCRDs()
	if err != nil {
		return nil, err
	}
	for _, f := range vendored {
		if f.forSelfManaged() && f.forFeatureSet(featureSet) {
			byKind[f.groupKind] = append(byKind[f.groupKind], f)
		}
	}
	needed := map[string]bool{}
	for _, m := range ms {
		if groupsWithCRDs[m.GVK.Group] {
			needed[m.GVK.Group+"/"+m.GVK.Kind] = true
		}
	}
	var files []*crdFile
	for _, k := range slices.Sorted(maps.Keys(needed)) {
		cands := byKind[k]
		if len(cands) != 1 {
			return nil, fmt.Errorf("exported kind %s needs exactly one CRD for feature set %s, found %d (see export.CRDKinds and hack/synccrds)", k, featureSet, len(cands))
		}
		files = append(files, cands[0])
	}
	out := make([]Manifest, len(files))
	if err := Parallel(len(files), func(i int) error {
		m, err := files[i].manifest()
		if err != nil {
			return err
		}
		// The manifests of the vendored CRDs are shared by every render: the caller gets its own copy.
		m.Object = k8sruntime.DeepCopyJSON(m.Object)
		m.YAML = bytes.Clone(m.YAML)
		m.Compact = bytes.Clone(m.Compact)
		out[i] = m
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// PrefetchCRDs parses and marshals, ahead of CRDs, the vendored CRDs a render of that feature set ("" is Default)
// may export: a render calls it on a goroutine of its own while its loops run (on a re-render they keep one core
// busy, not two). CRDs makes whatever it needs that is not made yet, so a wrong guess costs only the CPU.
func PrefetchCRDs(featureSet string) {
	if featureSet == "" {
		featureSet = "Default"
	}
	vendored, err := vendoredCRDs()
	if err != nil {
		return // CRDs reports it
	}
	for _, f := range vendored {
		if f.forSelfManaged() && f.forFeatureSet(featureSet) {
			_, _ = f.manifest()
		}
	}
}

// FeatureSet is spec.featureSet of the exported featuregates.config.openshift.io/cluster ("" when there is none,
// which CRDs takes as Default): the CRD variants follow the same object every component takes its gates from.
func FeatureSet(ms []Manifest) string {
	for _, m := range ms {
		if m.GVK.Group == "config.openshift.io" && m.GVK.Kind == "FeatureGate" && m.Name == "cluster" {
			spec, _ := m.Object["spec"].(map[string]interface{})
			s, _ := spec["featureSet"].(string)
			return s
		}
	}
	return ""
}

var vendored struct {
	once  sync.Once
	files []*crdFile
	err   error
}

// vendoredCRDs reads the vendored CRDs' headers once per process (a fleet renders many sites in one process); each
// CRD's object is parsed once, when a render first exports it. The result is read-only: CRDs deep-copies what it
// exports.
func vendoredCRDs() ([]*crdFile, error) {
	vendored.once.Do(func() {
		entries, err := fs.ReadDir(manifests.FS, "crds")
		if err != nil {
			vendored.err = fmt.Errorf("vendored CRDs: %w", err)
			return
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".crd.yaml") {
				continue
			}
			raw, err := manifests.Read(path.Join("crds", e.Name()))
			if err != nil {
				vendored.err = err
				return
			}
			f, err := parseCRDHeader(e.Name(), raw)
			if err != nil {
				vendored.err = err
				return
			}
			if f != nil {
				vendored.files = append(vendored.files, f)
			}
		}
	})
	return vendored.files, vendored.err
}

// PruneToCRDs removes from every exported custom object the fields its CRD's schema (for the object's version)
// does not define, as kube-apiserver's structural pruning would, so that a strictly validated create on the live
// cluster accepts it (a Go type of the pinned openshift/api may carry a field that the CRD of the chosen feature
// set leaves out). It returns the pruned field paths per manifest file, and fails on an object whose version the
// CRD does not serve.
func PruneToCRDs(ms []Manifest, crds []Manifest) (map[string][]string, error) {
	schemas := map[string]map[string]interface{}{} // group/kind/version → openAPIV3Schema
	for _, c := range crds {
		spec, _ := c.Object["spec"].(map[string]interface{})
		names, _ := spec["names"].(map[string]interface{})
		versions, _ := spec["versions"].([]interface{})
		for _, v := range versions {
			vm, _ := v.(map[string]interface{})
			schema, _ := vm["schema"].(map[string]interface{})
			s, _ := schema["openAPIV3Schema"].(map[string]interface{})
			schemas[fmt.Sprintf("%v/%v/%v", spec["group"], names["kind"], vm["name"])] = s
		}
	}
	pruned := map[string][]string{}
	for i, m := range ms {
		if !groupsWithCRDs[m.GVK.Group] {
			continue
		}
		s, ok := schemas[m.GVK.Group+"/"+m.GVK.Kind+"/"+m.GVK.Version]
		if !ok {
			return nil, fmt.Errorf("%s: no CRD serves %s", m.File, m.GVK)
		}
		var removed []string
		prune(m.Object, s, "", &removed, true)
		if len(removed) > 0 {
			sort.Strings(removed)
			pruned[m.File] = removed
			b, err := codec.MarshalYAML(m.Object)
			if err != nil {
				return nil, err
			}
			ms[i].YAML = b
		}
	}
	return pruned, nil
}

// prune walks a value against a structural schema: object properties the schema does not name are removed
// (unless the schema preserves unknown fields); apiVersion, kind and metadata are kept at the root.
func prune(v interface{}, schema map[string]interface{}, path string, removed *[]string, root bool) {
	if schema == nil || schema["x-kubernetes-preserve-unknown-fields"] == true {
		return
	}
	switch x := v.(type) {
	case map[string]interface{}:
		props, hasProps := schema["properties"].(map[string]interface{})
		additional, _ := schema["additionalProperties"].(map[string]interface{})
		for k, child := range x {
			if root && (k == "apiVersion" || k == "kind" || k == "metadata") {
				continue
			}
			p := path + "." + k
			switch {
			case hasProps && props[k] != nil:
				cs, _ := props[k].(map[string]interface{})
				prune(child, cs, p, removed, false)
			case additional != nil:
				prune(child, additional, p, removed, false)
			case hasProps || additional == nil:
				delete(x, k)
				*removed = append(*removed, strings.TrimPrefix(p, "."))
			}
		}
	case []interface{}:
		items, _ := schema["items"].(map[string]interface{})
		for i, e := range x {
			prune(e, items, fmt.Sprintf("%s[%d]", path, i), removed, false)
		}
	}
}

// withoutSchemaDescriptions is the CRD crd without the description of any schema in its versions
// (spec.versions[].schema.openAPIV3Schema and every schema under it), for the node's copy (Manifest.NodeBytes); crd
// itself is not changed (the parts it shares with the result are only read).
//
// A schema's description is documentation: what `kubectl explain` prints. The API server's validation, pruning
// and defaulting never read it (k8s.io/apiextensions-apiserver pkg/apiserver/schema: a structural schema's
// Generic.Description is carried for the OpenAPI it publishes only), so the objects a CRD admits are the same
// without it; controller-gen's crd:maxDescLen=0 generates CRDs so, to keep them under size limits. Here the limit
// is the live ISO's embed area and the cost xz's measure of it: the descriptions were ~16 % of the bundled example's
// aio.ign, ~21 % of its embed (39 KB) and a quarter of xz's CPU (English prose, which xz cannot match against
// anything else in live.ign; docs/speed.md). DIR/manifests keeps the vendored CRDs whole, and `kubectl replace -f`
// of one puts its documentation back on a running cluster (docs/limitations.md).
func withoutSchemaDescriptions(crd map[string]interface{}) map[string]interface{} {
	spec, ok := crd["spec"].(map[string]interface{})
	if !ok {
		return crd
	}
	versions, ok := spec["versions"].([]interface{})
	if !ok {
		return crd
	}
	out, outSpec := maps.Clone(crd), maps.Clone(spec)
	outVersions := make([]interface{}, len(versions))
	for i, v := range versions {
		outVersions[i] = v
		vm, ok := v.(map[string]interface{})
		if !ok {
			continue
		}
		sch, ok := vm["schema"].(map[string]interface{})
		if !ok {
			continue
		}
		if root, ok := sch["openAPIV3Schema"].(map[string]interface{}); ok {
			outSch, outV := maps.Clone(sch), maps.Clone(vm)
			outSch["openAPIV3Schema"] = schemaWithoutDescriptions(root)
			outV["schema"] = outSch
			outVersions[i] = outV
		}
	}
	outSpec["versions"] = outVersions
	out["spec"] = outSpec
	return out
}

// schemaKeys are the keys of a JSON schema (apiextensions.k8s.io/v1 JSONSchemaProps) whose values hold schemas: a
// map of names to schemas (properties, patternProperties, definitions, and dependencies, whose values may also be
// lists of names), a schema or a list of schemas (items, allOf, anyOf, oneOf), or a schema or a boolean
// (additionalProperties, additionalItems, not).
var schemaKeys = map[string]bool{
	"properties": true, "patternProperties": true, "definitions": true, "dependencies": true,
	"items": false, "allOf": false, "anyOf": false, "oneOf": false,
	"additionalProperties": false, "additionalItems": false, "not": false,
}

// schemaWithoutDescriptions is a copy of the schema s without its description nor that of any schema it holds;
// a property named "description" stays (the keys of properties are names, not a schema's fields).
func schemaWithoutDescriptions(s map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(s))
	for k, v := range s {
		named, holds := schemaKeys[k]
		switch {
		case k == "description":
			if _, text := v.(string); !text {
				out[k] = v
			}
		case !holds:
			out[k] = v
		case named:
			m, ok := v.(map[string]interface{})
			if !ok {
				out[k] = v
				continue
			}
			nm := make(map[string]interface{}, len(m))
			for name, sub := range m {
				nm[name] = subschemaWithoutDescriptions(sub)
			}
			out[k] = nm
		default:
			out[k] = subschemaWithoutDescriptions(v)
		}
	}
	return out
}

// subschemaWithoutDescriptions is v without descriptions when v is a schema or a list of schemas, else v (a
// boolean, or a dependency's list of property names).
func subschemaWithoutDescriptions(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		return schemaWithoutDescriptions(t)
	case []interface{}:
		l := make([]interface{}, len(t))
		for i, e := range t {
			l[i] = subschemaWithoutDescriptions(e)
		}
		return l
	}
	return v
}
