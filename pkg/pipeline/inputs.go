package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/components"
	"github.com/render-static/render-static/pkg/installconfig"
	"github.com/render-static/render-static/pkg/state"
)

// The input table: the one place that knows each of a render's inputs. A row says the input's name (its field in
// problems, its key in the state, a fleet site's field), the render command's flag (cmd/render-static makes its
// flags, their help and the names it says in messages from the rows), the summary's words for it, whether another
// value means another cluster, its default, and how it is read from the options and from the state and saved.
// Every run reads the table: a render (defaults, the saved inputs of a continued cluster, what changed, what fixes
// the cluster), renew and the worker command (the saved inputs, validated again), a fleet (which inputs a site has
// and which the fleet shares) and the CLI (flags, help). The state keeps validated values (the node IPs as parsed,
// the validity as a duration), and the files' contents as given.

// Options are a render's inputs, one field (or a path and its contents) per row of the table. A zero field is one
// not given: a render that continues the cluster saved in Dir takes the saved input, a new cluster the default.
type Options struct {
	// InstallConfig is the install-config's path; InstallConfigData, when not nil, its contents (then the path
	// only names it in messages).
	InstallConfig     string
	InstallConfigData []byte
	NodeIP            string // one IP, or two comma-separated of different families
	NodeName          string // default DefaultNodeName
	Dir               string
	CertValidity      time.Duration // default certs.DefaultLeafValidity
	// InfraID is the infrastructure name; not given, it is generated like the installer does.
	InfraID string
	// Images is a YAML file mapping components to pull specs (ImagesData, when not nil, its contents); not
	// given, the defaults.
	Images     string
	ImagesData []byte
	// ReleaseInfo is a release's images by digest (ReleaseInfoData, when not nil, its contents): the JSON of `oc adm
	// release info --output=json`, or a payload's image-references ImageStream (clusterconfig.ParseRelease); its
	// pull specs replace the defaults, and Images' entries replace its. Not given, none.
	ReleaseInfo     string
	ReleaseInfoData []byte
	// Flavor is "openshift" (the default) or "upstream".
	Flavor string
	// Workers is the workers file (WorkersData, when not nil, its contents): the workers the install-config's
	// compute replicas ask for, each with nodeName and nodeIP, and its own installDevice and networkKeyfiles
	// (workers.go); not given, none. WorkerList, when not nil, are those workers with their keyfiles read (as the
	// state keeps them): then Workers only names where they come from, and WorkersData is not read.
	Workers     string
	WorkersData []byte
	WorkerList  []state.Worker
	// AddedWorkers are the workers added to the cluster after its first render (the worker command); a render
	// continuing a saved cluster takes the saved ones.
	AddedWorkers []state.Worker
	// Fresh starts a new cluster even when Dir holds a previous render's state (pkg/state); on a directory that
	// holds a cluster only with ReplaceCluster, which keeps the old directory beside the new one (dir.go).
	Fresh          bool
	ReplaceCluster bool
	// Reinstall accepts a re-render whose changes the running node cannot take from an update (aio-update replaces
	// files but installs no unit and restarts no service: pkg/node ReadAtStart): the node is to be installed again
	// from the new aio.ign, and the re-render writes no update for it.
	Reinstall bool
	// InstallDevice is the disk live.ign installs the node to, an absolute path under /dev ("": none, the boot's
	// coreos.inst.install_dev kernel argument then names it).
	InstallDevice string
	// NetworkKeyfiles are the paths of NetworkManager keyfiles for the node; NetworkKeyfileData, when not nil,
	// the keyfiles themselves (then the paths are not read). NetworkManager reads each (internal/nmkeyfile), and
	// every node IP must be a static address of one of them.
	NetworkKeyfiles    []string
	NetworkKeyfileData []clusterconfig.Keyfile
	// Parallelism is SettleOptions.Parallelism: how the loops run, never what they write (0: the default). Not an
	// input: it changes nothing rendered.
	Parallelism int
}

// DefaultNodeName is the node name when none is given.
const DefaultNodeName = "master-0"

