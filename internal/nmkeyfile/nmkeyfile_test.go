package nmkeyfile

import (
	"context"
	"net/netip"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// addKeyfile makes a keyfile the way a user would: nmcli --offline connection add.
func addKeyfile(t *testing.T, nmcli string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(nmcli, append([]string{"--offline", "connection", "add"}, args...)...).Output()
	if err != nil {
		t.Fatalf("nmcli --offline connection add %v: %v", args, err)
	}
	return out
}

// Read gives what NetworkManager's parser read, for keyfiles nmcli made and for keyfiles written by hand in the
// legacy and current forms NetworkManager accepts.
func TestRead(t *testing.T) {
	nmcli := testtools.Tool(t, "nmcli")
	pfx, ip := netip.MustParsePrefix, netip.MustParseAddr
	for _, tc := range []struct {
		name string
		data []byte
		want Connection
	}{
		{"IPv4, nmcli", addKeyfile(t, nmcli, "type", "ethernet", "con-name", "v4", "ifname", "eno1", "ipv4.method", "manual",
			"ipv4.addresses", "192.168.126.10/24", "ipv4.gateway", "192.168.126.1", "ipv6.method", "disabled"),
			Connection{ID: "v4", Type: "ethernet", Interface: "eno1", IPv4: IPConfig{"manual", []netip.Prefix{pfx("192.168.126.10/24")}, ip("192.168.126.1")},
				IPv6: IPConfig{Method: "disabled"}}},
		// The gateway as NetworkManager keeps it, even outside the address's subnet (NetworkManager accepts that).
		{"gateways outside the subnet, nmcli", addKeyfile(t, nmcli, "type", "ethernet", "con-name", "gw", "ifname", "eno1", "ipv4.method", "manual",
			"ipv4.addresses", "192.168.126.10/24", "ipv4.gateway", "10.0.0.1", "ipv6.method", "manual", "ipv6.addresses", "fd00::10/64", "ipv6.gateway", "fd01::1"),
			Connection{ID: "gw", Type: "ethernet", Interface: "eno1", IPv4: IPConfig{"manual", []netip.Prefix{pfx("192.168.126.10/24")}, ip("10.0.0.1")},
				IPv6: IPConfig{"manual", []netip.Prefix{pfx("fd00::10/64")}, ip("fd01::1")}}},
		{"by hand, the gateway key", []byte("[connection]\nid=gk\ntype=ethernet\n[ipv4]\nmethod=manual\naddress1=10.0.0.5/24\ngateway=10.0.0.254\n[ipv6]\nmethod=disabled\n"),
			Connection{ID: "gk", Type: "ethernet", IPv4: IPConfig{"manual", []netip.Prefix{pfx("10.0.0.5/24")}, ip("10.0.0.254")}, IPv6: IPConfig{Method: "disabled"}}},
		{"dual stack, nmcli", addKeyfile(t, nmcli, "type", "ethernet", "con-name", "ds", "ifname", "eno1", "ipv4.method", "manual",
			"ipv4.addresses", "192.168.126.10/24,192.168.127.10/24", "ipv6.method", "manual", "ipv6.addresses", "fd2e:6f44:5dd8:c956::14/64"),
			Connection{ID: "ds", Type: "ethernet", Interface: "eno1",
				IPv4: IPConfig{"manual", []netip.Prefix{pfx("192.168.126.10/24"), pfx("192.168.127.10/24")}, netip.Addr{}},
				IPv6: IPConfig{"manual", []netip.Prefix{pfx("fd2e:6f44:5dd8:c956::14/64")}, netip.Addr{}}}},
		{"by hand, legacy address keys", []byte("[connection]\nid=hand\ntype=ethernet\n\n[ipv6]\nmethod=manual\naddresses1=fd00::10;64;fd00::1;\n\n[ipv4]\nmethod=disabled\n"),
			Connection{ID: "hand", Type: "ethernet", IPv4: IPConfig{Method: "disabled"}, IPv6: IPConfig{"manual", []netip.Prefix{pfx("fd00::10/64")}, ip("fd00::1")}}},
		{"DHCP with a static address too", []byte("[connection]\nid=mixed\ntype=ethernet\n[ipv4]\nmethod=auto\naddress1=10.0.0.5/24\n"),
			Connection{ID: "mixed", Type: "ethernet", IPv4: IPConfig{"auto", []netip.Prefix{pfx("10.0.0.5/24")}, netip.Addr{}}, IPv6: IPConfig{Method: "auto"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Read(context.Background(), tc.data)
			if err != nil {
				t.Fatalf("Read: %v\n%s", err, tc.data)
			}
			if !reflect.DeepEqual(*c, tc.want) {
				t.Errorf("read %+v, want %+v", *c, tc.want)
			}
			for _, p := range append(tc.want.IPv4.Addresses, tc.want.IPv6.Addresses...) {
				if !c.Static(p.Addr()) {
					t.Errorf("%s is not static", p.Addr())
				}
			}
			if c.Static(netip.MustParseAddr("192.0.2.1")) {
				t.Error("192.0.2.1 is static")
			}
		})
	}
}

// A keyfile NetworkManager refuses is refused with NetworkManager's own message, without the keyfile's values
// (TestReadNeverEchoesValues).
func TestReadRefuses(t *testing.T) {
	testtools.Tool(t, "nmcli")
	for _, tc := range []struct{ name, data, want string }{
		{"not a keyfile", "garbage\n", "NetworkManager refuses it: Key file contains line “…” which is not a key-value pair, group, or comment"},
		{"manual without an address", "[connection]\nid=x\ntype=ethernet\n[ipv4]\nmethod=manual\n", "ipv4.addresses: this property cannot be empty for '…'"},
		{"no type", "[connection]\nid=x\n", "NetworkManager refuses it"},
		{"an unknown type", "[connection]\nid=x\ntype=bogus\n", "connection.type: connection type '…' is not valid"},
		{"empty", "", "connection.id: property is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Read(context.Background(), []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read gives %+v, %v; want an error with %q", c, err, tc.want)
			}
		})
	}
}

