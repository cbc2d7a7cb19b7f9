package inventory

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/vincent-petithory/dataurl"
)

// NodeDirs are the directories of a node's root that hold the control plane's certificates and kubeconfigs.
// The trust anchor of the install-config's trust bundle is read too: after the first boot only it holds the user
// CAs.
var NodeDirs = []string{"etc/kubernetes", "opt/openshift", "var/lib/kubelet/pki", "var/lib/kubelet/kubeconfig", UserCATrustAnchor[1:]}

// maxFile bounds what is read of one file: certificates, bundles and kubeconfigs are far smaller.
const maxFile = 4 << 20

// Load reads the node files of src: a render's output directory (its rootfs/, exactly what aio.ign lays
// down), an aio.ign (or any Ignition config), or a node's root directory ("/" on the node itself).
func Load(src string) (map[string][]byte, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		return FromIgnition(data)
	}
	if fi, err := os.Stat(filepath.Join(src, "rootfs")); err == nil && fi.IsDir() {
		if _, err := os.Stat(filepath.Join(src, "aio.ign")); err == nil {
			files, err := readRoot(filepath.Join(src, "rootfs"), []string{"."})
			if err != nil {
				return nil, err
			}
			return files, readWorkers(src, files)
		}
	}
	return readRoot(src, NodeDirs)
}

// WorkersDir is where a render directory keeps each worker's folder (pipeline.WorkersDir), whose rootfs/ is what
// the worker's Ignition config lays down.
const WorkersDir = "workers"

// WorkerPath is a worker's node file as the inventory names it: "<worker>:<path on the worker>", apart from the
// control-plane node's own paths.
func WorkerPath(worker, nodePath string) string { return worker + ":" + nodePath }

// readWorkers adds the files of every worker's rootfs/ in a render directory, by WorkerPath.
func readWorkers(dir string, files map[string][]byte) error {
	entries, err := os.ReadDir(filepath.Join(dir, WorkersDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no workers
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		wf, err := readRoot(filepath.Join(dir, WorkersDir, e.Name(), "rootfs"), []string{"."})
		if err != nil {
			return err
		}
		for p, data := range wf {
			files[WorkerPath(e.Name(), p)] = data
		}
	}
	return nil
}

// readRoot reads the regular files under the given directories of root, keyed by their absolute node path.
// Symbolic links are not followed (the kubelet's *-current.pem links point at files read anyway).
func readRoot(root string, dirs []string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, d := range dirs {
		start := filepath.Join(root, d)
		if _, err := os.Lstat(start); err != nil {
			continue
		}
		err := filepath.WalkDir(start, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				if os.IsPermission(err) {
					return nil
				}
				return err
			}
			if !de.Type().IsRegular() {
				return nil
			}
			if info, err := de.Info(); err != nil || info.Size() > maxFile {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				if os.IsPermission(err) {
					return fmt.Errorf("%s: %w (run as root to read the node's keys and certificates)", p, err)
				}
				return err
			}
			files[path.Join("/", filepath.ToSlash(rel))] = data
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: neither a render directory (aio.ign and rootfs/) nor a node root (none of %v found)", root, dirs)
	}
	return files, nil
}

// FromIgnition decodes the files an Ignition config writes (data URLs, gzip-compressed or not).
func FromIgnition(data []byte) (map[string][]byte, error) {
	var cfg struct {
		Ignition IgnitionVersion `json:"ignition"`
		Storage  struct {
			Files []IgnitionFile `json:"files"`
		} `json:"storage"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil || cfg.Ignition.Version == "" {
		return nil, fmt.Errorf("not an Ignition config (%v)", err)
	}
	return DecodeFiles(cfg.Storage.Files)
}

// IgnitionVersion is an Ignition config's "ignition" section as FromIgnition reads it: a config has a version.
type IgnitionVersion struct {
	Version string `json:"version"`
}

// IgnitionFile is what FromIgnition reads of an Ignition config's storage.files entry. A caller that parses a
// config for more than its files (pkg/renew reads the earlier aio.ign's units too) decodes them with DecodeFiles,
// so that the config is parsed once.
type IgnitionFile struct {
	Path     string `json:"path"`
	Contents struct {
		Source      *string `json:"source"`
		Compression *string `json:"compression"`
	} `json:"contents"`
}

// DecodeFiles decodes the contents of an Ignition config's files by path: their data URLs, gunzipped when
// compressed. A file with no source or a remote one is left out (nothing to inspect offline).
func DecodeFiles(entries []IgnitionFile) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, f := range entries {
		if f.Contents.Source == nil {
			continue
		}
		du, err := dataurl.DecodeString(*f.Contents.Source)
		if err != nil {
			continue // a remote source: nothing to inspect offline
		}
		b := du.Data
		if f.Contents.Compression != nil && *f.Contents.Compression == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Path, err)
			}
			b, err = io.ReadAll(io.LimitReader(zr, maxFile))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Path, err)
			}
		}
		files[f.Path] = b
	}
	return files, nil
}
