package outdir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/render-static/render-static/internal/inputfile"
	"github.com/render-static/render-static/pkg/export"
)

// MarkerFile is the file WriteDirAtomic puts at the top of every output directory it writes. A directory
// holding it may be replaced by a later WriteDirAtomic; any other non-empty directory is never touched.
const MarkerFile = ".render-static"

const markerContents = "This directory was written by render-static and is replaced as a whole on every run.\n"

// WriteDirAtomic writes an output directory atomically, as one run that holds it (outdir.go): it takes the
// directory's lock (refusing when another run holds it), repairs what killed runs left, fills a fresh temporary
// directory beside dest with fill, adds the marker file MarkerFile, makes everything durable and exchanges the new
// tree with the old one (Lock.Replace).
//
// If dest already exists it must be a directory written earlier by this function (it holds MarkerFile) or an
// empty directory; otherwise WriteDirAtomic returns an error before doing anything. On any failure the temporary
// directory is removed and dest is left exactly as it was. The parent of dest must exist: it is never created.
func WriteDirAtomic(dest string, fill func(tmpDir string) error) error {
	l, err := LockDir(dest, "output")
	if err != nil {
		return fmt.Errorf("writing output %s: %w", dest, err)
	}
	defer l.Release()
	return l.Replace(context.Background(), fill)
}

// removeAll is os.RemoveAll with the top-level entries removed in parallel (an output is ~2,000 files).
func removeAll(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return os.RemoveAll(dir)
	}
	if err := export.Parallel(len(entries), func(i int) error {
		return os.RemoveAll(filepath.Join(dir, entries[i].Name()))
	}); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// renameDir is rename(2). Unlike os.Rename, which refuses any existing directory as the new name, it
// replaces an empty directory at newpath (and fails if that directory is not empty).
func renameDir(oldpath, newpath string) error {
	if err := syscall.Rename(oldpath, newpath); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// checkOutputDest reports whether dest exists (and its permission bits); it returns an error if dest
// exists and must not be replaced.
func checkOutputDest(dest string) (bool, fs.FileMode, error) {
	st, err := os.Lstat(dest)
	if errors.Is(err, fs.ErrNotExist) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	if !st.IsDir() {
		return false, 0, fmt.Errorf("%s exists and is not a directory (%s); refusing to replace it", dest, fileKind(st.Mode()))
	}
	if mst, err := os.Lstat(filepath.Join(dest, MarkerFile)); err == nil && mst.Mode().IsRegular() {
		return true, st.Mode().Perm(), nil
	}
	if !isEmptyDir(dest) {
		return false, 0, fmt.Errorf("%s is a non-empty directory without the %s marker, so render-static did not write it; refusing to replace it", dest, MarkerFile)
	}
	return true, st.Mode().Perm(), nil
}

func isEmptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}

// syncEach fsyncs every regular file and directory under root (root included).
func syncEach(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() && !d.IsDir() {
			return nil
		}
		return syncPath(p)
	})
}

// syncPath fsyncs one file or directory.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	serr := f.Sync()
	cerr := f.Close()
	if serr != nil {
		return fmt.Errorf("fsync %s: %w", p, serr)
	}
	return cerr
}

// fileKind names what a mode says a file is (inputfile.Kind).
func fileKind(m fs.FileMode) string { return inputfile.Kind(m) }
