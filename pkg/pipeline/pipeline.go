// Package pipeline is a render from end to end, in three steps a reader can follow:
//
//  1. Validate: the install-config and the flags, every problem at once.
//  2. Engine: seed the in-memory cluster with what the installer would give it, then run every component's loops
//     in order to a fixpoint (pkg/loops).
//  3. Export: every object the fakes hold as manifests, the static-pod installer layout of each component, and
//     all of it packed into one Ignition config, written atomically (pkg/export).
package pipeline

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/state"
)

// Options are the CLI's inputs.
type Options struct {
	InstallConfig string
	NodeIP        string // one IP, or two comma-separated of different families
	NodeName      string
	Dir           string
	CertValidity  time.Duration
	// InfraID is the infrastructure name; empty means generated like the installer does.
	InfraID string
	// Images is a YAML file mapping components to pull specs; empty means the defaults.
	Images string
	// Flavor is "openshift" (default) or "upstream".
	Flavor string
	// Fresh starts a new cluster even when Dir holds a previous render's state (pkg/state).
	Fresh bool
	// Parallelism is EngineOptions.Parallelism: how the loops run, never what they write (0: the default).
	Parallelism int
}

// DefaultNodeName is --node-name's default.
const DefaultNodeName = "master-0"

// Validate checks the options and the install-config and returns the render's inputs, or every problem found
// (an installconfig.ErrorList).
func Validate(o Options) (*clusterconfig.Inputs, error) {
	var errs installconfig.ErrorList
	add := func(field, format string, args ...interface{}) {
		errs = append(errs, installconfig.FieldError{Field: field, Detail: fmt.Sprintf(format, args...)})
	}
	if o.InstallConfig == "" {
		add("--install-config", "required")
	}
	if o.Dir == "" {
		add("--dir", "required")
	}
	var nodeIPs []netip.Addr
	if o.NodeIP == "" {
		add("--node-ip", "required")
	} else if ips, err := installconfig.ParseNodeIPs(o.NodeIP); err != nil {
		errs = append(errs, asFieldErrors("--node-ip", err)...)
	} else {
		nodeIPs = ips
	}
	if msgs := validation.IsDNS1123Subdomain(o.NodeName); len(msgs) > 0 {
		add("--node-name", "%q is not a valid node name: %s", o.NodeName, strings.Join(msgs, "; "))
	}
	if o.InfraID != "" {
		if msgs := validation.IsDNS1123Label(o.InfraID); len(msgs) > 0 || len(o.InfraID) > 27 {
			add("--infra-id", "%q must be a DNS-1123 label of at most 27 characters", o.InfraID)
		}
	}
	lt, err := certs.NewLifetimes(o.CertValidity)
	if err != nil {
		errs = append(errs, asFieldErrors("--cert-validity", err)...)
	}
	images, err := clusterconfig.LoadImages(o.Images, components.DefaultImages())
	if err != nil {
		errs = append(errs, asFieldErrors("--images", err)...)
	}
	flavor, err := clusterconfig.ParseFlavor(o.Flavor)
	if err != nil {
		errs = append(errs, asFieldErrors("--flavor", err)...)
	}
	var ic *installconfig.InstallConfig
	if o.InstallConfig != "" {
		ic, err = installconfig.Load(o.InstallConfig, nodeIPs)
		if err != nil {
			// Field problems name their field; problems of the whole file (unreadable, empty, not YAML) the file.
			errs = append(errs, asFieldErrors(o.InstallConfig, err)...)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	infraID := o.InfraID
	if infraID == "" {
		infraID = clusterconfig.NewInfraID(ic.Metadata.Name)
	}
	return &clusterconfig.Inputs{InstallConfig: ic, NodeName: o.NodeName, NodeIPs: nodeIPs, InfraID: infraID, Lifetimes: lt, Images: images, Flavor: flavor}, nil
}

// asFieldErrors keeps field errors as they are and turns any other error into one naming field.
func asFieldErrors(field string, err error) installconfig.ErrorList {
	switch e := err.(type) {
	case installconfig.ErrorList:
		return e
	case installconfig.FieldError:
		return installconfig.ErrorList{e}
	}
	msg := err.Error()
	if strings.HasPrefix(msg, field+": ") {
		msg = strings.TrimPrefix(msg, field+": ")
	}
	return installconfig.ErrorList{{Field: field, Detail: msg}}
}

// Render runs the three steps and writes the output directory.
func Render(ctx context.Context, o Options) (*Summary, error) {
	start := time.Now()
	// A previous render's state in Dir is continued (same cluster, same keys) unless Fresh.
	var st *state.State
	if !o.Fresh && o.Dir != "" && state.Exists(o.Dir) {
		var err error
		if st, err = state.Load(o.Dir); err != nil {
			return nil, fmt.Errorf("%w (--fresh starts a new cluster)", err)
		}
		if o.InfraID == "" {
			o.InfraID = st.InfraID
		}
		// A renamed node is another node: its Node, certificates and revisions in the state are the old name's.
		if n := st.Inputs.NodeName; n != "" && n != o.NodeName {
			return nil, installconfig.ErrorList{{Field: "--node-name", Detail: fmt.Sprintf("%q, but the state in %s is of node %q: a renamed node is a new cluster (--fresh)", o.NodeName, o.Dir, n)}}
		}
	}
	in, err := Validate(o)
	if err != nil {
		return nil, err
	}
	eng, err := RunEngineWith(ctx, in, st, nil, EngineOptions{Parallelism: o.Parallelism})
	if err != nil {
		return nil, err
	}
	// aio.ign's validation runs while the output directory is written; aio.ign is written, and the
	// directory replaced, only once it passed.
	out, err := exportValidating(ctx, eng)
	if err != nil {
		return nil, err
	}
	if out.State.Inputs, err = savedInputs(o); err != nil {
		_ = out.Validated()
		return nil, err
	}
	written := time.Now()
	if err := out.Write(o.Dir); err != nil {
		if verr := out.Validated(); verr != nil {
			return nil, fmt.Errorf("ignition: %w", verr)
		}
		return nil, err
	}
	out.summarized()
	s := out.Summary
	s.Crypto = FIPSModeLine()
	s.WriteTime = time.Since(written)
	s.Elapsed = time.Since(start)
	return &s, nil
}

// savedInputs are the options as the state keeps them, so that renew needs none of them again.
func savedInputs(o Options) (state.Inputs, error) {
	ic, err := os.ReadFile(o.InstallConfig)
	if err != nil {
		return state.Inputs{}, err
	}
	var images []byte
	if o.Images != "" {
		if images, err = os.ReadFile(o.Images); err != nil {
			return state.Inputs{}, err
		}
	}
	return state.Inputs{InstallConfig: string(ic), Images: string(images), NodeIP: o.NodeIP, NodeName: o.NodeName,
		CertValidity: o.CertValidity.String(), Flavor: o.Flavor}, nil
}
