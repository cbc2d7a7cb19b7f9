package node

import (
	"bytes"
	"fmt"
	"path"

	"github.com/render-static/render-static/pkg/export"
)

// The node's own programs (manifests/node/scripts/) share one shell library, aio-lib.sh. Each script gets it
// through the two lines libraryLines: run from the repository they source the library next to the script; the
// render puts the library in their place (readScript), so every installed script is one file that cannot drift
// from the library it was tested with. TestScriptLibrary keeps the scripts and the library in step.
const (
	scriptsDir  = "scripts"
	libraryName = "aio-lib.sh"
	// libraryLines are the lines of a script that get the library.
	libraryLines = "# shellcheck source=SCRIPTDIR/aio-lib.sh\n. \"$(dirname -- \"${BASH_SOURCE[0]}\")/aio-lib.sh\"\n"
	// libraryHeader is the library's first line, for shellcheck alone; the render leaves it out.
	libraryHeader = "# shellcheck shell=bash "
)

// addProgram installs the node program manifests/node/scripts/<name> (readScript) at p, executable. aio.ign carries
// it gzip-compressed (export.Tree.AddCompressedFile): no other file of the node repeats a program's text.
func addProgram(t *export.Tree, p, name string) error {
	script, err := readScript(name)
	if err != nil {
		return err
	}
	return t.AddCompressedFile(p, 0755, script)
}

// readScript returns the node program manifests/node/scripts/<name> as aio.ign installs it: its libraryLines
// replaced by aio-lib.sh (without its first line), between two comment lines that name it.
func readScript(name string) ([]byte, error) {
	script, err := readEmbedded(path.Join(scriptsDir, name))
	if err != nil {
		return nil, err
	}
	lib, err := readEmbedded(path.Join(scriptsDir, libraryName))
	if err != nil {
		return nil, err
	}
	return inlineLibrary(name, script, lib)
}

// inlineLibrary puts lib in place of script's libraryLines, which it must hold once.
func inlineLibrary(name string, script, lib []byte) ([]byte, error) {
	if n := bytes.Count(script, []byte(libraryLines)); n != 1 {
		return nil, fmt.Errorf("node: manifests/node/scripts/%s gets %s %d times, not once (%q)", name, libraryName, n, libraryLines)
	}
	header, body, ok := bytes.Cut(lib, []byte("\n"))
	if !ok || !bytes.HasPrefix(header, []byte(libraryHeader)) {
		return nil, fmt.Errorf("node: manifests/node/scripts/%s does not start with %q", libraryName, libraryHeader)
	}
	var b bytes.Buffer
	b.Grow(len(script) + len(body) + 128)
	before, after, _ := bytes.Cut(script, []byte(libraryLines))
	b.Write(before)
	b.WriteString("# ---- " + libraryName + " (manifests/node/scripts/" + libraryName + "), put here by render-static ----\n")
	b.Write(body)
	b.WriteString("# ---- end of " + libraryName + " ----\n")
	b.Write(after)
	return b.Bytes(), nil
}
