package installconfig

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// withoutMeta is ic without what Parse learnt about the document, for
// comparing configs parsed from different texts.
func withoutMeta(ic *InstallConfig) InstallConfig {
	c := *ic
	c.meta = nil
	return c
}

// FuzzParse checks that Parse, Load's decode+validate and the derived values
// never panic, and that a parsed config marshals (as YAML and as JSON) to a
// document that parses back to the same config.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"good", "bad"} {
		files, _ := filepath.Glob(filepath.Join(testdataDir, dir, "*.yaml"))
		for _, path := range files {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	nodeIPs := [][]netip.Addr{
		nil,
		{netip.MustParseAddr("192.168.126.10")},
		{netip.MustParseAddr("192.168.126.10"), netip.MustParseAddr("fd00::10")},
		{netip.MustParseAddr("fd00::10"), netip.MustParseAddr("fd00::11"), netip.Addr{}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ips := nodeIPs[len(data)%len(nodeIPs)]
		_, _ = load(data, ips)
		ic, err := Parse(data)
		if err != nil {
			if ic != nil {
				t.Fatal("Parse returned a config with an error")
			}
			return
		}
		_ = ic.Validate(ips)
		_, _, _, _, _ = ic.ServiceIPs(), ic.ClusterCIDRs(), ic.MachineCIDRs(), ic.IPv6Primary(), ic.DualStack()
		_, _, _, _ = ic.SSHKeys(), ic.TrustBundle(), ic.Warnings(), ic.APIServerURL()

		want := withoutMeta(ic)
		y, err := yaml.Marshal(ic)
		if err != nil {
			t.Fatalf("yaml.Marshal: %v", err)
		}
		j, err := json.Marshal(ic)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		for _, doc := range [][]byte{y, j} {
			ic2, err := Parse(doc)
			if err != nil {
				t.Fatalf("re-parsing the marshalled config failed: %v\n%s", err, doc)
			}
			if got := withoutMeta(ic2); !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip changed the config\nbefore: %#v\nafter:  %#v\ndoc:\n%s", want, got, doc)
			}
		}
	})
}
