package pipeline

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/inventory"
	"github.com/render-static/render-static/pkg/node"
)

// Summary is what the CLI prints.
type Summary struct {
	Loops, Passes, Objects, Files int
	IgnitionBytes                 int
	// LiveInstall is what live.ign takes and how it installs the control-plane node (live.go).
	LiveInstall
	// WorkerLive are the workers' live.ign (DIR/workers/<name>/live.ign), as the control-plane node's.
	WorkerLive            []WorkerLive
	EarliestExpiry        time.Time
	EarliestExpirySubject string // the certificate's name in `render-static certs`
	// OffUntil is until when the node may be powered off and still come back on its own: the earliest expiry
	// among the certificates it keeps after its first boot (the admin kubeconfig and the first-boot manifests
	// under /opt/openshift go). Nothing on the node renews them: the kubelet renews only the certificates
	// kube-controller-manager signs for it, and only while it runs. Powered on later, the node needs
	// `render-static renew` and `aio-update recover` (docs/node.md).
	OffUntil        time.Time
	OffUntilSubject string
	// AdminKubeconfigExpiry is when the admin kubeconfig's client certificate (DIR/auth/kubeconfig) expires: renew
	// never renews it (its signer's key is not kept), so it counts for neither expiry above.
	AdminKubeconfigExpiry time.Time
	// UserCAs are the install-config's additionalTrustBundle CAs (the user's, never renewed: counted for neither
	// expiry above); UserCAsExpired those already expired (each also a warning).
	UserCAs, UserCAsExpired int
	UserCAsFirstExpiry      time.Time
	Elapsed                 time.Duration
	// Timing of the render's parts, for benchmarks. IgnitionTime is building Ignition, with the state captured and
	// the earliest expiry found meanwhile; a render validates Ignition while it writes the output directory
	// (WriteTime: until the directory is in place and durable). The rest of Elapsed is setting up: reading the
	// inputs (and a saved state), building the cluster and the loops.
	KeygenTime, LoopsTime, ExportTime, IgnitionTime, WriteTime time.Duration
	// XZTime is how long xz took to measure the live.ign embed sizes (the node's and the workers', one after
	// another; 0 when every saved size served): it runs beside the write, which waits for it.
	XZTime time.Duration
	// Warnings are inputs that render but need care (leaves of minutes): PrintWarnings writes them, the command
	// to stderr, apart from the summary.
	Warnings []string
	// PeakRSSMB, when not 0, is printed: the command sets it to its process's peak RSS (a fleet's renders share
	// one process, so Render leaves it 0).
	PeakRSSMB float64
	// Crypto, when not empty, says the keys were made in FIPS 140-3 mode (FIPSModeLine).
	Crypto string

	// What the render did (story.go): the cluster ("<name>.<baseDomain>, infra ID <id>"), whether it continued the
	// one saved in the directory, the node ("<name>, <IPs>"), the flavor, the inputs taken from the state because
	// they were not given, those that changed from the saved ones, each component's revision (and, for one that
	// rolled, what changed), the signers made anew and the update the directory holds for the node.
	Cluster      string
	Continued    bool
	Node, Flavor string
	// Network is what network the cluster runs (podnetwork.Describe).
	Network string
	// Release is the release input the images come from (clusterconfig.Release.Describe; "": none), Images what
	// the nodes pull and from where (pulls.go, Pulls.Line).
	Release, Images string
	Workers         []string // "<name> <IPs>", each with its worker.ign in the directory
	FromState       []string
	Changed         []string
	Revisions       []string
	NewSigners      []string
	PendingUpdate   string
	// NodeUpdate is what a re-render wrote for the running node (pkg/pipeline RenderWith): the new update, or why
	// none ("": the render writes none, as a new cluster's).
	NodeUpdate string
	// Site is what the next steps name (nextsteps.go).
	Site Site
}

