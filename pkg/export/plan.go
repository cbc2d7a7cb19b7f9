package export

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/render-static/render-static/internal/faultpoint"
	"github.com/render-static/render-static/internal/procstat"
)

// A Plan is every directory and file of an output, written by Write at once. Creating a file costs an inode, and
// on the development machine's ext4 (no journal) an inode costs 0.2-1 ms of kernel CPU: without a journal ext4
// skips every inode freed in the last one to six minutes when it allocates one (fs/ext4/ialloc.c,
// recently_deleted), and builds, tests and earlier renders free thousands. So Write creates each distinct file
// once: a file with the same permission bits and contents as one written before it is a hard link to it (a render
// holds every manifest twice, in manifests/ and in rootfs/opt/openshift/manifests/, and the etcd certificates once
// per revision). Writing a path again later (WriteFile, as renew does) replaces it with a new inode, so a shared
// inode is never written through. Write also spends as few system calls as it can on each file (open, write,
// close; a chmod only where the umask would strip a bit of the mode).
type Plan struct {
	dirs  map[string]fs.FileMode // relative (slash) path → mode
	files []File                 // Path relative (slash)
	own   map[int]bool           // indexes of files that share no inode (OwnFile)
}

// Dir adds the directory rel (slash-separated, relative to the plan's root) with exactly mode. A directory a file
// or directory implies and no Dir names is 0755.
func (p *Plan) Dir(rel string, mode fs.FileMode) {
	if p.dirs == nil {
		p.dirs = map[string]fs.FileMode{}
	}
	p.dirs[rel] = mode
}

// File adds the file rel (slash-separated, relative to the plan's root) with exactly mode and data.
func (p *Plan) File(rel string, mode fs.FileMode, data []byte) {
	p.files = append(p.files, File{Path: rel, Mode: mode, Contents: data})
}

// OwnFile adds the file rel as File does, but as a file of its own: never a hard link to another file of the plan
// (nor another to it), nor to the previous output's (reuse.go), whatever its contents. It is for a file the user
// may edit in place (auth/kubeconfig: kubectl config set-context rewrites it), whose edit must not show through
// another path of the output, such as the copy under rootfs/ that aio.ign was made from.
func (p *Plan) OwnFile(rel string, mode fs.FileMode, data []byte) {
	if p.own == nil {
		p.own = map[int]bool{}
	}
	p.own[len(p.files)] = true
	p.File(rel, mode, data)
}

// Rootfs adds the tree under rel as WriteRootfs lays it out: files with their modes, explicit directories with
// theirs, unit files at etc/systemd/system/<name>, drop-ins at etc/systemd/system/<name>.d/<dropin> (0644), and the
// enabled units as "enable <name>" lines, sorted, in etc/systemd/system-preset/20-render-static.preset (0644;
// only when some unit is enabled).
func (p *Plan) Rootfs(rel string, t *Tree) error {
	if t == nil {
		return fmt.Errorf("rootfs: nil tree")
	}
	under := func(node string) string { return path.Join(rel, strings.TrimPrefix(node, "/")) }
	for _, d := range t.Dirs() {
		p.Dir(under(d.Path), d.Mode)
	}
	for _, f := range t.Files() {
		p.File(under(f.Path), f.Mode, f.Contents)
	}
	var enabled []string
	for _, u := range t.Units() {
		if u.Contents != "" {
			p.File(under(path.Join(systemdUnitDir, u.Name)), 0o644, []byte(u.Contents))
		}
		for _, d := range u.Dropins {
			p.File(under(path.Join(systemdUnitDir, u.Name+".d", d.Name)), 0o644, []byte(d.Contents))
		}
		if u.Enabled {
			enabled = append(enabled, "enable "+u.Name+"\n")
		}
	}
	if len(enabled) > 0 {
		slices.Sort(enabled)
		p.File(under(presetPath), 0o644, []byte(strings.Join(enabled, "")))
	}
	return nil
}