// The inputs' names (installconfig.Ref in messages; the state's keys).
const (
	InInstallConfig = "installConfig"
	InNodeIP        = installconfig.NodeIPInput
	InNodeName      = "nodeName"
	InDir           = "dir"
	InCertValidity  = "certValidity"
	InInfraID       = "infraID"
	InImages        = "images"
	InReleaseInfo   = "releaseInfo"
	InFlavor        = "flavor"
	InFresh         = "fresh"
	// InReplaceCluster confirms InFresh on a directory that holds a cluster; InReinstall accepts a re-render that
	// the running node can take only by being installed again. Neither is saved: they say what this run may do.
	InReplaceCluster = "replaceCluster"
	InReinstall      = "reinstall"
	InWorkers        = "workers"
	// InAddedWorkers are the workers the worker command added (no flag of the render's).
	InAddedWorkers = "addedWorkers"
	// InInstallDevice and InNetworkKeyfiles are the live ISO install's (live.go): the disk, and the node's
	// NetworkManager keyfiles.
	InInstallDevice   = "installDevice"
	InNetworkKeyfiles = "networkKeyfiles"
)

// InstallationDiskField is the install-config's field whose disk is the default install device.
const InstallationDiskField = "bootstrapInPlace.installationDisk"

// Scope says where an input comes from in a fleet (pkg/fleet): each site's own (its site file), or one value for
// every site (a flag of the fleet command); the rest a fleet sets itself (the site's folder) or has not.
type Scope int

const (
	NotInFleet Scope = iota // a fleet sets it itself (the site's folder), or has none
	PerSite                 // each site's own: a field of its site file
	FleetWide               // one value for every site: a flag of the fleet command
)

// Input is one row of the input table.
type Input struct {
	// Name is the input's name: its field in problems, its key in the state (state.Inputs), a fleet site's field.
	Name string
	// Flag is the render command's flag, without its dashes ("": none); Usage its help, naming other inputs as
	// {name} (installconfig.Expand), so that only cmd/render-static says flags.
	Flag, Usage string
	// Label is how the summary names the input among those taken from the state and those that changed ("": it
	// says nothing of it).
	Label string
	// Identity, when set, says why another value than the saved one is another cluster (refused; a fresh render
	// starts one). The install-config fixes some of its fields (installConfigIdentity).
	Identity string
	Fleet    Scope

	// Bind is the Options field the flag sets: *string, *time.Duration, *bool or *[]string.
	Bind func(*Options) any
	// given says whether the options give it.
	given func(*Options) bool
	// load sets it from the state st (where names the saved input in messages); false: the state has none.
	load loader
	// save keeps it in si, validated (in) where the state keeps a validated value; nil: the state keeps it
	// elsewhere, or not at all.
	save func(o *Options, in *clusterconfig.Inputs, si state.Inputs)
	// def fills in the default of a new cluster; nil: none.
	def func(*Options)
	// value is a one-line input as the summary and identity say it (nil: the summary names the input only).
	value func(*Options) string
}