// Print writes the summary to w (the warnings: PrintWarnings).
func (s Summary) Print(w io.Writer, dir string) {
	fmt.Fprintf(w, "rendered %s\n", filepath.Join(dir, "aio.ign"))
	if s.Cluster != "" {
		how := "a new cluster"
		if s.Continued {
			how = "continued from " + filepath.Join(dir, "state")
		}
		fmt.Fprintf(w, "  cluster:          %s (%s)\n", s.Cluster, how)
		fmt.Fprintf(w, "  node:             %s\n", s.Node)
		if len(s.Workers) > 0 {
			fmt.Fprintf(w, "  workers:          %s (%s, %s)\n", strings.Join(s.Workers, "; "), filepath.Join(dir, WorkersDir, "<name>", WorkerIgnition), WorkerLiveIgnition)
		}
		fmt.Fprintf(w, "  flavor:           %s\n", s.Flavor)
		if s.Network != "" {
			fmt.Fprintf(w, "  network:          %s\n", s.Network)
		}
	}
	if s.Release != "" {
		fmt.Fprintf(w, "  release:          %s\n", s.Release)
	}
	if s.Images != "" {
		fmt.Fprintf(w, "  images:           %s\n", s.Images)
	}
	if len(s.FromState) > 0 {
		fmt.Fprintf(w, "  saved inputs:     %s (not given, so the state's)\n", strings.Join(s.FromState, ", "))
	}
	if len(s.Changed) > 0 {
		fmt.Fprintf(w, "  changed inputs:   %s\n", strings.Join(s.Changed, "; "))
	}
	if len(s.Revisions) > 0 {
		fmt.Fprintf(w, "  revisions:        %s\n", strings.Join(s.Revisions, "; "))
	}
	if len(s.NewSigners) > 0 {
		fmt.Fprintf(w, "  new signers:      %s (library-go's rotation: past 80%% of their validity)\n", strings.Join(s.NewSigners, ", "))
	}
	switch {
	case s.NodeUpdate != "":
		fmt.Fprintf(w, "  node update:      %s\n", s.NodeUpdate)
	case s.PendingUpdate != "":
		fmt.Fprintf(w, "  node update:      %s\n", s.PendingUpdate)
	}
	fmt.Fprintf(w, "  loops:            %d, fixpoint after %d passes\n", s.Loops, s.Passes)
	fmt.Fprintf(w, "  objects:          %d manifests\n", s.Objects)
	fmt.Fprintf(w, "  files:            %d on the node\n", s.Files)
	fmt.Fprintf(w, "  aio.ign:          %d bytes\n", s.IgnitionBytes)
	if lines := s.liveLines(); len(lines) == 2 {
		fmt.Fprintf(w, "  live.ign:         %s\n", lines[0])
		fmt.Fprintf(w, "  install:          %s\n", lines[1])
	}
	for _, wl := range s.WorkerLive {
		wl.Print(w)
	}
	fmt.Fprintf(w, "  earliest expiry:  %s (%s)\n", s.EarliestExpiry.UTC().Format(time.RFC3339), s.EarliestExpirySubject)
	if !s.OffUntil.IsZero() {
		fmt.Fprintf(w, "  off at most until %s (%s): powered on later, the node needs render-static renew and aio-update recover\n",
			s.OffUntil.UTC().Format(time.RFC3339), s.OffUntilSubject)
	}
	if !s.AdminKubeconfigExpiry.IsZero() {
		fmt.Fprintf(w, "  admin kubeconfig: %s (%s: render-static renew does not renew it; after it, use the node's %s, which renew renews)\n",
			s.AdminKubeconfigExpiry.UTC().Format(time.RFC3339), filepath.Join(dir, AdminKubeconfigFile), node.LocalhostKubeconfig)
	}
	if s.UserCAs > 0 {
		expired := ""
		if s.UserCAsExpired > 0 {
			expired = fmt.Sprintf(", %d expired (see the warnings)", s.UserCAsExpired)
		}
		fmt.Fprintf(w, "  user CAs:         %d from the install-config's additionalTrustBundle%s, the first to expire at %s: yours to replace, not renewed by render-static, not counted above\n",
			s.UserCAs, expired, s.UserCAsFirstExpiry.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "  elapsed:          %s\n", s.Elapsed.Round(time.Millisecond))
	if s.PeakRSSMB > 0 {
		fmt.Fprintf(w, "  peak RSS:         %.1f MB\n", s.PeakRSSMB)
	}
	if s.Crypto != "" {
		fmt.Fprintf(w, "  crypto:           %s\n", s.Crypto)
	}
}

// PrintWarnings writes the warnings, one "warning: ..." line each.
func (s Summary) PrintWarnings(w io.Writer) {
	for _, warning := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
}

// AdminKubeconfigFile is the admin kubeconfig in the output directory.
const AdminKubeconfigFile = "auth/kubeconfig"

// earliestExpiry is the certificate that expires first among the node's files (CA bundles and kubeconfigs
// included), named as `render-static certs` names it (pkg/inventory): by what it is, not by its CN; and the one
// that expires first among those the node keeps after its first boot (Summary.OffUntil); neither is a user CA
// or the admin kubeconfig's certificate, which renew does not renew: those are said apart. The Secrets and
// ConfigMaps among manifests (what the tree holds under the manifests directory) are read from their objects
// rather than parsed back from their YAML.
func earliestExpiry(t *export.Tree, workers []WorkerOutput, manifests []export.Manifest) expiring {
	files := filesByPath(t, workers)
	firstBootOnly := func(p string) bool {
		for _, d := range []string{node.ManifestsDir, node.AdminKubeconfigPath, node.AIOKubeDir} {
			if p == d || strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}
	now := time.Now()
	x, err := inventory.ExpiriesWith(files, inventoryManifests(files, manifests), now, firstBootOnly)
	if err != nil {
		return expiring{name: "unknown: " + err.Error()}
	}
	var e expiring
	if c := x.Earliest; c == nil {
		e.name = "none"
	} else {
		e.notAfter, e.name = c.NotAfter, c.Name
	}
	if kept := x.Kept; kept != nil {
		e.offUntil, e.offUntilName = kept.NotAfter, kept.Name
	}
	if x.AdminKubeconfig != nil {
		e.admin = x.AdminKubeconfig.NotAfter
	}
	e.userCAs = len(x.UserCAs)
	if len(x.UserCAs) > 0 {
		e.userCAsFirst = x.UserCAs[0].NotAfter
	}
	for _, c := range x.UserCAs {
		if !c.NotAfter.After(now) {
			e.userCAsExpired = append(e.userCAsExpired, inventory.ExpiredUserCA(c))
		}
	}
	return e
}

// Inventory is the inventory of the output's node files at now, as `render-static certs` lists them (the Secrets
// and ConfigMaps among the manifests read from their objects): what renew names its certificates after.
func (o *Output) Inventory(now time.Time) (*inventory.Inventory, error) {
	files := filesByPath(o.Tree, o.Workers)
	return inventory.FromFilesWith(files, inventoryManifests(files, o.Manifests), now)
}

// filesByPath are the contents of a tree's files by node path, and the workers' by inventory.WorkerPath (as
// `render-static certs --dir` reads a render directory).
func filesByPath(t *export.Tree, workers []WorkerOutput) map[string][]byte {
	files := map[string][]byte{}
	for _, f := range t.Files() {
		files[f.Path] = f.Contents
	}
	for _, w := range workers {
		for _, f := range w.Tree.Files() {
			files[inventory.WorkerPath(w.Name, f.Path)] = f.Contents
		}
	}
	return files
}

// inventoryManifests are the core Secrets and ConfigMaps among manifests as the inventory reads them, by node
// path, for those whose file in files is their YAML and whose object holds what parsing that YAML gives back
// (string kind, namespace, name and data values; anything else is left to the inventory to parse).
func inventoryManifests(files map[string][]byte, manifests []export.Manifest) map[string]inventory.Manifest {
	out := map[string]inventory.Manifest{}
	for _, m := range manifests {
		if m.GVK.Group != "" || (m.GVK.Kind != "Secret" && m.GVK.Kind != "ConfigMap") {
			continue
		}
		p := path.Join(node.ManifestsDir, m.File)
		if b, ok := files[p]; !ok || !bytes.Equal(b, m.NodeBytes()) {
			continue
		}
		if im, ok := asInventoryManifest(m.Object); ok {
			out[p] = im
		}
	}
	return out
}

func asInventoryManifest(obj map[string]interface{}) (inventory.Manifest, bool) {
	var im inventory.Manifest
	var ok bool
	if im.Kind, ok = obj["kind"].(string); !ok {
		return im, false
	}
	if md, found := obj["metadata"]; found {
		mdm, isMap := md.(map[string]interface{})
		if !isMap {
			return im, false
		}
		for k, dst := range map[string]*string{"namespace": &im.Namespace, "name": &im.Name} {
			if v, found := mdm[k]; found {
				if *dst, ok = v.(string); !ok {
					return im, false
				}
			}
		}
	}
	for key, dst := range map[string]*map[string]string{"data": &im.Data, "stringData": &im.StringData} {
		data, found := obj[key]
		if !found || data == nil {
			continue
		}
		dm, isMap := data.(map[string]interface{})
		if !isMap {
			return im, false
		}
		*dst = make(map[string]string, len(dm))
		for k, v := range dm {
			if (*dst)[k], ok = v.(string); !ok {
				return im, false
			}
		}
	}
	return im, true
}
