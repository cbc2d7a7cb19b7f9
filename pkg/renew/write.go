package renew

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/installconfig"
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

// updateReadme is the update's README, naming by, the run that made it (commandBy, rerenderBy).
func updateReadme(by string) string { return fmt.Sprintf(updateReadmeFormat, by) }

// commandBy names the run of command (renew, worker) in an update's README, with add the worker it added (nil:
// none).
func commandBy(command string, add *state.Worker) string {
	by := fmt.Sprintf("%q", "render-static "+command)
	if add != nil {
		by += fmt.Sprintf(", which added the worker %s: the node's CSR approver learns of it here", add.NodeName)
	}
	return by
}

// write replaces the held directory atomically with the renewed render and, when there is one, the new update
// (its README readme); earlier updates are kept (DIR/updates/<id>).
func write(ctx context.Context, d *pipeline.Dir, out *pipeline.Output, upd *Update, readme string) error {
	dir := d.Path
	return d.ReplaceWith(ctx, func(tmp string) error {
		if err := out.Fill(tmp); err != nil {
			return err
		}
		return fillUpdate(dir, tmp, upd, readme)
	})
}

// fillUpdate puts the updates of the directory dir into its new tree tmp: the kept ones (DIR/updates), and, when
// upd is not nil, upd as DIR/update (its README readme) with the directory's last update kept as updates/<its id>;
// otherwise the last update as it is. Every run that makes an update (renew, worker, a re-render) writes it so.
func fillUpdate(dir, tmp string, upd *Update, readme string) error {
	{
		if err := copyIfExists(filepath.Join(dir, UpdatesDir), filepath.Join(tmp, UpdatesDir)); err != nil {
			return err
		}
		prev := filepath.Join(dir, UpdateDir)
		if upd == nil {
			return copyIfExists(prev, filepath.Join(tmp, UpdateDir))
		}
		if _, err := os.Lstat(prev); err == nil {
			// checkPending made sure it has an id that no kept update has.
			if upd.Previous == "" {
				return fmt.Errorf("%s has no id to keep it under in %s", prev, UpdatesDir)
			}
			if err := copyIfExists(prev, filepath.Join(tmp, UpdatesDir, upd.Previous)); err != nil {
				return err
			}
		}
		return writeUpdate(filepath.Join(tmp, UpdateDir), upd, readme)
	}
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

// checkPending checks the update DIR holds for the node (DIR/update), if any, before a run that may make the next
// one: that update is then kept as updates/<its id>, and the new one names it as the one before, so its
// update.json must be readable, its id a folder's name, and no update kept under that name already. Anything else
// is refused (a problem of dir): archived under a made-up name, the update would lose its place in the chain, and a
// second one would be merged into the first.
func checkPending(dir string) installconfig.ErrorList {
	pending := filepath.Join(dir, UpdateDir)
	if _, err := os.Lstat(pending); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	refuse := func(what string) installconfig.ErrorList {
		return installconfig.ErrorList{{Field: pipeline.InDir, Detail: fmt.Sprintf(
			"%s: %s; it is the update for the running node, which the next update follows and which is then kept as %s/<its id>: restore %s from a backup of the directory and run again (or, if the node has applied it, as aio-update status there says, move %s out of %s first)",
			filepath.Join(pending, "update.json"), what, filepath.Join(dir, UpdatesDir), pending, pending, dir)}}
	}
	u, err := readUpdate(pending)
	switch {
	case err != nil:
		return refuse(fmt.Sprintf("cannot be read (%v)", unwrapPath(err)))
	case u.ID == "" || u.ID == "." || u.ID == ".." || strings.ContainsAny(u.ID, "/\x00") || strings.IndexFunc(u.ID, unicode.IsControl) >= 0:
		return refuse(fmt.Sprintf("cannot be read (its id %q is not an update's)", u.ID))
	}
	if _, err := os.Lstat(filepath.Join(dir, UpdatesDir, u.ID)); err == nil {
		return refuse(fmt.Sprintf("its id %s is already the name of the kept update %s", u.ID, filepath.Join(dir, UpdatesDir, u.ID)))
	}
	return nil
}

// unwrapPath is err without the path an *fs.PathError or readUpdate repeats (checkPending names the file).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var je *json.SyntaxError
	if errors.As(err, &je) {
		return je
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te
	}
	return err
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