// Write writes the plan into root, an existing directory whose own mode it leaves alone. Directories are made
// first, level by level (owner-writable until the files are in), then the files, distinct ones in parallel, then the hard links
// of the duplicates, then the final modes of the directories that needed one, deepest first. Directories that
// already exist get the plan's modes; files that already exist are replaced; symlinks are never followed.
func (p *Plan) Write(root string) error {
	dirModes := map[string]fs.FileMode{}
	for d, m := range p.dirs {
		dirModes[d] = m
	}
	implied := func(rel string) {
		for d := path.Dir(rel); d != "." && d != "/" && d != ""; d = path.Dir(d) {
			if _, ok := dirModes[d]; !ok {
				dirModes[d] = 0o755
			}
		}
	}
	for d, m := range p.dirs {
		if m&^fs.ModePerm != 0 {
			return fmt.Errorf("writing %s: mode %v has bits other than permission bits", d, m)
		}
		implied(d)
	}
	for _, f := range p.files {
		if f.Mode&^fs.ModePerm != 0 {
			return fmt.Errorf("writing %s: mode %v has bits other than permission bits", f.Path, f.Mode)
		}
		if _, isDir := dirModes[f.Path]; isDir {
			return fmt.Errorf("writing %s: both a file and a directory", f.Path)
		}
		implied(f.Path)
	}
	dirs := make([]string, 0, len(dirModes))
	for d := range dirModes {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs) // parents sort before their children
	host := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

	// A mode the umask leaves whole can be given at creation; any other takes a chmod afterwards.
	umask, umaskKnown := currentUmask()
	exact := func(m fs.FileMode) bool { return umaskKnown && m&umask == 0 }

	// Directories level by level (a parent before its children), each level in parallel.
	later := make([]bool, len(dirs)) // whose final mode is set at the end
	mkdir := func(i int) error {
		d := dirs[i]
		m, hp := dirModes[d], host(d)
		direct := exact(m) && m&0o700 == 0o700 // fillable as it is
		create := m
		if !direct {
			create = 0o700
		}
		err := os.Mkdir(hp, create)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("writing %s: %w", hp, err)
		}
		if err != nil { // an existing directory (never a symlink to one) gets the plan's mode
			st, serr := os.Lstat(hp)
			if serr != nil {
				return fmt.Errorf("writing %s: %w", hp, serr)
			}
			if !st.IsDir() {
				return fmt.Errorf("writing %s: exists and is not a directory", hp)
			}
			direct = false
		}
		if !direct {
			if err := os.Chmod(hp, 0o700); err != nil {
				return fmt.Errorf("writing %s: %w", hp, err)
			}
			later[i] = true
		}
		return nil
	}
	var levels [][]int
	for i, d := range dirs {
		depth := strings.Count(d, "/")
		for len(levels) <= depth {
			levels = append(levels, nil)
		}
		levels[depth] = append(levels[depth], i)
	}
	for _, level := range levels {
		if err := parallelFirst(len(level), func(n int) error { return mkdir(level[n]) }); err != nil {
			return err
		}
	}

	// The first file with given mode and contents is written; the next ones link to it.
	var distinct, links []int
	linkTo := make([]int, len(p.files))
	same := newContentIndex(len(p.files))
	for i, f := range p.files {
		if p.own[i] {
			distinct = append(distinct, i)
			continue
		}
		if j, ok := same.firstOf(i, f.Contents, func(j int) bool { return p.files[j].Mode == f.Mode }); ok {
			linkTo[i] = j
			links = append(links, i)
			continue
		}
		distinct = append(distinct, i)
	}
	if err := parallelFirst(len(distinct), func(n int) error {
		f := p.files[distinct[n]]
		if p.own[distinct[n]] {
			faultpoint.Counted("file")
			return writeNewFile(host(f.Path), f.Mode, f.Contents, exact(f.Mode))
		}
		return writeFile(host(f.Path), f.Mode, f.Contents, exact(f.Mode))
	}); err != nil {
		return err
	}
	if err := parallelFirst(len(links), func(n int) error {
		i := links[n]
		return linkFile(host(p.files[linkTo[i]].Path), host(p.files[i].Path))
	}); err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- { // children before their parents
		if !later[i] {
			continue
		}
		if err := os.Chmod(host(dirs[i]), dirModes[dirs[i]]); err != nil {
			return fmt.Errorf("writing %s: %w", host(dirs[i]), err)
		}
	}
	return nil
}

