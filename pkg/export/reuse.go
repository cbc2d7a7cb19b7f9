package export

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Reusing the previous output's files. Creating a file costs an inode; on the development machine's ext4 that is
// ~1 ms a file (measured: 2,600 small files created in 2.6 s, hard-linked in 0.06 s), so a re-render, whose ~2,600
// files are almost all unchanged, spent most of its time creating them. While outdir.Lock.Replace fills a temporary
// directory that replaces a previous output, WriteFile hard-links a file from the previous output instead of
// creating it when the previous output holds the same relative path as a regular file with the same permission
// bits and the same contents (compared byte for byte). The previous output is only ever renamed aside and unlinked
// afterwards, so the shared inode ends up belonging to the new output alone; and a path written a second time is
// unlinked first (see WriteFile), so a shared inode is never written through.
var previousOutputs sync.Map // temporary directory being filled → the previous output it replaces

// ReuseDuring makes WriteFile link unchanged files from prev while tmp is filled; the returned func ends it
// (outdir.Lock.Replace calls it around the fill of an output that replaces a previous one). The paths are kept
// clean, as filepath.Join makes the paths a fill writes: os.MkdirTemp(".", …), the temporary directory of a --dir
// without a directory part (the default "aio"), is "./.aio.tmp-…", and no file written into it, such as
// ".aio.tmp-…/aio.ign", would have been found under it.
func ReuseDuring(tmp, prev string) func() {
	tmp = filepath.Clean(tmp)
	previousOutputs.Store(tmp, prev)
	return func() { previousOutputs.Delete(tmp) }
}

// previousOf is the path in a previous output that p, a path in a temporary directory being filled, replaces.
func previousOf(p string) (string, bool) {
	p = filepath.Clean(p)
	var old string
	previousOutputs.Range(func(k, v any) bool {
		tmp := k.(string)
		if rel, ok := strings.CutPrefix(p, tmp+string(filepath.Separator)); ok {
			old = filepath.Join(v.(string), rel)
			return false
		}
		return true
	})
	return old, old != ""
}

// linkUnchanged links old to p if old is a regular file with exactly mode and data; it reports whether it did. A
// regular file already at p (a path written twice) is replaced; anything else there stays, and the caller's write
// fails on it. Any failure reports false, and the caller writes p itself. It costs four system calls besides the
// link (lstat, open, one read, close): a re-render links nearly every file of its output.
func linkUnchanged(old, p string, mode fs.FileMode, data []byte) bool {
	if !holdsExactly(old, mode, data) {
		return false
	}
	err := linkFile(old, p) // replaces a regular file at p (a path written twice)
	if errors.Is(err, fs.ErrNotExist) {
		if mkdirAllExact(filepath.Dir(p), 0o755) != nil {
			return false
		}
		err = linkFile(old, p)
	}
	return err == nil
}

// holdsExactly says whether old is a regular file with exactly mode and data (compared byte for byte).
func holdsExactly(old string, mode fs.FileMode, data []byte) bool {
	st, err := os.Lstat(old)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != mode || st.Size() != int64(len(data)) {
		return false
	}
	f, err := os.OpenFile(old, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	// One read of one byte more than data: a regular file gives all it holds up to that in one read, so a file
	// that grew since the lstat reads longer than data, and one that shrank shorter.
	buf := make([]byte, len(data)+1)
	n, err := f.Read(buf)
	if err != nil && !(errors.Is(err, io.EOF) && len(data) == 0) {
		return false
	}
	return n == len(data) && bytes.Equal(buf[:n], data)
}
