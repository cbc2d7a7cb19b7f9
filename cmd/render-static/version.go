package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is the tool's version when the build sets one: go build -ldflags "-X main.version=v1.2.3" (make build
// sets git describe's). Without it, the version is the main module's as the go command stamped it (a
// pseudo-version from the VCS, or "(devel)").
var version string

// commit is the commit the build says it was made from (-ldflags "-X main.commit=..."; make build sets it), for
// builds the go command did not stamp with VCS information (-buildvcs=false, a git worktree); the go command's
// vcs.revision wins when there is one.
var commit string

// pinned are the modules whose versions decide what a render is, in the order `version` prints them: the control
// loops, the API types and the Kubernetes client they run against.
var pinned = []struct{ label, path string }{
	{"library-go", "github.com/openshift/library-go"},
	{"openshift/api", "github.com/openshift/api"},
	{"openshift/client-go", "github.com/openshift/client-go"},
	{"kubernetes", "k8s.io/client-go"},
}

// buildVersion is what a bug report needs to know of this binary.
type buildVersion struct {
	Version  string
	Commit   string // vcs.revision, "" when the build had no VCS information
	Time     string // vcs.time
	Modified bool   // vcs.modified: built from a work tree with changes
	Go       string // the toolchain, and the platform
	Modules  [][2]string
}

// readBuildVersion reads the binary's build information (ldVersion, ldCommit: the -ldflags version and commit, ""
// if none).
func readBuildVersion(bi *debug.BuildInfo, ok bool, ldVersion, ldCommit string) buildVersion {
	v := buildVersion{Version: ldVersion, Commit: ldCommit, Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || bi == nil {
		if v.Version == "" {
			v.Version = "unknown (no build information)"
		}
		return v
	}
	if v.Version == "" {
		v.Version = bi.Main.Version
	}
	if v.Version == "" || v.Version == "(devel)" {
		v.Version = "devel"
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	for _, p := range pinned {
		ver := "not linked"
		for _, d := range bi.Deps {
			if d.Path != p.path {
				continue
			}
			ver = p.path + " " + d.Version
			if r := d.Replace; r != nil {
				ver += " => " + strings.TrimSpace(r.Path+" "+r.Version)
			}
		}
		v.Modules = append(v.Modules, [2]string{p.label, ver})
	}
	return v
}

func (v buildVersion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "render-static %s\n", v.Version)
	c := v.Commit
	switch {
	case c == "":
		c = "unknown (built without VCS information)"
	case v.Modified:
		c += " (modified work tree)"
	}
	if v.Time != "" {
		c += ", " + v.Time
	}
	fmt.Fprintf(&b, "  %-20s %s\n", "commit:", c)
	fmt.Fprintf(&b, "  %-20s %s\n", "go:", v.Go)
	for _, m := range v.Modules {
		fmt.Fprintf(&b, "  %-20s %s\n", m[0]+":", m[1])
	}
	return b.String()
}

// thisBuild is the version of the running binary.
func thisBuild() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	return readBuildVersion(bi, ok, version, commit)
}

// setVersionFlag gives the root command --version, printing what `version` prints.
func setVersionFlag(root *cobra.Command) {
	v := thisBuild()
	root.Version = v.Version
	root.SetVersionTemplate(strings.ReplaceAll(v.String(), "{{", `{{"{{"}}`))
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go toolchain and the pinned library-go, OpenShift API and Kubernetes versions",
		Long: `version prints what a bug report needs: render-static's version (set at build time with
-ldflags "-X main.version=...", else the module version the go command stamped), the commit it was built from
(and whether the work tree had changes), the Go toolchain and platform, and the versions of library-go, the
OpenShift API and client and the Kubernetes client it is built with. --version prints the same.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			_, err := io.WriteString(stdout, thisBuild().String())
			return err
		},
	}
}
