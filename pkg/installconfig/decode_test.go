package installconfig

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
		list      bool // the error is an ErrorList
	}{
		{name: "empty", doc: "", want: []string{"install-config is empty"}},
		{name: "comments only", doc: "# x\n\n", want: []string{"install-config is empty"}},
		{name: "null document", doc: "---\n~\n", want: []string{"install-config is empty"}},
		{name: "scalar", doc: "hello\n", want: []string{`install-config must be a YAML mapping, got string "hello"`}},
		{name: "list", doc: "- a\n", want: []string{"install-config must be a YAML mapping, got a list"}},
		{name: "syntax", doc: "a: b: c\n", want: []string{"install-config is not valid YAML: mapping values are not allowed in this context"}},
		{name: "tab indentation", doc: "networking:\n\tnetworkType: x\n", want: []string{"install-config is not valid YAML: line 2: found character that cannot start any token"}},
		{name: "two documents", doc: "apiVersion: v1\n---\nkind: InstallConfig\n", want: []string{"install-config must be a single YAML document, found another one at line 2"}},
		{name: "trailing empty documents are fine", doc: "apiVersion: v1\n---\n...\n---\n", list: false, want: nil},
		{
			name: "unknown fields at every level", list: true,
			doc: "apiVersion: v1\nfoo: 1\nmetadata:\n  labels: {}\nnetworking:\n  clusterNetwork:\n  - cidr: 10.0.0.0/8\n    hostprefix: 23\n    bar: x\n" +
				"controlPlane:\n  platform:\n    baremetal: {}\nplatform:\n  none:\n    x: 1\n  vsphere: {}\n  gcp: {}\n",
			want: []string{
				"foo: unknown field",
				"metadata.labels: unknown field",
				`networking.clusterNetwork[0].hostprefix: unknown field (did you mean "hostPrefix"?)`,
				"networking.clusterNetwork[0].bar: unknown field",
				`controlPlane.platform: machine pool platform settings are not supported for single-node static rendering, got "baremetal"`,
				`platform: only "none" is supported for single-node static rendering, got "vsphere"`,
				`platform: only "none" is supported for single-node static rendering, got "gcp"`,
				"platform.none.x: unknown field",
			},
		},
		{
			name: "odd keys", list: true,
			doc:  "\"a b\": 1\n1: 2\n? [x]\n: 3\n",
			want: []string{`["a b"]: unknown field`, `["1"]: unknown field`, "(top level): mapping keys must be strings, got a list"},
		},
		{
			name: "types", list: true,
			doc: "metadata: [a]\ncompute:\n  name: worker\nfips: 1\ncontrolPlane:\n  replicas: 99999999999999999999\n" +
				"networking:\n  clusterNetwork:\n  - cidr: [10.0.0.0/8]\n    hostPrefix: 4294967296\n  serviceNetwork: [{a: b}]\n" +
				"platform: none\nsshKey: {}\npullSecret:\n  auths: {}\n",
			want: []string{
				"metadata: expected a mapping, got a list",
				"compute: expected a list, got a mapping",
				"fips: expected a boolean (true or false), got integer 1",
				"controlPlane.replicas: integer 99999999999999999999 is out of range",
				"networking.clusterNetwork[0].cidr: expected a string, got a list",
				"networking.clusterNetwork[0].hostPrefix: integer 4294967296 is out of range",
				"networking.serviceNetwork[0]: expected a string, got a mapping",
				`platform: expected a mapping, got string "none" (use "platform: {none: {}}")`,
				"sshKey: expected a string, got a mapping",
				"pullSecret: expected a string, got a mapping (put the JSON pull secret in single quotes)",
			},
		},
		{
			name: "duplicate keys", list: true,
			doc:  "apiVersion: v1\nmetadata:\n  name: a\napiVersion: v1\n",
			want: []string{"apiVersion: duplicate key"},
		},
		{
			name: "merge key with a scalar", list: true,
			doc:  "metadata:\n  <<: 5\n",
			want: []string{`metadata["<<"]: merge key needs a mapping or a list of mappings, got integer 5`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ic, err := Parse([]byte(tt.doc))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", ic)
			}
			var list ErrorList
			if got := errors.As(err, &list); got != tt.list {
				t.Errorf("error is ErrorList: %v, want %v", got, tt.list)
			}
			if got := errorLines(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	doc := `
base: &base
  name: worker
  replicas: 0
apiVersion: v1
metadata:
  name: 123
compute:
- <<: *base
  hyperthreading: Disabled
- <<: [{name: edge, architecture: arm64}, *base]
  replicas: 0x0
controlPlane: {replicas: 1, name: master}
fips: yes
platform:
  none:
networking:
  networkType: ""
  machineNetwork: []
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 1_0
featureGates: []
`
	_, err := Parse([]byte(doc))
	if got := errorLines(err); !reflect.DeepEqual(got, []string{"base: unknown field"}) {
		t.Fatalf("Parse: %v", err)
	}
	ic, perrs, _, err := parse([]byte(doc))
	if err != nil || len(perrs) != 1 {
		t.Fatalf("parse: %v %v", perrs, err)
	}
	zero, one := int64(0), int64(1)
	want := InstallConfig{
		APIVersion: "v1",
		Metadata:   ObjectMeta{Name: "123"},
		Compute: []MachinePool{
			{Name: "worker", Replicas: &zero, Hyperthreading: "Disabled"},
			{Name: "edge", Replicas: &zero, Architecture: "arm64", Hyperthreading: "Enabled"},
		},
		ControlPlane: &MachinePool{Name: "master", Replicas: &one, Hyperthreading: "Enabled"},
		FIPS:         true,
		Platform:     Platform{None: &NonePlatform{}},
		Networking: &Networking{
			NetworkType:    "OVNKubernetes",
			ClusterNetwork: []ClusterNetworkEntry{{CIDR: "10.128.0.0/14", HostPrefix: 10}},
		},
		Publish:                     "External",
		AdditionalTrustBundlePolicy: "Proxyonly",
		CPUPartitioningMode:         "None",
	}
	if got := withoutMeta(ic); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
}

func TestRoundTripTrickyStrings(t *testing.T) {
	tricky := []string{
		"yes", "No", "on", "~", "null", "0x1F", "1e3", ".inf", "- a", "a: b", "#c", "'", `"`,
		" lead", "trail ", "tab\there", "line\nbreak\n", "\u2028", "\u00e9t\u00e9", "{}", "[x]", "&a", "*a", "!tag", "%x", "@x", "`x",
	}
	for _, s := range tricky {
		ic := &InstallConfig{
			APIVersion: "v1", Metadata: ObjectMeta{Name: s}, BaseDomain: s, PullSecret: s, SSHKey: s,
			Networking:   &Networking{NetworkType: s, ServiceNetwork: []string{s}},
			FeatureGates: []string{s},
		}
		ic.SetDefaults()
		y, err := yaml.Marshal(ic)
		if err != nil {
			t.Fatal(err)
		}
		j, err := json.Marshal(ic)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range [][]byte{y, j} {
			got, err := Parse(doc)
			if err != nil {
				t.Errorf("%q: %v\n%s", s, err, doc)
				continue
			}
			if !reflect.DeepEqual(withoutMeta(got), *ic) {
				t.Errorf("%q: round trip changed the config:\n%s", s, doc)
			}
		}
	}
}

func TestSetDefaultsIdempotent(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testdataDir, "good", "ipv4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ic, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	before := withoutMeta(ic)
	ic.SetDefaults()
	if !reflect.DeepEqual(withoutMeta(ic), before) {
		t.Error("SetDefaults changed a defaulted config")
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	if _, err := Load(missing, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(missing) = %v, want an error naming the path", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("a: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(bad, nil)
	if err == nil || !strings.HasPrefix(err.Error(), bad+": install-config is not valid YAML") {
		t.Errorf("Load(bad) = %v", err)
	}
}

func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 8; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	// The schema bounds the work: none of the aliases is decoded into a
	// field, so this is fast and reports unknown fields only.
	b.WriteString("featureGates: *a7\n")
	_, err := Parse([]byte(b.String()))
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	if !strings.Contains(err.Error(), "featureGates[0]: expected a string, got a list") {
		t.Errorf("unexpected error: %.300s", err)
	}
}
