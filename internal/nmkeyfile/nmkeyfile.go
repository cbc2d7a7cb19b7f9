// Package nmkeyfile has NetworkManager read a keyfile, with its own parser: `nmcli --offline connection modify`
// (NetworkManager 1.42 and later; Debian 12's network-manager, Fedora's and RHEL 9's NetworkManager) reads a
// connection in keyfile format on its standard input with libnm's keyfile reader, normalizes and verifies it as
// NetworkManager does before it activates a connection, and writes it back, normalized, with libnm's keyfile
// writer. A keyfile NetworkManager refuses is refused with its message. What the caller needs of the connection
// (its name, type, interface and IP methods, addresses and gateways) is read from what NetworkManager wrote back:
// groups and key=value lines as libnm's writer writes them (nm-keyfile.c: "address<N>=<ip>/<prefix>[,<gateway>]"
// under [ipv4] and [ipv6], and a "gateway=" key where a writer puts the gateway apart), not the user's file, so no second reading of the keyfile grammar decides anything.
//
// NetworkManager's reader skips what it cannot use (a key it does not know, an address that does not parse) as the
// running daemon does, with a warning nmcli does not print; the connection read back is what the node's
// NetworkManager will use.
package nmkeyfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Connection is a keyfile as NetworkManager read it.
type Connection struct {
	ID, Type, Interface string
	IPv4, IPv6          IPConfig
}

// IPConfig is a connection's setting of one IP family.
type IPConfig struct {
	// Method is ipv4.method or ipv6.method ("manual", "auto", "disabled", ...; "" when the connection has no such
	// setting, as a bond's port).
	Method string
	// Addresses are the static addresses (ipv4.addresses, ipv6.addresses), in the keyfile's order.
	Addresses []netip.Prefix
	// Gateway is ipv4.gateway or ipv6.gateway, the next hop of the connection's default route (invalid: none).
	// NetworkManager accepts one outside every address's subnet.
	Gateway netip.Addr
}

// ErrNoNmcli says that nmcli is not on PATH.
var ErrNoNmcli = errors.New("NetworkManager's nmcli is not on PATH")

// Read has NetworkManager read the keyfile data (see the package comment). A keyfile NetworkManager refuses gives
// an error with NetworkManager's message; nmcli missing gives ErrNoNmcli, an nmcli older than 1.42 its own
// message about --offline.
func Read(ctx context.Context, data []byte) (*Connection, error) {
	bin, err := exec.LookPath("nmcli")
	if err != nil {
		return nil, ErrNoNmcli
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--offline", "connection", "modify")
	cmd.Stdin = bytes.NewReader(data)
	// Messages in English, with their quotes; nothing of the caller's environment changes what nmcli reads.
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		msg = strings.TrimPrefix(msg, "Error: ")
		msg = strings.TrimPrefix(msg, "Error writing connection: ")
		if msg == "" {
			msg = err.Error()
		}
		if ctx.Err() != nil {
			msg = "nmcli did not answer within 30s"
		}
		return nil, fmt.Errorf("NetworkManager refuses it: %s", Redact(strings.Join(strings.Fields(msg), " "), data))
	}
	return parseWritten(out.Bytes())
}

// quoted is a span nmcli's messages quote: GLib's “...” and NetworkManager's '...' and "...".
var quoted = regexp.MustCompile(`“[^”]*”|'[^']*'|"[^"]*"`)

// Redact is nmcli's message about the keyfile data with none of the keyfile's values: nmcli quotes the line or the
// value it refuses (GLib's “<line>” for a line that is not a key-value pair, NetworkManager's '<value>', lowercased
// for some properties), which may be a wifi psk, or a line of another file read by mistake. Every quoted span is
// replaced by "…" unless it is the name of one of the keyfile's groups or keys, and so is every word of the
// message that is one of the keyfile's values or lines (ignoring case): what is left names the setting and what is
// wrong with it.
func Redact(msg string, data []byte) string {
	names := map[string]bool{}
	var values []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			names[strings.ToLower(line[1:len(line)-1])] = true
		default:
			key, value, ok := strings.Cut(line, "=")
			if ok {
				names[strings.ToLower(strings.TrimSpace(key))] = true
				values = append(values, strings.TrimSpace(value))
			} else {
				values = append(values, line)
			}
		}
	}
	msg = quoted.ReplaceAllStringFunc(msg, func(q string) string {
		open, _ := utf8.DecodeRuneInString(q)
		closing, _ := utf8.DecodeLastRuneInString(q)
		inner := q[utf8.RuneLen(open) : len(q)-utf8.RuneLen(closing)]
		if inner != "" && names[strings.ToLower(inner)] {
			return q
		}
		return string(open) + "…" + string(closing)
	})
	for _, v := range values {
		if v == "" {
			continue
		}
		// v as a word of its own (not inside a longer word such as a setting's name), ignoring case
		re := regexp.MustCompile(`(?i)(^|[^\pL\pN._-])` + regexp.QuoteMeta(v) + `($|[^\pL\pN._-])`)
		msg = re.ReplaceAllString(msg, "${1}…${2}")
	}
	return msg
}

// parseWritten reads what libnm's keyfile writer wrote (see the package comment).
func parseWritten(written []byte) (*Connection, error) {
	c := &Connection{}
	group := ""
	sc := bufio.NewScanner(bytes.NewReader(written))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			group = line[1 : len(line)-1]
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch group {
		case "connection":
			switch key {
			case "id":
				c.ID = value
			case "type":
				c.Type = value
			case "interface-name":
				c.Interface = value
			}
		case "ipv4", "ipv6":
			ip := &c.IPv4
			if group == "ipv6" {
				ip = &c.IPv6
			}
			switch {
			case key == "method":
				ip.Method = value
				continue
			case key == "gateway":
				gw, err := netip.ParseAddr(value)
				if err != nil {
					return nil, fmt.Errorf("reading what NetworkManager wrote back: [%s] %s: not an IP address", group, key)
				}
				ip.Gateway = gw
				continue
			case !isAddressKey(key):
				continue
			}
			// libnm's writer writes the gateway after the first address ("address1=<ip>/<prefix>,<gateway>").
			addr, gateway, hasGateway := strings.Cut(value, ",")
			p, err := netip.ParsePrefix(addr)
			if err != nil {
				return nil, fmt.Errorf("reading what NetworkManager wrote back: [%s] %s: not an address/prefix", group, key)
			}
			ip.Addresses = append(ip.Addresses, p)
			if hasGateway {
				gw, err := netip.ParseAddr(gateway)
				if err != nil {
					return nil, fmt.Errorf("reading what NetworkManager wrote back: [%s] %s: its gateway is not an IP address", group, key)
				}
				ip.Gateway = gw
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading what NetworkManager wrote back: %v", err)
	}
	if c.Type == "" { // what it wrote back is not said: it holds the keyfile's values
		return nil, errors.New("NetworkManager wrote back no connection type")
	}
	return c, nil
}

// isAddressKey says whether key is one of libnm's writer's address keys: "address" and a number.
func isAddressKey(key string) bool {
	n, ok := strings.CutPrefix(key, "address")
	if !ok || n == "" {
		return false
	}
	for _, d := range n {
		if d < '0' || d > '9' {
			return false
		}
	}
	return true
}

// Static says whether ip is one of c's static addresses (with any prefix).
func (c *Connection) Static(ip netip.Addr) bool {
	for _, p := range append(append([]netip.Prefix(nil), c.IPv4.Addresses...), c.IPv6.Addresses...) {
		if p.Addr() == ip {
			return true
		}
	}
	return false
}