// Inputs is the input table, in the order the help and the summary list them.
var Inputs = []Input{
	{Name: InInstallConfig, Flag: "install-config", Label: "install-config", Fleet: PerSite,
		Usage: "install-config.yaml to render (required for a new cluster; default: the one saved in {dir})",
		Bind:  func(o *Options) any { return &o.InstallConfig },
		given: func(o *Options) bool { return o.InstallConfig != "" || o.InstallConfigData != nil },
		load: loadString(func(o *Options, s, where string) error {
			o.InstallConfig, o.InstallConfigData = "the saved install-config ("+where+")", []byte(s)
			return nil
		}),
		save: func(o *Options, _ *clusterconfig.Inputs, si state.Inputs) {
			si.Set(InInstallConfig, string(o.InstallConfigData))
		},
	},
	{Name: InNodeIP, Flag: "node-ip", Label: "node IP", Fleet: PerSite,
		Usage: "the node's IP; for dual stack two comma-separated IPs, primary first (required for a new cluster; default: the saved one)",
		Bind:  func(o *Options) any { return &o.NodeIP },
		given: func(o *Options) bool { return o.NodeIP != "" },
		load:  loadString(func(o *Options, s, _ string) error { o.NodeIP = s; return nil }),
		save:  func(_ *Options, in *clusterconfig.Inputs, si state.Inputs) { si.Set(InNodeIP, joinIPs(in.NodeIPs)) },
		value: func(o *Options) string { return o.NodeIP },
	},
	{Name: InNodeName, Flag: "node-name", Fleet: PerSite,
		Identity: "the node's name is in its certificates, its Node and the static pods' mirror pods",
		Usage:    "the node's name; aio.ign sets /etc/hostname to it (default " + DefaultNodeName + ", or the saved one)",
		Bind:     func(o *Options) any { return &o.NodeName },
		given:    func(o *Options) bool { return o.NodeName != "" },
		load:     loadString(func(o *Options, s, _ string) error { o.NodeName = s; return nil }),
		save:     func(_ *Options, in *clusterconfig.Inputs, si state.Inputs) { si.Set(InNodeName, in.NodeName) },
		def:      func(o *Options) { o.NodeName = DefaultNodeName },
		value:    func(o *Options) string { return o.NodeName },
	},
	{Name: InDir, Flag: "dir", Usage: "output directory (replaced atomically)",
		Bind: func(o *Options) any { return &o.Dir }},
	{Name: InCertValidity, Flag: "cert-validity", Label: "cert validity", Fleet: FleetWide,
		Usage: "validity of leaf certificates (e.g. 720h or 30d); signers live at least ten years (default " + certs.DefaultLeafValidity.String() + ", or the saved one)",
		Bind:  func(o *Options) any { return &o.CertValidity },
		given: func(o *Options) bool { return o.CertValidity != 0 },
		load: loadString(func(o *Options, s, _ string) error {
			v, err := time.ParseDuration(s)
			if err != nil {
				return fmt.Errorf("%q: %w", s, err)
			}
			o.CertValidity = v
			return nil
		}),
		save: func(_ *Options, in *clusterconfig.Inputs, si state.Inputs) {
			si.Set(InCertValidity, in.Lifetimes.Leaf.String())
		},
		def:   func(o *Options) { o.CertValidity = certs.DefaultLeafValidity },
		value: func(o *Options) string { return o.CertValidity.String() },
	},
	{Name: InInfraID, Flag: "infra-id", Fleet: PerSite, Identity: "the infrastructure name is the cluster's",
		Usage: "infrastructure name (default: the one in {dir}'s state, else <cluster name>-<5 random characters>, as the installer makes it)",
		Bind:  func(o *Options) any { return &o.InfraID },
		given: func(o *Options) bool { return o.InfraID != "" },
		// The state keeps it with the cluster (state.State.InfraID), not among the inputs.
		load: func(o *Options, st *state.State, _, _ string) (bool, error) {
			o.InfraID = st.InfraID
			return st.InfraID != "", nil
		},
		value: func(o *Options) string { return o.InfraID },
	},
	{Name: InImages, Flag: "images", Label: "images", Fleet: FleetWide,
		Usage: "YAML map of component (" + strings.Join(components.ImageNames(), ", ") + ") to image pull spec; unnamed components keep their defaults (the upstream flavor's images: " + strings.Join(components.UpstreamImages(), ", ") + "; " + clusterconfig.KubeProxyImage + " and " + clusterconfig.CoreDNSImage + " default by flavor; default: the saved map)",
		Bind:  func(o *Options) any { return &o.Images },
		given: func(o *Options) bool { return o.Images != "" || o.ImagesData != nil },
		load:  loadString(func(o *Options, s, where string) error { o.Images, o.ImagesData = where, []byte(s); return nil }),
		save: func(o *Options, _ *clusterconfig.Inputs, si state.Inputs) {
			if len(o.ImagesData) > 0 {
				si.Set(InImages, string(o.ImagesData))
			}
		},
	},
	{Name: InReleaseInfo, Flag: "release-info", Label: "release info", Fleet: FleetWide,
		Usage: "a release's images by digest: the JSON of oc adm release info --output=json <release>, or the payload's image-references (an ImageStream; for the upstream flavor, one whose tag names are its {images} keys); every image the nodes pull must be in it, by digest, for the install-config's architecture; its pull specs replace the defaults, and {images} entries replace its (default: the saved one, else none)",
		Bind:  func(o *Options) any { return &o.ReleaseInfo },
		given: func(o *Options) bool { return o.ReleaseInfo != "" || o.ReleaseInfoData != nil },
		load: loadString(func(o *Options, s, where string) error {
			o.ReleaseInfo, o.ReleaseInfoData = where, []byte(s)
			return nil
		}),
		save: func(o *Options, _ *clusterconfig.Inputs, si state.Inputs) {
			if len(o.ReleaseInfoData) > 0 {
				si.Set(InReleaseInfo, string(o.ReleaseInfoData))
			}
		},
	},
	{Name: InFlavor, Flag: "flavor", Label: "flavor", Fleet: FleetWide,
		Usage: "static pods to render: openshift (the operators' pods, OpenShift images) or upstream (flag-only pods for the upstream kube-apiserver, kube-controller-manager, kube-scheduler and etcd images); loops, certificates and layout are the same (default " + string(clusterconfig.FlavorOpenShift) + ", or the saved one)",
		Bind:  func(o *Options) any { return &o.Flavor },
		given: func(o *Options) bool { return o.Flavor != "" },
		load:  loadString(func(o *Options, s, _ string) error { o.Flavor = s; return nil }),
		save:  func(_ *Options, in *clusterconfig.Inputs, si state.Inputs) { si.Set(InFlavor, string(in.Flavor)) },
		def:   func(o *Options) { o.Flavor = string(clusterconfig.FlavorOpenShift) },
		value: func(o *Options) string { return o.Flavor },
	},
	{Name: InFresh, Flag: "fresh", Usage: "start a new cluster (new keys) even when {dir} holds a previous render's state/ (then only with {replaceCluster})",
		Bind: func(o *Options) any { return &o.Fresh }},
	{Name: InReplaceCluster, Flag: "replace-cluster", Usage: "with {fresh} on a {dir} that holds a cluster: replace it by the new one, keeping the old {dir} whole beside it as <dir>.old-<infra ID>-<time> (0700: its state, workers and node updates)",
		Bind: func(o *Options) any { return &o.ReplaceCluster }},
	{Name: InReinstall, Flag: "reinstall", Usage: "re-render even when the change reaches the running node only by installing it again from the new aio.ign (files it reads only when a service starts, such as the kubelet's unit and configuration, CRI-O's, the hostname and the network keyfiles); no update is written for the node",
		Bind: func(o *Options) any { return &o.Reinstall }},
	{Name: InWorkers, Flag: "workers", Label: "workers",
		Usage: "YAML list of the workers the install-config's compute replicas ask for, each with nodeName and nodeIP (as {nodeIP}), and optionally its own installDevice and networkKeyfiles (paths relative to the file's folder; as {installDevice}, {networkKeyfiles}); each gets {dir}/workers/<nodeName>/worker.ign and live.ign (default: none, or the saved list)",
		Bind:  func(o *Options) any { return &o.Workers },
		given: func(o *Options) bool { return o.Workers != "" || o.WorkersData != nil || o.WorkerList != nil },
		load:  loadWorkers(func(o *Options, ws []state.Worker, where string) { o.Workers, o.WorkerList = where, ws }),
		save: func(o *Options, in *clusterconfig.Inputs, si state.Inputs) {
			if len(o.WorkerList) > 0 {
				si.Set(InWorkers, savedWorkers(o.WorkerList, in.Workers[:len(o.WorkerList)]))
			}
		},
	},
	{Name: InAddedWorkers,
		given: func(o *Options) bool { return o.AddedWorkers != nil },
		load:  loadWorkers(func(o *Options, ws []state.Worker, _ string) { o.AddedWorkers = ws }),
		save: func(o *Options, in *clusterconfig.Inputs, si state.Inputs) {
			if len(o.AddedWorkers) > 0 {
				si.Set(InAddedWorkers, savedWorkers(o.AddedWorkers, in.Workers[len(o.WorkerList):]))
			}
		},
	},
	{Name: InInstallDevice, Flag: "install-device", Label: "install device", Fleet: PerSite,
		Usage: "the disk live.ign installs the node to, an absolute path under /dev (e.g. /dev/sda, /dev/disk/by-id/...; a whole disk, not a partition; default: the saved one, else the install-config's " + InstallationDiskField + ", else none: the live ISO then needs coreos.inst.install_dev=/dev/<disk> on its kernel command line)",
		Bind:  func(o *Options) any { return &o.InstallDevice },
		given: func(o *Options) bool { return o.InstallDevice != "" },
		load:  loadString(func(o *Options, s, _ string) error { o.InstallDevice = s; return nil }),
		// Saved as given: not given, the install-config's bootstrapInPlace.installationDisk is the default of each
		// render (validate), and a later install-config may name another.
		save: func(o *Options, _ *clusterconfig.Inputs, si state.Inputs) {
			if o.InstallDevice != "" {
				si.Set(InInstallDevice, o.InstallDevice)
			}
		},
		value: func(o *Options) string { return orNone(o.InstallDevice) },
	},
	{Name: InNetworkKeyfiles, Flag: "network-keyfile", Label: "network keyfiles", Fleet: PerSite,
		Usage: "a NetworkManager keyfile (NAME.nmconnection) for the node, written 0600 under /etc/NetworkManager/system-connections by aio.ign and live.ign (repeatable); NetworkManager's nmcli (1.42 or later) must be on PATH to read it, and every {nodeIP} must be one of its static addresses (default: the saved ones)",
		Bind:  func(o *Options) any { return &o.NetworkKeyfiles },
		given: func(o *Options) bool { return o.NetworkKeyfiles != nil || o.NetworkKeyfileData != nil },
		load: func(o *Options, st *state.State, key, where string) (bool, error) {
			var ks []state.Keyfile
			if ok, err := st.Inputs.Get(key, &ks); !ok || err != nil || len(ks) == 0 {
				return false, err
			}
			for i, k := range ks {
				o.NetworkKeyfileData = append(o.NetworkKeyfileData, clusterconfig.Keyfile{Name: k.Name, Contents: []byte(k.Contents),
					Source: fmt.Sprintf("%s[%d] (%s)", where, i, k.Name)})
			}
			return true, nil
		},
		save: func(_ *Options, in *clusterconfig.Inputs, si state.Inputs) {
			if len(in.NetworkKeyfiles) > 0 {
				si.Set(InNetworkKeyfiles, savedKeyfiles(in.NetworkKeyfiles))
			}
		},
	},
}

