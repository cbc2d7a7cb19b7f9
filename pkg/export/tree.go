// Package export is the only part of render-static that writes files: it holds the in-memory tree of
// files the node gets, packs it into an Ignition config, and writes the files of an output directory, which
// pkg/outdir locks and exchanges as a whole.
package export

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// File is one file the node gets. Path is absolute on the node ("/etc/kubernetes/manifests/x.yaml").
// For entries returned by Tree.Dirs, Path is a directory and Contents is nil.
type File struct {
	Path     string
	Mode     fs.FileMode // permission bits only (0600, 0644, 0755)
	Contents []byte
	// Compressed says that aio.ign carries Contents gzip-compressed (AddCompressedFile); the node gets Contents.
	Compressed bool
}

// Unit is a systemd unit (and optional drop-ins) aio.ign installs.
//
// Contents may be empty when only Dropins are set, or when the unit ships with the OS and only needs
// enabling. Enabled=false means "leave the unit's enablement alone", not "disable it".
type Unit struct {
	Name     string // "kubelet.service"
	Contents string // may be empty when only Dropins are set
	Enabled  bool
	Dropins  []Dropin
}

// Dropin is a systemd drop-in for a Unit; Name must end in ".conf".
type Dropin struct{ Name, Contents string }

const (
	// systemdUnitDir is where Ignition (and WriteRootfs) writes unit files and drop-in directories.
	systemdUnitDir = "/etc/systemd/system"
	// presetPath is the preset file WriteRootfs writes for enabled units. Trees may not contain it.
	presetPath = "/etc/systemd/system-preset/20-render-static.preset"
)

type nodeKind int

const (
	kindImpliedDir  nodeKind = iota // parent of something, mode 0755
	kindExplicitDir                 // added with AddDir
	kindFile                        // added with AddFile
	kindUnitFile                    // unit file or drop-in, written from a Unit
)

func (k nodeKind) isDir() bool { return k == kindImpliedDir || k == kindExplicitDir }

func (k nodeKind) String() string {
	switch k {
	case kindImpliedDir:
		return "directory"
	case kindExplicitDir:
		return "directory"
	case kindFile:
		return "file"
	default:
		return "systemd unit file"
	}
}

// Tree is everything aio.ign lays down on the node. Directories are implied by files (mode 0755) unless
// added explicitly with AddDir (e.g. 0700 dirs, or empty dirs).
//
// Every path in the tree (files, explicit and implied directories, and the unit files and drop-ins that
// units become under /etc/systemd/system) has exactly one kind: a file can neither sit where a directory
// is nor be the parent of anything. Add* and Merge check this and leave the tree unchanged on error.
// The zero Tree is not usable; use NewTree.
type Tree struct {
	files map[string]File
	dirs  map[string]fs.FileMode
	units map[string]Unit
	nodes map[string]nodeKind
}

// NewTree returns an empty tree.
func NewTree() *Tree {
	return &Tree{
		files: map[string]File{},
		dirs:  map[string]fs.FileMode{},
		units: map[string]Unit{},
		nodes: map[string]nodeKind{},
	}
}

// IsSecretPath reports whether path (absolute, on the node) holds a key or token, by the project's rule.
// A path is secret when:
//
//   - it ends in ".key", "token" or "kubeconfig" (which covers ".kubeconfig"), e.g. "/etc/kubernetes/
//     static-pod-resources/secrets/tls.key", "/var/lib/kubelet/bootstrap-token", "/etc/kubernetes/kubeconfig";
//   - its base name is "pull-secret" (with or without an extension, e.g. "pull-secret.json") or
//     "config.json" and it lies under /var/lib/kubelet/ or /etc/crio/;
//   - any directory above it is named "secrets" (".../secrets/...");
//   - its base name is "aio.ign" (the Ignition config embeds every secret) or "dest.ign" (aio.ign in the live
//     system, live.go);
//   - it lies under /etc/NetworkManager/system-connections/ (a keyfile may hold a network's secrets, and
//     NetworkManager ignores a keyfile others can read).
//
// Secret files must not be readable or writable by group or others: AddFile rejects (it does not
// silently fix) a secret path whose mode has any group/other bit set, or no owner-read bit. In practice
// that means 0600 or 0400, and 0700 (or 0500) for executable secrets.
func IsSecretPath(p string) bool {
	p = path.Clean(p)
	base := path.Base(p)
	if strings.HasSuffix(p, ".key") || strings.HasSuffix(p, "token") || strings.HasSuffix(p, "kubeconfig") {
		return true
	}
	if base == "aio.ign" || base == "dest.ign" || strings.HasPrefix(p, KeyfileDir+"/") {
		return true
	}
	if strings.HasPrefix(p, "/var/lib/kubelet/") || strings.HasPrefix(p, "/etc/crio/") {
		if base == "config.json" || base == "pull-secret" || strings.HasPrefix(base, "pull-secret.") {
			return true
		}
	}
	dir := path.Dir(p)
	for _, part := range strings.Split(dir, "/") {
		if part == "secrets" {
			return true
		}
	}
	return false
}