// contentIndex finds the first of a list of items with the same contents (and whatever else a caller compares),
// by a hash of the contents: no copy of them is kept.
type contentIndex struct {
	seed     maphash.Seed
	byHash   map[uint64][]int
	contents map[int][]byte
}

func newContentIndex(n int) *contentIndex {
	return &contentIndex{seed: maphash.MakeSeed(), byHash: make(map[uint64][]int, n), contents: make(map[int][]byte, n)}
}

// firstOf returns the first item added before i with the same contents for which also(j) holds; when there is
// none, it adds i.
func (c *contentIndex) firstOf(i int, contents []byte, also func(j int) bool) (int, bool) {
	h := maphash.Bytes(c.seed, contents)
	for _, j := range c.byHash[h] {
		if bytes.Equal(c.contents[j], contents) && (also == nil || also(j)) {
			return j, true
		}
	}
	c.byHash[h] = append(c.byHash[h], i)
	c.contents[i] = contents
	return 0, false
}

// linkFile makes p a hard link to src, replacing a regular file at p.
func linkFile(src, p string) error {
	faultpoint.Counted("file")
	err := os.Link(src, p)
	if errors.Is(err, fs.ErrExist) {
		if err := removeRegular(p); err != nil {
			return err
		}
		err = os.Link(src, p)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// removeRegular removes the regular file at p, which is about to be replaced; anything else there is an error.
func removeRegular(p string) error {
	st, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("writing %s: exists and is not a regular file", p)
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// writeFile creates p anew (a regular file already there is replaced, never written through: it may share its
// inode) with mode and data; exactMode says that the umask leaves mode whole, so no chmod is needed. The parent
// must exist. Inside an outdir.Lock.Replace of a previous output, an unchanged file is linked (reuse.go).
func writeFile(p string, mode fs.FileMode, data []byte, exactMode bool) error {
	faultpoint.Counted("file")
	if old, ok := previousOf(p); ok && linkUnchanged(old, p, mode, data) {
		return nil
	}
	return writeNewFile(p, mode, data, exactMode)
}

// writeNewFile is writeFile without the previous output's file: p gets an inode of its own.
func writeNewFile(p string, mode fs.FileMode, data []byte, exactMode bool) error {
	const flags = syscall.O_WRONLY | syscall.O_CREAT | syscall.O_EXCL | syscall.O_CLOEXEC | noFollow
	fd, err := openRetry(p, flags, uint32(mode))
	if err == syscall.EEXIST {
		if err := removeRegular(p); err != nil {
			return err
		}
		fd, err = openRetry(p, flags, uint32(mode))
	}
	if err != nil {
		return &fs.PathError{Op: "writing", Path: p, Err: err}
	}
	werr := writeAll(fd, data)
	if werr == nil && !exactMode {
		werr = ignoringEINTR(func() error { return syscall.Fchmod(fd, uint32(mode)) })
	}
	cerr := syscall.Close(fd)
	if werr != nil {
		return &fs.PathError{Op: "writing", Path: p, Err: werr}
	}
	if cerr != nil {
		return &fs.PathError{Op: "writing", Path: p, Err: cerr}
	}
	return nil
}

func openRetry(p string, flags int, mode uint32) (int, error) {
	for {
		fd, err := syscall.Open(p, flags, mode)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}

// writeAll writes data to fd, however many writes it takes.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return syscall.EIO
		}
		data = data[n:]
	}
	return nil
}

// currentUmask is the process's umask, read from /proc/self/status (Linux 4.7 and later); not known elsewhere,
// and then every mode is set with a chmod. It is read at each Write: tests change the umask.
func currentUmask() (fs.FileMode, bool) {
	v, ok := procstat.Field("Umask")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil {
		return 0, false
	}
	return fs.FileMode(n) & fs.ModePerm, true
}