// InputNamed is the table's row of the input name.
func InputNamed(name string) (Input, bool) {
	i := slices.IndexFunc(Inputs, func(in Input) bool { return in.Name == name })
	if i < 0 {
		return Input{}, false
	}
	return Inputs[i], true
}

// IsInput says whether a problem's field is an input of the table, or an element of a list input (workers[0]...).
func IsInput(field string) bool {
	name, _, _ := strings.Cut(field, "[")
	_, ok := InputNamed(name)
	return ok
}

// loader is a row's load: the input key from the state st, named where in messages; false when the state has none.
type loader func(o *Options, st *state.State, key, where string) (bool, error)

// loadString loads an input the state keeps as a string (none when empty); set's error is the saved value's problem.
func loadString(set func(o *Options, s, where string) error) loader {
	return func(o *Options, st *state.State, key, where string) (bool, error) {
		var s string
		if ok, err := st.Inputs.Get(key, &s); !ok || err != nil || s == "" {
			return false, err
		}
		return true, set(o, s, where)
	}
}

// loadWorkers loads a list of workers, their keyfiles named where they are saved (SavedWorkers).
func loadWorkers(set func(o *Options, ws []state.Worker, where string)) loader {
	return func(o *Options, st *state.State, key, where string) (bool, error) {
		var ws []state.Worker
		if ok, err := st.Inputs.Get(key, &ws); !ok || err != nil || len(ws) == 0 {
			return false, err
		}
		set(o, SavedWorkers(where, ws), where)
		return true, nil
	}
}

