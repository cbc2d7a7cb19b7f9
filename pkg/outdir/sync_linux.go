package outdir

import (
	"fmt"
	"os"
	"syscall"
)

// beginSync is called on a fresh output directory before anything is written into it; the syncer it returns
// makes everything under root durable, before the rename that publishes it. On Linux that is one syncfs(2) on
// root: it flushes the file system root lives on (every file and directory written under it included) and, as
// root was opened before the writes, reports any writeback error they met: one call instead of an fsync for each
// of the ~1,200 files of a render.
func beginSync(root string) (*syncer, error) {
	f, err := os.Open(root)
	if err != nil {
		return nil, err
	}
	return &syncer{root: root, f: f}, nil
}

type syncer struct {
	root string
	f    *os.File
}

func (s *syncer) sync() error {
	if _, _, errno := syscall.Syscall(sysSyncfs, s.f.Fd(), 0, 0); errno != 0 {
		if errno == syscall.ENOSYS {
			return syncEach(s.root)
		}
		return fmt.Errorf("syncfs %s: %w", s.root, errno)
	}
	return nil
}

func (s *syncer) close() { _ = s.f.Close() }
