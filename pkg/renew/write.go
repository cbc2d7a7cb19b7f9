package renew

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/pipeline"
	"github.com/render-static/render-static/pkg/state"
)

const updateReadmeFormat = `SECRET: this update holds private keys of the cluster. Every file here is 0600.

An update for the running all-in-one node, made by %s. On the node (as root):

    aio-update apply <this directory>      verify, install, wait for the pods, update the API objects
    aio-update rollback                    put back the pod manifests and files the last apply replaced

update.json says what it does: the certificates renewed (named as render-static certs names them, old and new
not-after, the objects holding each), each component's revision
from -> to, and every file with its place on the node, mode and sha256. files.tsv and components.tsv are the
same, for aio-update. Apply the updates of a render directory in order: update.json names the one before
("previous"); the earlier ones are kept in ../updates/<id>.
`

// updateReadme is the update's README for the run of command (renew, worker) that made it, with add the worker it
// added (nil: none).
func updateReadme(command string, add *state.Worker) string {
	by := fmt.Sprintf("%q", "render-static "+command)
	if add != nil {
		by += fmt.Sprintf(", which added the worker %s: the node's CSR approver learns of it here", add.NodeName)
	}
	return fmt.Sprintf(updateReadmeFormat, by)
}

// write replaces the held directory atomically with the renewed render and, when there is one, the new update
// (its README readme); earlier updates are kept (DIR/updates/<id>).
func write(ctx context.Context, d *pipeline.Dir, out *pipeline.Output, upd *Update, readme string) error {
	dir := d.Path
	return d.ReplaceWith(ctx, func(tmp string) error {
		if err := out.Fill(tmp); err != nil {
			return err
		}
		if err := copyIfExists(filepath.Join(dir, UpdatesDir), filepath.Join(tmp, UpdatesDir)); err != nil {
			return err
		}
		prev := filepath.Join(dir, UpdateDir)
		if upd == nil {
			return copyIfExists(prev, filepath.Join(tmp, UpdateDir))
		}
		if _, err := os.Stat(prev); err == nil {
			id := upd.Previous
			if id == "" {
				id = "unknown"
			}
			if err := copyIfExists(prev, filepath.Join(tmp, UpdatesDir, id)); err != nil {
				return err
			}
		}
		return writeUpdate(filepath.Join(tmp, UpdateDir), upd, readme)
	})
}

// writeUpdate writes the update directory: README (readme), update.json, files.tsv, components.tsv and every entry at its
// source path. Everything is 0600 in 0700 directories: the update carries keys.
func writeUpdate(dir string, u *Update, readme string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	var tsv strings.Builder
	for _, f := range u.Files {
		if err := export.WriteFile(filepath.Join(dir, filepath.FromSlash(f.Source)), 0o600, f.contents); err != nil {
			return err
		}
		dest := f.Path
		if dest == "" {
			dest = f.Object
		}
		fmt.Fprintf(&tsv, "%s\t%s\t%s\t%s\t%s\n", f.Kind, f.Mode, f.SHA256, f.Source, dest)
	}
	var comps strings.Builder
	for _, c := range u.Components {
		fmt.Fprintf(&comps, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Namespace, c.MirrorPod, c.Manifest, strconv.Itoa(c.From), strconv.Itoa(c.To))
	}
	head, err := json.MarshalIndent(u, "", "  ")
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{"README": []byte(readme), "update.json": append(head, '\n'),
		"files.tsv": []byte(tsv.String()), "components.tsv": []byte(comps.String())} {
		if err := export.WriteFile(filepath.Join(dir, name), 0o600, b); err != nil {
			return err
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(p, 0o700)
	})
}

// readUpdate reads an update directory's update.json.
func readUpdate(dir string) (*Update, error) {
	b, err := os.ReadFile(filepath.Join(dir, "update.json"))
	if err != nil {
		return nil, err
	}
	u := &Update{}
	if err := json.Unmarshal(b, u); err != nil {
		return nil, fmt.Errorf("%s/update.json: %w", dir, err)
	}
	return u, nil
}

// copyIfExists is CopyTree, doing nothing when src does not exist.
func copyIfExists(src, dst string) error { return export.CopyTreeIfExists(src, dst) }

// CopyTree copies the tree at src to dst (export.CopyTree). The e2e test copies an update into the node with it.
func CopyTree(src, dst string) error { return export.CopyTree(src, dst) }