// savedAt names the saved input name of the render directory dir in messages.
func savedAt(dir, name string) string {
	return filepath.Join(dir, state.Dir, "render.json") + " inputs." + name
}

// withDefaults fills in the defaults of the inputs not given.
func (o Options) withDefaults() Options {
	for _, in := range Inputs {
		if in.def != nil && !in.given(&o) {
			in.def(&o)
		}
	}
	return o
}

// FromState gives the inputs not given the ones the state of the render directory dir keeps, and says which it
// took (by their labels), or the saved inputs that cannot be read (problems naming them where they are saved).
func (o Options) FromState(st *state.State, dir string) (Options, []string, installconfig.ErrorList) {
	var took []string
	var errs installconfig.ErrorList
	for _, in := range Inputs {
		if in.load == nil || in.given(&o) {
			continue
		}
		ok, err := in.load(&o, st, in.Name, savedAt(dir, in.Name))
		if err != nil {
			errs = append(errs, installconfig.FieldError{Field: SavedField(in.Name), Detail: err.Error()})
			continue
		}
		if ok && in.Label != "" {
			took = append(took, in.Label)
		}
	}
	return o, took, errs
}

// SavedField names a saved input in problems: where the state keeps it, relative to the render directory.
func SavedField(name string) string {
	if name == InInfraID {
		return state.Dir + "/render.json " + InInfraID
	}
	return state.Dir + "/render.json inputs." + name
}

