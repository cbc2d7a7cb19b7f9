// Package inputfile reads the files a user hands render-static (an install-config, an images map, a fleet's site
// files, an Ignition config): regular files only, bounded, without blocking. A named pipe given by mistake would
// otherwise block the command in open(2) until something writes to it, and a device could be read forever.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxSize bounds what Read reads: every input of render-static is far smaller.
const MaxSize = 64 << 20

// NotRegularError says that an input path is something other than a regular file (after following symlinks).
type NotRegularError struct {
	Path string
	Kind string // "a directory", "a named pipe (FIFO)", ...
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, e.Kind)
}

// Read reads the regular file at path (symlinks followed), at most MaxSize bytes. It opens without blocking, so a
// named pipe, a socket or a device is refused at once with a NotRegularError naming what it is.
func Read(path string) ([]byte, error) { return read(path, 0) }

// ReadNoFollow is Read of a file that must not be a symbolic link either: a symlink is refused with a
// NotRegularError ("a symbolic link") without reading what it points to. For inputs whose contents go to the node
// and whose refusals may quote them (NetworkManager keyfiles): a link to /etc/shadow given by mistake is never read.
func ReadNoFollow(path string) ([]byte, error) { return read(path, syscall.O_NOFOLLOW) }

func read(path string, flags int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|flags, 0)
	if err != nil {
		if flags&syscall.O_NOFOLLOW != 0 && errors.Is(err, syscall.ELOOP) {
			if st, serr := os.Lstat(path); serr == nil && st.Mode()&fs.ModeSymlink != 0 {
				return nil, &NotRegularError{Path: path, Kind: Kind(st.Mode())}
			}
		}
		if errors.Is(err, syscall.ENXIO) { // a socket, or a FIFO opened for writing only
			if st, serr := os.Stat(path); serr == nil {
				return nil, &NotRegularError{Path: path, Kind: Kind(st.Mode())}
			}
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Kind: Kind(st.Mode())}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%s is larger than %d MiB", path, MaxSize>>20)
	}
	return b, nil
}

// Kind names what a mode says a file is.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}
