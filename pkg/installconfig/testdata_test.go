package installconfig

import (
	"bufio"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const testdataDir = "../../testdata/installconfig"

var update = flag.Bool("update", false, "rewrite testdata/installconfig/bad/*.err from the current output (review the diff!)")

// nodeIPComment reads the "# node-ip: ..." first line of a test file.
func nodeIPComment(t *testing.T, path string) []netip.Addr {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return nil
	}
	v, ok := strings.CutPrefix(sc.Text(), "# node-ip:")
	if !ok {
		return nil
	}
	ips, err := ParseNodeIPs(strings.TrimSpace(v))
	if err != nil {
		t.Fatalf("%s: bad node-ip comment: %v", path, err)
	}
	return ips
}

func mustPrefixes(ss ...string) []netip.Prefix { return mustParse(netip.MustParsePrefix, ss) }
func mustAddrs(ss ...string) []netip.Addr      { return mustParse(netip.MustParseAddr, ss) }

func mustParse[T any](parse func(string) T, ss []string) []T {
	var out []T
	for _, s := range ss {
		out = append(out, parse(s))
	}
	return out
}

func TestGoodFiles(t *testing.T) {
	type want struct {
		clusterDomain, apiURL, apiIntURL string
		service, cluster, machine        []netip.Prefix
		serviceIPs                       []netip.Addr
		ipv6Primary, dualStack, fips     bool
		sshKeys                          int
		trustBundle                      []string // subject CNs
		warnings                         []string
	}
	ipv4 := want{
		clusterDomain: "sno.example.com",
		apiURL:        "https://api.sno.example.com:6443",
		apiIntURL:     "https://api-int.sno.example.com:6443",
		service:       mustPrefixes("172.30.0.0/16"),
		cluster:       mustPrefixes("10.128.0.0/14"),
		machine:       mustPrefixes("192.168.126.0/24"),
		serviceIPs:    mustAddrs("172.30.0.1"),
		sshKeys:       1,
		warnings: []string{
			"sshKey: line 1: ssh-ed25519 key data does not parse (ssh: short read); it is installed as written",
			"sshKey: no key sshd can use (no line's key data parses): nobody can log in to the node as core (it has no password), and renew's updates reach the node over ssh (aio-update apply, and aio-update recover after a power-off past the earliest expiry): add your public key to sshKey and render again before you install (docs/renew.md, \"Without SSH\")",
		},
	}
	fips := ipv4 // fips.yaml is ipv4.yaml with fips: true, which renders (in FIPS 140-3 mode, pkg/pipeline fips.go),
	fips.fips = true
	fips.warnings = nil // and a real ECDSA key: FIPS allows no ed25519 key (validateFIPSconfig)
	tests := map[string]want{
		"ipv4.yaml": ipv4,
		"fips.yaml": fips,
		"ipv6.yaml": {
			clusterDomain: "edge-01.lab.example.org",
			apiURL:        "https://api.edge-01.lab.example.org:6443",
			apiIntURL:     "https://api-int.edge-01.lab.example.org:6443",
			service:       mustPrefixes("fd02::/112"),
			cluster:       mustPrefixes("fd01::/48"),
			machine:       mustPrefixes("fd00:0:0:1::/64"),
			serviceIPs:    mustAddrs("fd02::1"),
			ipv6Primary:   true,
			sshKeys:       2,
			warnings: []string{
				"sshKey: line 4: ssh-ed25519 key data does not parse (ssh: short read); it is installed as written",
			},
		},
		"dualstack.yaml": {
			clusterDomain: "dual.example.com",
			apiURL:        "https://api.dual.example.com:6443",
			apiIntURL:     "https://api-int.dual.example.com:6443",
			service:       mustPrefixes("172.30.0.0/16", "fd02::/112"),
			cluster:       mustPrefixes("10.128.0.0/14", "fd01::/48"),
			machine:       mustPrefixes("192.168.126.0/24", "fd00::/64"),
			serviceIPs:    mustAddrs("172.30.0.1", "fd02::1"),
			dualStack:     true,
			sshKeys:       1,
		},
		"proxy.yaml": {
			clusterDomain: "hub-site-7.corp.example.net",
			apiURL:        "https://api.hub-site-7.corp.example.net:6443",
			apiIntURL:     "https://api-int.hub-site-7.corp.example.net:6443",
			service:       mustPrefixes("172.30.0.0/16"),
			cluster:       mustPrefixes("10.128.0.0/14"),
			machine:       mustPrefixes("10.0.0.0/24"),
			serviceIPs:    mustAddrs("172.30.0.1"),
			trustBundle:   []string{"render-static test proxy CA"},
			warnings: []string{"sshKey: none given: nobody can log in to the node as core (it has no password), and renew's updates reach the node over ssh (aio-update apply, and aio-update recover after a power-off past the earliest expiry): add your public key to sshKey and render again before you install (docs/renew.md, \"Without SSH\")",
				"networking.machineCIDR: deprecated; use networking.machineNetwork"},
		},
	}
	files, _ := filepath.Glob(filepath.Join(testdataDir, "good", "*.yaml"))
	if len(files) != len(tests) {
		t.Errorf("found %d good files, have expectations for %d", len(files), len(tests))
	}
	for name, w := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(testdataDir, "good", name)
			ips := nodeIPComment(t, path)
			if len(ips) == 0 {
				t.Fatal("no node-ip comment")
			}
			ic, err := Load(path, ips)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			check := func(what string, got, want any) {
				t.Helper()
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			check("ClusterDomain", ic.ClusterDomain(), w.clusterDomain)
			check("APIServerURL", ic.APIServerURL(), w.apiURL)
			check("APIServerInternalURL", ic.APIServerInternalURL(), w.apiIntURL)
			check("ServiceCIDRs", ic.ServiceCIDRs(), w.service)
			check("ClusterCIDRs", ic.ClusterCIDRs(), w.cluster)
			check("MachineCIDRs", ic.MachineCIDRs(), w.machine)
			check("ServiceIPs", ic.ServiceIPs(), w.serviceIPs)
			check("IPv6Primary", ic.IPv6Primary(), w.ipv6Primary)
			check("DualStack", ic.DualStack(), w.dualStack)
			check("FIPS", ic.FIPS, w.fips)
			check("len(SSHKeys)", len(ic.SSHKeys()), w.sshKeys)
			var cns []string
			for _, c := range ic.TrustBundle() {
				cns = append(cns, c.Subject.CommonName)
			}
			check("TrustBundle", cns, w.trustBundle)
			check("Warnings", ic.Warnings(), w.warnings)
			if ic.Networking.NetworkType != "OVNKubernetes" {
				t.Errorf("networkType = %q, want the default OVNKubernetes", ic.Networking.NetworkType)
			}
			// Validate on its own agrees with Load.
			if errs := ic.Validate(ips); errs != nil {
				t.Errorf("Validate: %v", errs)
			}
		})
	}
}

// TestBadFiles loads each bad/NAME.yaml with the node IP of its first-line
// comment and compares all error lines with bad/NAME.err.
func TestBadFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testdataDir, "bad", "*.yaml"))
	if len(files) < 20 {
		t.Fatalf("found only %d bad files", len(files))
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			errPath := strings.TrimSuffix(path, ".yaml") + ".err"
			ic, err := Load(path, nodeIPComment(t, path))
			if err == nil {
				t.Fatalf("Load succeeded (%s), want errors", ic.Metadata.Name)
			}
			var got []string
			var list ErrorList
			if errors.As(err, &list) {
				// The .err files hold what the command prints, which says the node's addresses as its flag.
				for _, e := range list.Named(map[string]string{NodeIPInput: "--node-ip"}) {
					got = append(got, e.Error())
				}
			} else {
				got = strings.Split(strings.ReplaceAll(err.Error(), path, name), "\n")
			}
			if *update {
				if err := os.WriteFile(errPath, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantData, err := os.ReadFile(errPath)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Split(strings.TrimRight(string(wantData), "\n"), "\n")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("errors differ\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