// SaveInputs are the inputs as the state keeps them, so that a later run (renew, a re-render) needs none of them
// again: validated values (in), and the files' contents.
func SaveInputs(o Options, in *clusterconfig.Inputs) state.Inputs {
	o = o.withDefaults()
	si := state.Inputs{}
	for _, row := range Inputs {
		if row.save != nil {
			row.save(&o, in, si)
		}
	}
	return si
}

// changedInputs lists the inputs whose saved values differ, as the summary says them: "label was -> now" for a
// one-line input, its label for the others.
func changedInputs(was, now *state.State) []string {
	var out []string
	for _, in := range Inputs {
		if in.Label == "" || in.save == nil || sameJSON(was.Inputs[in.Name], now.Inputs[in.Name]) {
			continue
		}
		if in.value == nil {
			out = append(out, in.Label)
			continue
		}
		var a, b Options
		_, _ = in.load(&a, was, in.Name, "")
		_, _ = in.load(&b, now, in.Name, "")
		out = append(out, fmt.Sprintf("%s %s -> %s", in.Label, in.value(&a), in.value(&b)))
	}
	return out
}

// sameJSON says whether two saved values are the same (a state's file is indented, a new one compact).
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// savedWorkers are workers as the state keeps them: each with its IPs as validated (valid, in order).
func savedWorkers(given []state.Worker, valid []clusterconfig.Worker) []state.Worker {
	out := make([]state.Worker, len(given))
	for i, w := range given {
		w.NodeIP = joinIPs(valid[i].IPs)
		out[i] = w
	}
	return out
}

func savedKeyfiles(ks []clusterconfig.Keyfile) []state.Keyfile {
	if len(ks) == 0 {
		return nil
	}
	out := make([]state.Keyfile, len(ks))
	for i, k := range ks {
		out[i] = state.Keyfile{Name: k.Name, Contents: string(k.Contents)}
	}
	return out
}

// ReadFleetWide reads and checks the inputs a fleet gives every site (Scope FleetWide) once, before any site: o with
// their files read, or their problems (the other inputs are each site's).
func ReadFleetWide(o Options) (Options, installconfig.ErrorList) {
	o, errs := o.readFiles()
	if _, err := validate(o, errs); err != nil {
		errs = nil
		for _, e := range asFieldErrors("", err) {
			if in, ok := InputNamed(e.Field); ok && in.Fleet == FleetWide {
				errs = append(errs, e)
			}
		}
	}
	return o, errs
}
