// Package fleet renders many sites from one input: a directory of site folders or one YAML list, one output
// folder per site, a bounded number of renders at a time (--jobs), optionally only one shard of the site list
// (--shard i/n, for a Kubernetes Indexed Job). A site that fails is reported with its field errors; the others
// still finish.
package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/inputfile"
	"github.com/render-static/render-static/pkg/installconfig"
)

// SiteFile is the per-site file in a site folder, next to its install-config.yaml.
const (
	SiteFile          = "site.yaml"
	InstallConfigFile = "install-config.yaml"
)

// Site is one site to render.
type Site struct {
	// Name is the site's name: its folder in the input directory and in the output.
	Name string `json:"name" yaml:"name"`
	// InstallConfig is the site's install-config.yaml (in a YAML list: relative to the list's directory).
	InstallConfig string `json:"installConfig" yaml:"installConfig"`
	// NodeName and NodeIP are --node-name and --node-ip of a single render.
	NodeName string `json:"nodeName,omitempty" yaml:"nodeName"`
	NodeIP   string `json:"nodeIP" yaml:"nodeIP"`
	// InfraID is --infra-id; empty means generated like the installer does.
	InfraID string `json:"infraID,omitempty" yaml:"infraID"`
	// InstallDevice is the disk the site's live.ign installs to; NetworkKeyfiles are the site's NetworkManager
	// keyfiles (in a site folder: relative to it; in a YAML list: to the list's directory). The inputs of the same
	// names of a single render (pkg/pipeline).
	InstallDevice   string   `json:"installDevice,omitempty" yaml:"installDevice"`
	NetworkKeyfiles []string `json:"networkKeyfiles,omitempty" yaml:"networkKeyfiles"`

	// problems are what was wrong with the site's entry; such a site fails without rendering.
	problems installconfig.ErrorList
}

// siteFields is what a site.yaml holds (the name is the folder's, the install-config is next to it).
type siteFields struct {
	NodeName        string   `yaml:"nodeName"`
	NodeIP          string   `yaml:"nodeIP"`
	InfraID         string   `yaml:"infraID"`
	InstallDevice   string   `yaml:"installDevice"`
	NetworkKeyfiles []string `yaml:"networkKeyfiles"`
}

// Load reads the site list: a directory holding one folder per site (install-config.yaml + site.yaml), or a
// YAML file holding a list of sites. Sites come back sorted by name. An error means the list itself is unusable
// (unreadable, not YAML, duplicate or invalid names); a site whose own entry is wrong is returned and fails
// when run, with its problems.
func Load(path string) ([]Site, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() && !st.Mode().IsRegular() {
		return nil, &inputfile.NotRegularError{Path: path, Kind: inputfile.Kind(st.Mode())}
	}
	var sites []Site
	if st.IsDir() {
		sites, err = loadDir(path)
	} else {
		sites, err = loadList(path)
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(sites, func(i, j int) bool { return sites[i].Name < sites[j].Name })
	seen := map[string]bool{}
	for _, s := range sites {
		if msgs := validation.IsDNS1123Label(s.Name); len(msgs) > 0 {
			return nil, fmt.Errorf("%s: site name %q: %s", path, s.Name, strings.Join(msgs, "; "))
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("%s: site %q appears twice", path, s.Name)
		}
		seen[s.Name] = true
	}
	if len(sites) == 0 {
		return nil, fmt.Errorf("%s: no sites", path)
	}
	return sites, nil
}

// loadDir reads every sub-directory of dir as a site, following symbolic links to directories (a link that leads
// nowhere is a site that fails, with the reason); other entries (a README, the list's own notes) are ignored.
func loadDir(dir string) ([]Site, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var sites []Site
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		folder := filepath.Join(dir, e.Name())
		s := Site{Name: e.Name(), InstallConfig: filepath.Join(folder, InstallConfigFile)}
		if e.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(folder)
			switch {
			case err != nil:
				target, _ := os.Readlink(folder)
				s.problems = append(s.problems, installconfig.FieldError{Field: folder, Detail: fmt.Sprintf("a symbolic link to %s, which cannot be followed (%v)", target, errors.Unwrap(err))})
				sites = append(sites, s)
				continue
			case !st.IsDir():
				continue
			}
		} else if !e.IsDir() {
			continue
		}
		sitePath := filepath.Join(folder, SiteFile)
		raw, err := inputfile.Read(sitePath)
		var f siteFields
		switch {
		case errors.Is(err, os.ErrNotExist):
			s.problems = append(s.problems, installconfig.FieldError{Field: sitePath, Detail: "missing (nodeIP, nodeName, infraID, installDevice, networkKeyfiles)"})
		case err != nil:
			s.problems = append(s.problems, installconfig.FieldError{Field: sitePath, Detail: err.Error()})
		default:
			if err := inputfile.DecodeStrict(raw, &f); err != nil {
				s.problems = append(s.problems, installconfig.FieldError{Field: sitePath, Detail: err.Error()})
			}
		}
		s.NodeName, s.NodeIP, s.InfraID, s.InstallDevice = f.NodeName, f.NodeIP, f.InfraID, f.InstallDevice
		s.NetworkKeyfiles = relativeTo(folder, f.NetworkKeyfiles)
		sites = append(sites, s)
	}
	return sites, nil
}

// loadList reads a YAML list of sites; installConfig paths are relative to the list's directory.
func loadList(file string) ([]Site, error) {
	raw, err := inputfile.Read(file)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%s: empty", file)
	}
	var sites []Site
	if err := inputfile.DecodeStrict(raw, &sites); err != nil {
		return nil, fmt.Errorf("%s: not a YAML list of sites (name, installConfig, nodeIP, nodeName, infraID, installDevice, networkKeyfiles): %w", file, err)
	}
	base := filepath.Dir(file)
	for i := range sites {
		s := &sites[i]
		if s.InstallConfig == "" {
			s.problems = append(s.problems, installconfig.FieldError{Field: fmt.Sprintf("%s[%d].installConfig", file, i), Detail: "required"})
		} else if !filepath.IsAbs(s.InstallConfig) {
			s.InstallConfig = filepath.Join(base, s.InstallConfig)
		}
		s.NetworkKeyfiles = relativeTo(base, s.NetworkKeyfiles)
	}
	return sites, nil
}

// relativeTo makes the relative paths absolute from dir.
func relativeTo(dir string, paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// AnyFIPS reports whether some site's install-config asks for a FIPS cluster (fips: true): the renders then run
// in FIPS 140-3 mode (pipeline.CheckCryptoMode), all of them, as a process is in that mode from its start. A
// site whose install-config cannot be read or parsed counts as not asking: it fails when run, with its problems.
func AnyFIPS(sites []Site) bool {
	for _, s := range sites {
		data, err := os.ReadFile(s.InstallConfig)
		if err != nil {
			continue
		}
		var peek struct {
			FIPS bool `json:"fips"`
		}
		if sigsyaml.Unmarshal(data, &peek) == nil && peek.FIPS {
			return true
		}
	}
	return false
}