// checkSecretMode returns an error if p is a secret path and mode exposes it to group or others.
func checkSecretMode(p string, mode fs.FileMode) error {
	if !IsSecretPath(p) {
		return nil
	}
	if mode&0o077 != 0 || mode&0o400 == 0 {
		return fmt.Errorf("%s holds a secret and must have mode 0600 or 0400 (0700/0500 if executable), not %#o", p, uint32(mode))
	}
	return nil
}

func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path")
	case !path.IsAbs(p):
		return fmt.Errorf("path %q is not absolute", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q is not clean (want %q)", p, path.Clean(p))
	case p == "/":
		return fmt.Errorf("path %q is the root directory", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q contains a NUL byte", p)
	}
	return nil
}

func checkPerm(p string, mode fs.FileMode) error {
	if mode&^fs.ModePerm != 0 {
		return fmt.Errorf("%s: mode %v has bits other than permission bits", p, mode)
	}
	return nil
}

// parents returns the ancestors of p (absolute, clean), excluding "/", outermost first.
func parents(p string) []string {
	var out []string
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		out = append(out, d)
	}
	slices.Reverse(out)
	return out
}

// op is one path a pending addition claims.
type op struct {
	path string
	kind nodeKind
}

// claim checks that ops can be added to the tree (against what is in it and against each other) and,
// if so, records them and their implied parent directories. It changes nothing on error.
// Re-claiming a path with the same kind is allowed; the caller has checked contents/mode equality.
func (t *Tree) claim(ops []op) error {
	pending := map[string]nodeKind{}
	get := func(p string) (nodeKind, bool) {
		if k, ok := pending[p]; ok {
			return k, true
		}
		k, ok := t.nodes[p]
		return k, ok
	}
	for _, o := range ops {
		if o.path == presetPath || strings.HasPrefix(o.path, presetPath+"/") {
			return fmt.Errorf("%s is reserved for the preset of enabled units", o.path)
		}
		for _, d := range parents(o.path) {
			k, ok := get(d)
			if ok && !k.isDir() {
				return fmt.Errorf("%s: parent %s is a %s", o.path, d, k)
			}
			if !ok {
				pending[d] = kindImpliedDir
			}
		}
		k, ok := get(o.path)
		switch {
		case !ok:
			pending[o.path] = o.kind
		case o.kind == kindExplicitDir && k == kindImpliedDir:
			// A directory that was implied becomes explicit.
			pending[o.path] = o.kind
		case o.kind == kindImpliedDir && k.isDir():
			// Nothing to do.
		case k == o.kind && o.kind != kindUnitFile:
			// Identical re-add, checked by the caller.
		default:
			return fmt.Errorf("%s: cannot add a %s where there is already a %s", o.path, o.kind, k)
		}
	}
	for p, k := range pending {
		t.nodes[p] = k
	}
	return nil
}

// AddFile adds a file; adding the same path twice is an error unless contents and mode are identical.
// Paths must be absolute, clean, and not "/", and must not collide with a directory (or a file used as a
// parent). Mode must be permission bits only; secret paths (see IsSecretPath) must not have group/other
// bits. contents is copied.
func (t *Tree) AddFile(p string, mode fs.FileMode, contents []byte) error {
	return t.addFile(p, mode, contents, true, false)
}