// Without nmcli on PATH, Read says so.
func TestReadWithoutNmcli(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Read(context.Background(), []byte("[connection]\n")); err != ErrNoNmcli {
		t.Errorf("Read without nmcli: %v, want ErrNoNmcli", err)
	}
}

// A keyfile NetworkManager refuses is refused without a word of its values: nmcli quotes the line or value it
// refuses (a wifi psk, a line of another file), and the message keeps only what names the setting.
func TestReadNeverEchoesValues(t *testing.T) {
	testtools.Tool(t, "nmcli")
	const secret = "MyWifiPass99"
	for _, tc := range []struct{ name, data, want string }{
		{"a line that is not a key-value pair", "[connection]\nid=w\ntype=wifi\n[wifi]\nssid=net\n[wifi-security]\nkey-mgmt=wpa-psk\npsk: " + secret + "\n",
			"which is not a key-value pair, group, or comment"},
		{"a line of /etc/shadow", "root:$6$" + secret + "$xyz:19000:0:99999:7:::\n", "which is not a key-value pair, group, or comment"},
		{"a value NetworkManager says back, lowercased", "[connection]\nid=w\ntype=wifi\n[wifi]\nssid=net\n[wifi-security]\nkey-mgmt=" + secret + "\n",
			"802-11-wireless-security.key-mgmt: "},
		{"a connection type", "[connection]\nid=x\ntype=" + secret + "\n", "connection.type: connection type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(context.Background(), []byte(tc.data))
			if err == nil {
				t.Fatal("Read accepts it")
			}
			if strings.Contains(strings.ToLower(err.Error()), strings.ToLower(secret)) {
				t.Errorf("the message echoes the keyfile's value: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the message %q does not say %q", err, tc.want)
			}
		})
	}
}
