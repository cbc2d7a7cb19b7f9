// Package state is what a render keeps so that a later run continues the same cluster, as openshift-install
// does with its asset directory: every object the fakes held (keys included), every operator resource, the
// admin credential and the inputs that are random when not given (the infrastructure name).
//
// Layout, under <dir>/state/ (SECRET: it holds every private key of the cluster; files 0600, directories 0700):
//
//	README                   what this is, and that it is secret
//	render.json              format version, infrastructure name, admin CA bundle, certificate and key
//	SHA256SUMS               every other file with its sha256 (sha256sum's format): Load refuses a state with a
//	                         file missing, added or changed
//	objects/<group>_<kind>_<namespace>_<name>.yaml   every object, exactly as the fakes held it
//	operators/<resource>.json                        every operator resource: metadata, spec, status
//
// Objects are saved whole (uid, creationTimestamp, annotations and all) so that the loops find them exactly as
// they left them; Events are not saved (they are the render's history, not state).
package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	configscheme "github.com/openshift/client-go/config/clientset/versioned/scheme"
	operatorscheme "github.com/openshift/client-go/operator/clientset/versioned/scheme"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubescheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/render-static/render-static/internal/inputfile"
	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/codec"
	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/loops"
)

// Dir is the state's directory inside a render's output directory.
const Dir = "state"

// Version is the state format's version. Version 2 added SHA256SUMS; a version 1 state (without it) is still read,
// and written back as version 2. Any other version is refused.
const Version = 2

// SumsFile is the state's manifest: every other file of the state with its sha256, as sha256sum writes them.
const SumsFile = "SHA256SUMS"

const readme = `SECRET. This directory holds every private key of the cluster rendered here (signers, serving and
client certificates, the service-account signing key, the encryption keys, the admin credential).
Keep it as you keep aio.ign, or delete it if you never want to re-render or renew this cluster.

render-static reads it when it renders into this directory again (same cluster, same keys; only a fresh render
starts over) and "render-static renew" continues from it. Do not edit it: SHA256SUMS lists every file, and a state
that does not match it is refused.
`

// State is a render's saved cluster.
type State struct {
	Version int    `json:"version"`
	InfraID string `json:"infraID"`
	// Admin is the cluster-admin credential (its signer key is never kept, as the installer does).
	AdminCABundle string `json:"adminCABundle"`
	AdminCert     string `json:"adminCert"`
	AdminKey      string `json:"adminKey"`
	// Inputs are the render's inputs, so that renew runs on the same cluster without them.
	Inputs Inputs `json:"inputs"`
	// NodeKeys are the keys of the node's first client certificates, by CSR name (node.Node.SaveKeys).
	NodeKeys map[string]string `json:"nodeKeys"`
	// IgnitionEncoder is the export.EncoderID of the aio.ign written beside the state: a later run in the same
	// directory reuses that aio.ign's encodings only when it encodes alike (export.IgnitionOptions.Previous).
	IgnitionEncoder string `json:"ignitionEncoder,omitempty"`
	// LiveEmbed is the embed-area size of the live.ign written beside the state (nil: not measured).
	LiveEmbed *LiveEmbed `json:"liveEmbed,omitempty"`
	// WorkerLiveEmbeds are the embed-area sizes of the workers' live.ign (DIR/workers/<name>/live.ign), by name.
	WorkerLiveEmbeds map[string]*LiveEmbed `json:"workerLiveEmbeds,omitempty"`
	// LoadedFrom is the output directory Load read the state from ("" for a captured state).
	LoadedFrom string `json:"-"`
	// Legacy says Load read a format 1 state, which has no SHA256SUMS to check its files against.
	Legacy bool `json:"-"`

	// Objects is every object of the fakes, typed where a scheme knows the kind, unstructured otherwise.
	Objects []runtime.Object `json:"-"`
	// Operators is every operator resource's saved state (loops.OperatorClient.SaveState), by resource.
	Operators map[string][]byte `json:"-"`

	// loaded is what Load read: every object file's contents and the object decoded from them, by file path.
	loaded map[string]loadedObject
	// previous is the state this one continues (Continues): its files are reused for unchanged objects.
	previous *State
	// objectFiles are the objects' files once EncodeObjects made them.
	objectFiles []File
}