// AddCompressedFile is AddFile for text that no other file of the tree repeats, such as the node's own programs:
// aio.ign carries it gzip-compressed (Ignition's "compression": "gzip"), the node gets it as it is.
//
// Why (docs/speed.md): aio.ign is compressed whole, by xz, in the live ISO's embed area (live.ign), and xz does
// better on a file's plain text than gzip does when other files repeat that text (the manifests, certificates and
// pod manifests repeat one another). Text no other file repeats gains nothing from its neighbours, and a shell
// script is dense in the characters a data URL escapes: each takes 3 bytes in aio.ign and 5 in live.ign, whose
// data URL escapes aio.ign's escapes again. Gzip-compressed, the node's programs take xz about a seventh less
// CPU over live.ign for a few kilobytes more embedded.
func (t *Tree) AddCompressedFile(p string, mode fs.FileMode, contents []byte) error {
	return t.addFile(p, mode, contents, true, true)
}

// addFile is AddFile (AddCompressedFile when compressed), keeping contents itself rather than a copy unless copied:
// for a caller whose contents no one changes (LiveIgnition's aio.ign, megabytes).
func (t *Tree) addFile(p string, mode fs.FileMode, contents []byte, copied, compressed bool) error {
	if err := checkPath(p); err != nil {
		return fmt.Errorf("adding file: %w", err)
	}
	if err := checkPerm(p, mode); err != nil {
		return fmt.Errorf("adding file: %w", err)
	}
	if err := checkSecretMode(p, mode); err != nil {
		return fmt.Errorf("adding file: %w", err)
	}
	if old, ok := t.files[p]; ok {
		if old.Mode != mode {
			return fmt.Errorf("adding file %s: already added with mode %#o, now %#o", p, uint32(old.Mode), uint32(mode))
		}
		if !bytes.Equal(old.Contents, contents) {
			return fmt.Errorf("adding file %s: already added with different contents", p)
		}
		if old.Compressed != compressed {
			return fmt.Errorf("adding file %s: already added with compressed %v, now %v", p, old.Compressed, compressed)
		}
		return nil
	}
	if err := t.claim([]op{{p, kindFile}}); err != nil {
		return fmt.Errorf("adding file: %w", err)
	}
	c := contents
	if copied {
		c = make([]byte, len(contents))
		copy(c, contents)
	}
	t.files[p] = File{Path: p, Mode: mode, Contents: c, Compressed: compressed}
	return nil
}

// AddDir adds a directory with an explicit mode. Adding the same directory twice is an error unless
// the modes are identical. A directory already implied by a file becomes explicit.
func (t *Tree) AddDir(p string, mode fs.FileMode) error {
	if err := checkPath(p); err != nil {
		return fmt.Errorf("adding directory: %w", err)
	}
	if err := checkPerm(p, mode); err != nil {
		return fmt.Errorf("adding directory: %w", err)
	}
	if old, ok := t.dirs[p]; ok {
		if old != mode {
			return fmt.Errorf("adding directory %s: already added with mode %#o, now %#o", p, uint32(old), uint32(mode))
		}
		return nil
	}
	if err := t.claim([]op{{p, kindExplicitDir}}); err != nil {
		return fmt.Errorf("adding directory: %w", err)
	}
	t.dirs[p] = mode
	return nil
}

var unitSuffixes = []string{
	".service", ".socket", ".device", ".mount", ".automount", ".swap", ".target", ".path", ".timer",
	".snapshot", ".slice", ".scope",
}

func checkName(kind, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("invalid %s name %q", kind, name)
	}
	return nil
}

