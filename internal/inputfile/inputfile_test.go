package inputfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "install-config.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, link} {
		if b, err := Read(p); err != nil || string(b) != "apiVersion: v1\n" {
			t.Errorf("Read(%s) = %q, %v", p, b, err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nothing"), dangling); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{fifo: "is a named pipe (FIFO), not a regular file", dir: "is a directory, not a regular file",
		sock: "is a socket, not a regular file", "/dev/null": "is a character device, not a regular file"} {
		done := make(chan error, 1)
		go func() { _, err := Read(p); done <- err }()
		select {
		case err := <-done:
			var nr *NotRegularError
			if !errors.As(err, &nr) || !strings.Contains(err.Error(), want) {
				t.Errorf("Read(%s): %v, want %q", p, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Read(%s) blocked", p)
		}
	}
	if _, err := Read(dangling); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read of a dangling symlink: %v", err)
	}
}