type loadedObject struct {
	object   runtime.Object
	contents []byte
	index    int // in Objects
}

// Continues says that s is the state of a run that started from prev (a loaded state): Files then writes prev's
// own file for every object that is exactly (reflect.DeepEqual) the object prev decoded from that file, instead
// of marshalling it again. Such a file decodes to the object by construction; on a re-render nearly every object
// is unchanged.
func (s *State) Continues(prev *State) { s.previous = prev }

// Inputs are a render's inputs as it saved them, by input name (the JSON object "inputs" of render.json): what each
// holds, how it is read back and how it is saved is pkg/pipeline's input table (inputs.go), the only list of them;
// the state keeps them whole. A state written before the table (a struct of the same keys) reads the same.
type Inputs map[string]json.RawMessage

// Get decodes the saved input name into v; false when the state has none.
func (in Inputs) Get(name string, v any) (bool, error) {
	raw, ok := in[name]
	if !ok || string(raw) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("inputs.%s: %w", name, err)
	}
	return true, nil
}

// Set keeps v as the input name (JSON of strings, lists and structs of them: it never fails).
func (in Inputs) Set(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("state: input %s: %v", name, err))
	}
	in[name] = b
}

// Worker is one worker node: its node name, its IPs as --node-ip takes them, and its live ISO install's inputs
// (the disk, and its NetworkManager keyfiles' contents, read when it was given: pkg/pipeline workers.go).
type Worker struct {
	NodeName        string    `json:"nodeName"`
	NodeIP          string    `json:"nodeIP"`
	InstallDevice   string    `json:"installDevice,omitempty"`
	NetworkKeyfiles []Keyfile `json:"networkKeyfiles,omitempty"`
}

// Keyfile is a NetworkManager keyfile given to a render: its file name on the node and its contents. Source names
// where it was read, in messages of the run that read it; it is not kept.
type Keyfile struct {
	Name     string `json:"name"`
	Contents string `json:"contents"`
	Source   string `json:"-"`
}

// LiveEmbed is what a live.ign takes in the live ISO's embed area (internal/isoembed), measured once: a later run
// whose live.ign is the same (SHA256), measured with the same xz (XZ), takes Bytes without measuring again.
type LiveEmbed struct {
	SHA256 string `json:"sha256"`
	XZ     string `json:"xz"`
	Bytes  int    `json:"bytes"`
}

// Admin returns the saved admin credential.
func (s *State) Admin() *certs.Admin {
	return &certs.Admin{CABundle: []byte(s.AdminCABundle), CertPEM: []byte(s.AdminCert), KeyPEM: []byte(s.AdminKey)}
}

// Capture saves a settled cluster.
func Capture(c *loops.Cluster, infraID string, admin *certs.Admin, nodeKeys map[string]string) (*State, error) {
	objs, err := export.Objects(c)
	if err != nil {
		return nil, err
	}
	return CaptureObjects(c, objs, infraID, admin, nodeKeys)
}

// CaptureObjects is Capture with the cluster's objects as export.Objects(c) returned them (the state keeps them:
// the caller must not change them).
func CaptureObjects(c *loops.Cluster, objs []runtime.Object, infraID string, admin *certs.Admin, nodeKeys map[string]string) (*State, error) {
	s := &State{Version: Version, InfraID: infraID, AdminCABundle: string(admin.CABundle), AdminCert: string(admin.CertPEM),
		AdminKey: string(admin.KeyPEM), NodeKeys: nodeKeys, Operators: map[string][]byte{}}
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "Event" {
			continue
		}
		s.Objects = append(s.Objects, o)
	}
	for name, oc := range c.OperatorClients() {
		b, err := oc.SaveState()
		if err != nil {
			return nil, err
		}
		s.Operators[name] = b
	}
	return s, nil
}

// File is one file of the state, relative to the state directory.
type File struct {
	Path     string
	Contents []byte
}