// normalizeUnit validates u and returns a copy with drop-ins sorted by name.
func normalizeUnit(u Unit) (Unit, error) {
	if err := checkName("systemd unit", u.Name); err != nil {
		return Unit{}, err
	}
	if !slices.Contains(unitSuffixes, path.Ext(u.Name)) {
		return Unit{}, fmt.Errorf("systemd unit %q: unknown unit type %q", u.Name, path.Ext(u.Name))
	}
	if u.Contents == "" && len(u.Dropins) == 0 && !u.Enabled {
		return Unit{}, fmt.Errorf("systemd unit %q: no contents, no drop-ins and not enabled: nothing to do", u.Name)
	}
	out := Unit{Name: u.Name, Contents: u.Contents, Enabled: u.Enabled}
	seen := map[string]bool{}
	for _, d := range u.Dropins {
		if err := checkName("drop-in", d.Name); err != nil {
			return Unit{}, fmt.Errorf("systemd unit %q: %w", u.Name, err)
		}
		if path.Ext(d.Name) != ".conf" {
			return Unit{}, fmt.Errorf("systemd unit %q: drop-in %q must end in .conf", u.Name, d.Name)
		}
		if d.Contents == "" {
			return Unit{}, fmt.Errorf("systemd unit %q: drop-in %q is empty", u.Name, d.Name)
		}
		if seen[d.Name] {
			return Unit{}, fmt.Errorf("systemd unit %q: drop-in %q given twice", u.Name, d.Name)
		}
		seen[d.Name] = true
		out.Dropins = append(out.Dropins, d)
	}
	slices.SortFunc(out.Dropins, func(a, b Dropin) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// unitPaths are the node paths a (normalized) unit is written to.
func unitPaths(u Unit) []op {
	var ops []op
	if u.Contents != "" {
		ops = append(ops, op{path.Join(systemdUnitDir, u.Name), kindUnitFile})
	}
	for _, d := range u.Dropins {
		ops = append(ops, op{path.Join(systemdUnitDir, u.Name+".d", d.Name), kindUnitFile})
	}
	return ops
}

// AddUnit adds a systemd unit. Adding the same unit twice is an error unless both are identical (drop-ins
// are compared regardless of order). The unit file and drop-ins it becomes under /etc/systemd/system must
// not collide with files or directories of the tree.
func (t *Tree) AddUnit(u Unit) error {
	n, err := normalizeUnit(u)
	if err != nil {
		return fmt.Errorf("adding unit: %w", err)
	}
	if old, ok := t.units[n.Name]; ok {
		if !unitsEqual(old, n) {
			return fmt.Errorf("adding unit %s: already added with different contents, drop-ins or enablement", n.Name)
		}
		return nil
	}
	if err := t.claim(unitPaths(n)); err != nil {
		return fmt.Errorf("adding unit %s: %w", n.Name, err)
	}
	t.units[n.Name] = n
	return nil
}

func unitsEqual(a, b Unit) bool {
	return a.Name == b.Name && a.Contents == b.Contents && a.Enabled == b.Enabled && slices.Equal(a.Dropins, b.Dropins)
}

// Files returns the files, sorted by path. The returned contents must not be modified.
func (t *Tree) Files() []File {
	out := make([]File, 0, len(t.files))
	for _, f := range t.files {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Dirs returns the explicitly added directories, sorted by path (Contents nil).
func (t *Tree) Dirs() []File {
	out := make([]File, 0, len(t.dirs))
	for p, m := range t.dirs {
		out = append(out, File{Path: p, Mode: m})
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Units returns the units, sorted by name, each with its drop-ins sorted by name.
func (t *Tree) Units() []Unit {
	out := make([]Unit, 0, len(t.units))
	for _, u := range t.units {
		u.Dropins = slices.Clone(u.Dropins)
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Unit) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// clone returns a deep-enough copy of t (file contents are never mutated, so they are shared).
func (t *Tree) clone() *Tree {
	c := NewTree()
	for k, v := range t.files {
		c.files[k] = v
	}
	for k, v := range t.dirs {
		c.dirs[k] = v
	}
	for k, v := range t.units {
		c.units[k] = v
	}
	for k, v := range t.nodes {
		c.nodes[k] = v
	}
	return c
}

// Merge adds everything from o (same rules as Add*). On error t is left unchanged.
func (t *Tree) Merge(o *Tree) error {
	if o == nil {
		return nil
	}
	c := t.clone()
	for _, d := range o.Dirs() {
		if err := c.AddDir(d.Path, d.Mode); err != nil {
			return fmt.Errorf("merging trees: %w", err)
		}
	}
	for _, f := range o.Files() {
		if err := c.addFile(f.Path, f.Mode, f.Contents, true, f.Compressed); err != nil {
			return fmt.Errorf("merging trees: %w", err)
		}
	}
	for _, u := range o.Units() {
		if err := c.AddUnit(u); err != nil {
			return fmt.Errorf("merging trees: %w", err)
		}
	}
	*t = *c
	return nil
}