// Files is the state as files, sorted by path. Every file is secret (0600).
func (s *State) Files() ([]File, error) {
	head, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	out := []File{{Path: "README", Contents: []byte(readme)}, {Path: "render.json", Contents: append(head, '\n')}}
	if err := s.EncodeObjects(nil); err != nil {
		return nil, err
	}
	objs := s.objectFiles
	seen := map[string]bool{}
	for _, f := range objs {
		if seen[f.Path] {
			return nil, fmt.Errorf("state: two objects save to %s", f.Path)
		}
		seen[f.Path] = true
		out = append(out, f)
	}
	for name, b := range s.Operators {
		out = append(out, File{Path: "operators/" + name + ".json", Contents: append(append([]byte{}, b...), '\n')})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	// Load reads every file as an input (inputfile.Read, bounded): a state it could not read is never written.
	for _, f := range out {
		if len(f.Contents) > inputfile.MaxSize {
			return nil, fmt.Errorf("state: %s would take %d bytes, over the %d MiB a later run reads: the cluster could never be continued", f.Path, len(f.Contents), inputfile.MaxSize>>20)
		}
	}
	return append(out, File{Path: SumsFile, Contents: sums(out)}), nil
}

// sums is the manifest of files: "<sha256>  <path>" lines in path order, what `sha256sum -c` checks.
func sums(files []File) []byte {
	var b strings.Builder
	for _, f := range files {
		h := sha256.Sum256(f.Contents)
		b.WriteString(hex.EncodeToString(h[:]))
		b.WriteString("  ")
		b.WriteString(f.Path)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// EncodeObjects makes the objects' files ahead of Files (and Write), which then only add render.json (its
// Inputs may still be set after this) and the operators' files. whole may hold an object's file contents
// already made (export.ManifestsAndWholeOf: MarshalYAML of the object whole, which is what objectFile writes).
// Objects must not change afterwards.
func (s *State) EncodeObjects(whole map[runtime.Object][]byte) error {
	if s.objectFiles != nil || len(s.Objects) == 0 {
		return nil
	}
	objs := make([]File, len(s.Objects))
	err := export.Parallel(len(s.Objects), func(i int) (err error) {
		objs[i], err = s.objectFile(s.Objects[i], whole[s.Objects[i]])
		return err
	})
	if err != nil {
		return err
	}
	s.objectFiles = objs
	return nil
}

// objectPath is an object's file: objects/<group>_<kind>_<namespace>_<name>.yaml.
func objectPath(o runtime.Object) (string, error) {
	m, err := meta.Accessor(o)
	if err != nil {
		return "", err
	}
	gvk := o.GetObjectKind().GroupVersionKind()
	ns := m.GetNamespace()
	if ns == "" {
		ns = "cluster"
	}
	group := gvk.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("objects/%s_%s_%s_%s.yaml", group, strings.ToLower(gvk.Kind), ns, m.GetName()), nil
}

// LoadedIndex says which of the loaded state's Objects o is exactly (reflect.DeepEqual), the one saved at o's
// file; false for another object, a changed one, or a state that was not loaded. Such an object gives whatever
// the loaded one gives (its manifest, its file), which can be made ahead.
func (s *State) LoadedIndex(o runtime.Object) (int, bool) {
	if s == nil || s.loaded == nil {
		return 0, false
	}
	p, err := objectPath(o)
	if err != nil {
		return 0, false
	}
	l, ok := s.loaded[p]
	if !ok || !reflect.DeepEqual(l.object, o) {
		return 0, false
	}
	return l.index, true
}

// objectFile is one object's file (objectPath); the previous state's file when the object is the one it holds
// unchanged (Continues); else made, or made already (made: see EncodeObjects).
func (s *State) objectFile(o runtime.Object, made []byte) (File, error) {
	p, err := objectPath(o)
	if err != nil {
		return File{}, err
	}
	gvk := o.GetObjectKind().GroupVersionKind()
	if s.previous != nil {
		if l, ok := s.previous.loaded[p]; ok && reflect.DeepEqual(l.object, o) {
			return File{Path: p, Contents: l.contents}, nil
		}
	}
	if made != nil {
		return File{Path: p, Contents: made}, nil
	}
	u, err := codec.ObjectMap(o)
	if err != nil {
		return File{}, err
	}
	obj := &unstructured.Unstructured{Object: u}
	obj.SetGroupVersionKind(gvk)
	b, err := codec.MarshalYAML(obj.Object)
	if err != nil {
		return File{}, err
	}
	return File{Path: p, Contents: b}, nil
}

// Write writes the state into dir/state (dir is a temporary output directory being filled, see
// outdir.WriteDirAtomic): directories 0700, files 0600.
func (s *State) Write(dir string) error {
	var p export.Plan
	if err := s.Plan(&p); err != nil {
		return err
	}
	return p.Write(dir)
}

// Plan adds the state's directories and files, under Dir, to an output's plan.
func (s *State) Plan(p *export.Plan) error {
	files, err := s.Files()
	if err != nil {
		return err
	}
	for _, d := range []string{Dir, Dir + "/objects", Dir + "/operators"} {
		p.Dir(d, 0o700)
	}
	for _, f := range files {
		p.File(Dir+"/"+f.Path, 0o600, f.Contents)
	}
	return nil
}

// Exists says whether dir holds a state, whole or not (Load checks it is whole).
func Exists(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, Dir))
	return err == nil
}

// IntegrityError says that a state is not the one its render wrote: files missing, added or changed since. The
// state is the only copy of the cluster's keys: a run never continues from such a state, and never starts a new
// cluster over it unless told to (--fresh).
type IntegrityError struct {
	Dir      string   // the state directory
	Problems []string // one per file: "objects/x.yaml: missing (listed in SHA256SUMS)"
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("the state in %s is not the one render-static wrote (%d %s: %s): restore it from a backup of the directory, or start a new cluster there with {fresh}",
		e.Dir, len(e.Problems), plural(len(e.Problems), "problem", "problems"), strings.Join(e.Problems, "; "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// readState reads every file under root (relative slash paths → contents) and checks them against SHA256SUMS:
// a missing, added or changed file is an IntegrityError naming it. A state without SHA256SUMS passes only as
// format version 1 (legacy reports it).
func readState(root string) (files map[string][]byte, legacy bool, err error) {
	var paths []string
	var problems []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			problems = append(problems, filepath.ToSlash(rel)+": not a regular file")
			return nil
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("reading the state in %s: %w", root, err)
	}
	contents := make([][]byte, len(paths))
	if err := export.Parallel(len(paths), func(i int) (err error) {
		contents[i], err = inputfile.Read(filepath.Join(root, filepath.FromSlash(paths[i])))
		return err
	}); err != nil {
		return nil, false, fmt.Errorf("reading the state in %s: %w", root, err)
	}
	files = make(map[string][]byte, len(paths))
	for i, p := range paths {
		files[p] = contents[i]
	}
	listed, ok := files[SumsFile]
	if !ok {
		var head struct {
			Version int `json:"version"`
		}
		if b, ok := files["render.json"]; ok && json.Unmarshal(b, &head) == nil && head.Version == 1 && len(problems) == 0 {
			return files, true, nil
		}
		problems = append(problems, SumsFile+": missing")
		return nil, false, &IntegrityError{Dir: root, Problems: problems}
	}
	delete(files, SumsFile)
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(string(listed), "\n"), "\n") {
		sum, p, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 || p == "" {
			problems = append(problems, fmt.Sprintf("%s line %d: not \"<sha256>  <path>\"", SumsFile, i+1))
			continue
		}
		seen[p] = true
		b, ok := files[p]
		if !ok {
			problems = append(problems, p+": missing (listed in "+SumsFile+")")
			continue
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
			problems = append(problems, p+": changed since it was written (its sha256 is not the one in "+SumsFile+")")
		}
	}
	for _, p := range paths {
		if p != SumsFile && !seen[p] {
			problems = append(problems, p+": not written by render-static (not in "+SumsFile+")")
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, false, &IntegrityError{Dir: root, Problems: problems}
	}
	return files, false, nil
}

// Load reads the state of a render directory, after checking every file against SHA256SUMS (IntegrityError).
func Load(dir string) (*State, error) {
	root := filepath.Join(dir, Dir)
	files, legacy, err := readState(root)
	if err != nil {
		return nil, err
	}
	head, ok := files["render.json"]
	if !ok {
		return nil, &IntegrityError{Dir: root, Problems: []string{"render.json: missing"}}
	}
	s := &State{Operators: map[string][]byte{}, LoadedFrom: dir, Legacy: legacy}
	if err := json.Unmarshal(head, s); err != nil {
		return nil, fmt.Errorf("state %s: %w", filepath.Join(root, "render.json"), err)
	}
	if s.Version != Version && !(legacy && s.Version == 1) {
		return nil, fmt.Errorf("state %s: format version %d, this render-static reads %d and 1", root, s.Version, Version)
	}
	s.Version = Version
	var paths []string
	for p := range files {
		if strings.HasPrefix(p, "objects/") {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	s.Objects = make([]runtime.Object, len(paths))
	err = export.Parallel(len(paths), func(i int) (err error) {
		if s.Objects[i], err = decode(files[paths[i]]); err != nil {
			return fmt.Errorf("state %s: %w", filepath.Join(root, paths[i]), err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if problems := missingSigners(s.Objects); len(problems) > 0 {
		return nil, &IntegrityError{Dir: root, Problems: problems}
	}
	s.loaded = make(map[string]loadedObject, len(paths))
	for i, p := range paths {
		s.loaded[p] = loadedObject{object: s.Objects[i], contents: files[p], index: i}
	}
	for p, b := range files {
		if name, ok := strings.CutPrefix(p, "operators/"); ok && strings.HasSuffix(name, ".json") {
			s.Operators[strings.TrimSuffix(name, ".json")] = b
		}
	}
	return s, nil
}

// IssuerAnnotation is where library-go's cert-rotation controllers name a certificate's signer, as
// "<namespace>_<name>@<unix time>" of the signer's Secret (certrotation's signer.go, the CA's common name).
const IssuerAnnotation = "auth.openshift.io/certificate-issuer"

// missingSigners are the signers the objects' certificates name (IssuerAnnotation) whose Secret is not among them,
// one problem each. A state whose SHA256SUMS matches can still have lost a signer (its file deleted and the sums
// written again): a run would then make a new signer silently, as if the old one had expired, and every
// certificate it signed would change. A continued cluster never does that.
func missingSigners(objs []runtime.Object) []string {
	secrets := map[string]bool{}
	for _, o := range objs {
		if sec, ok := o.(*corev1.Secret); ok {
			secrets[sec.Namespace+"/"+sec.Name] = true
		}
	}
	issued := map[string][]string{} // signer -> the secrets it signed
	for _, o := range objs {
		sec, ok := o.(*corev1.Secret)
		if !ok {
			continue
		}
		issuer, _, _ := strings.Cut(sec.Annotations[IssuerAnnotation], "@")
		ns, name, ok := strings.Cut(issuer, "_")
		if !ok || ns == "" || name == "" || secrets[ns+"/"+name] {
			continue
		}
		issued[ns+"/"+name] = append(issued[ns+"/"+name], sec.Namespace+"/"+sec.Name)
	}
	var problems []string
	for signer, by := range issued {
		ns, name, _ := strings.Cut(signer, "/")
		sort.Strings(by)
		problems = append(problems, fmt.Sprintf("objects/core_secret_%s_%s.yaml: missing: the signer of secret %s (%s), which a continued cluster keeps",
			ns, name, strings.Join(by, ", secret "), IssuerAnnotation))
	}
	sort.Strings(problems)
	return problems
}

// decode turns a saved object into the typed object a scheme knows, or keeps it unstructured (the dynamic
// client's kinds).
func decode(b []byte) (runtime.Object, error) {
	m, ok := codec.UnmarshalOwnYAML(b) // what codec.UnmarshalYAML gives, for the YAML it writes
	if !ok {
		var err error
		if m, err = codec.UnmarshalYAML(b); err != nil {
			return nil, err
		}
	}
	u := &unstructured.Unstructured{Object: m}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" {
		return nil, fmt.Errorf("no kind")
	}
	for _, s := range []*runtime.Scheme{kubescheme.Scheme, configscheme.Scheme, operatorscheme.Scheme} {
		if !s.Recognizes(gvk) {
			continue
		}
		o, err := s.New(gvk)
		if err != nil {
			return nil, err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o); err != nil {
			return nil, err
		}
		o.GetObjectKind().SetGroupVersionKind(gvk)
		return o, nil
	}
	return u, nil
}

// GVK is an object's kind.
func GVK(o runtime.Object) schema.GroupVersionKind { return o.GetObjectKind().GroupVersionKind() }

type objectKey struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

func keyOf(o runtime.Object) (objectKey, error) {
	gvk := o.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		for _, s := range []*runtime.Scheme{kubescheme.Scheme, configscheme.Scheme, operatorscheme.Scheme} {
			if kinds, _, err := s.ObjectKinds(o); err == nil && len(kinds) > 0 {
				gvk = kinds[0]
				break
			}
		}
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return objectKey{}, err
	}
	return objectKey{gvk: gvk, namespace: m.GetNamespace(), name: m.GetName()}, nil
}

// Seeds are the objects a run continuing from the state starts with: every saved object, except that the objects
// a run derives from its inputs (fresh: the installer's objects of clusterconfig.Objects) replace their saved
// copies, keeping the saved UID and creation time, and the saved status where the installer leaves status to an
// operator (keepStatus), so that a changed input reaches the loops. Typed objects go to
// loops.NewCluster; unstructured ones (the dynamic client's kinds) are returned apart.
func (s *State) Seeds(fresh []runtime.Object) (typed []runtime.Object, dynamic []*unstructured.Unstructured, err error) {
	replace := map[objectKey]runtime.Object{}
	for _, o := range fresh {
		k, err := keyOf(o)
		if err != nil {
			return nil, nil, err
		}
		replace[k] = o
	}
	used := map[objectKey]bool{}
	for _, o := range s.Objects {
		k, err := keyOf(o)
		if err != nil {
			return nil, nil, err
		}
		if f, ok := replace[k]; ok {
			f = f.DeepCopyObject()
			fm, _ := meta.Accessor(f)
			om, _ := meta.Accessor(o)
			fm.SetUID(om.GetUID())
			fm.SetCreationTimestamp(om.GetCreationTimestamp())
			keepStatus(f, o)
			used[k] = true
			o = f
		}
		if u, ok := o.(*unstructured.Unstructured); ok {
			dynamic = append(dynamic, u)
			continue
		}
		typed = append(typed, o)
	}
	for _, o := range fresh {
		if k, _ := keyOf(o); !used[k] {
			typed = append(typed, o)
		}
	}
	return typed, dynamic, nil
}

// keepStatus gives fresh, an installer-made object replacing its saved copy, the saved copy's status when the
// installer leaves status empty: that status is an operator's, which the previous run's loops wrote. Without it a
// re-render starts from an empty status (e.g. network.config.openshift.io cluster's, which
// emulate/cluster-network-operator fills), so its first pass rewrites that status and a whole second pass runs
// only to find nothing else changed.
//
// Safe because the only loops writing the status of an installer-made object (emulate.NetworkStatus and
// ProxyStatus) derive the whole status from the spec and the inputs, and rewrite it in their first turn whenever
// it differs; the one field they carry over (Network status.clusterNetworkMTU) is the value they set themselves
// (1400) when it was empty. So the cluster settles on the same status either way: with unchanged inputs the saved
// status is already what the loop wants (no write); with a changed spec the loop writes the status the spec now
// says, as it did from an empty one. Only the trace differs, by the write that no longer happens. Statuses the
// installer sets itself (Infrastructure, FeatureGate) stay the fresh ones.
func keepStatus(fresh, saved runtime.Object) {
	f := reflect.ValueOf(fresh)
	if f.Kind() != reflect.Pointer || reflect.TypeOf(saved) != f.Type() || f.Elem().Kind() != reflect.Struct {
		return
	}
	status := f.Elem().FieldByName("Status")
	if !status.IsValid() || !status.CanSet() || !status.IsZero() {
		return
	}
	// A copy: the saved object stays the state's own (Continues compares against it).
	status.Set(reflect.ValueOf(saved.DeepCopyObject()).Elem().FieldByName("Status"))
}
