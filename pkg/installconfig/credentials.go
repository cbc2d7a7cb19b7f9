package installconfig

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
)

// pullSecret checks the shape of the pull secret. Messages never repeat the
// secret (registry names are not secret).
func (v *validator) pullSecret() {
	const f = "pullSecret"
	s := v.ic.PullSecret
	if s == "" {
		v.addf(f, "required")
		return
	}
	data := []byte(s)
	var top any
	if err := json.Unmarshal(data, &top); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			v.addf(f, "not valid JSON: %s", syn.Error())
		} else {
			v.addf(f, "not valid JSON")
		}
		return
	}
	if !isJSONObject(data) {
		v.addf(f, "must be a JSON object with \"auths\", got %s", jsonKind(data))
		return
	}
	var doc map[string]json.RawMessage
	_ = json.Unmarshal(data, &doc)
	raw, ok := doc["auths"]
	if !ok {
		v.addf(f, `"auths" is missing`)
		return
	}
	if !isJSONObject(raw) {
		v.addf(f, `"auths" must be a JSON object, got %s`, jsonKind(raw))
		return
	}
	var auths map[string]json.RawMessage
	_ = json.Unmarshal(raw, &auths)
	if len(auths) == 0 {
		v.addf(f, `"auths" has no entries`)
		return
	}
	for _, r := range slices.Sorted(maps.Keys(auths)) {
		entry := auths[r]
		name := "auths[" + quoteShort(r) + "]"
		if !isJSONObject(entry) {
			v.addf(f, "%s must be a JSON object, got %s", name, jsonKind(entry))
			continue
		}
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(entry, &fields)
		a, ok := fields["auth"]
		if !ok {
			if _, store := fields["credsStore"]; !store {
				// openshift/installer pkg/validate ImagePullSecret.
				v.addf(f, "%s requires either auth or credsStore", name)
			}
			continue
		}
		var auth string
		if err := json.Unmarshal(a, &auth); err != nil {
			v.addf(f, "%s.auth must be a string, got %s", name, jsonKind(a))
			continue
		}
		dec, err := base64.StdEncoding.DecodeString(auth)
		if err != nil || !bytes.Contains(dec, []byte(":")) {
			v.addf(f, `%s.auth is not base64 of "user:password"`, name)
		}
	}
}

func isJSONObject(data []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(data), []byte("{"))
}

// jsonKind names the kind of a valid JSON value.
func jsonKind(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "nothing"
	}
	switch data[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// sshKeyTypes are the key types an sshKey line may have.
var sshKeyTypes = []string{
	ssh.KeyAlgoED25519, ssh.KeyAlgoRSA,
	ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
}

func knownSSHKeyType(t string) bool {
	return slices.Contains(sshKeyTypes, t) || (strings.HasPrefix(t, "sk-") && len(t) > 3)
}

// sshKeyLine is one non-empty, non-comment line of sshKey.
type sshKeyLine struct {
	number int // 1-based line number in sshKey
	text   string
}

func sshKeyLines(s string) []sshKeyLine {
	var out []sshKeyLine
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, sshKeyLine{i + 1, line})
	}
	return out
}

// checkSSHKeyLine returns an error detail for a line that is not an
// authorized key, or a warning detail for a line shaped like one
// ("<known type> <base64> [comment]") whose key data does not parse.
func checkSSHKeyLine(line string) (problem, warning string) {
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err == nil {
		return "", ""
	}
	if strings.HasPrefix(line, "-----BEGIN") {
		return "looks like a PEM block (a private key?); sshKey takes public keys only", ""
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return `not an SSH public key (expected "<type> <base64 key data> [comment]")`, ""
	}
	if !knownSSHKeyType(fields[0]) {
		return fmt.Sprintf("unknown key type %s (expected ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256/384/521 or sk-...)", quoteShort(fields[0])), ""
	}
	blob, err := base64.StdEncoding.DecodeString(fields[1])
	if err != nil {
		return "key data is not valid base64", ""
	}
	_, err = ssh.ParsePublicKey(blob)
	if err == nil {
		// Parses on its own, so ParseAuthorizedKey failed on the rest.
		return "", ""
	}
	return "", fmt.Sprintf("%s key data does not parse (%s); it is installed as written", fields[0], shorten(err.Error()))
}

func (v *validator) sshKey() {
	for _, l := range sshKeyLines(v.ic.SSHKey) {
		if p, _ := checkSSHKeyLine(l.text); p != "" {
			v.addf("sshKey", "line %d: %s", l.number, p)
		} else if t := sshKeyType(l.text); v.ic.FIPS && !fipsSSHKeyType.MatchString(t) {
			v.addf("sshKey", "line %d: SSH key type %s unavailable when FIPS is enabled; use rsa or ecdsa", l.number, t)
		}
	}
}

// sshKeyType is the type of an authorized-key line: the parsed key's, else the first field that names a key type
// (a line may start with options), else the first field.
func sshKeyType(line string) string {
	if pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err == nil {
		return pub.Type()
	}
	fields := strings.Fields(line)
	for _, f := range fields {
		if knownSSHKeyType(f) {
			return f
		}
	}
	return fields[0]
}

// fipsSSHKeyType are the key types the installer allows with fips: true (pkg/types/validation/installconfig.go
// validateFIPSconfig).
var fipsSSHKeyType = regexp.MustCompile(`^ecdsa-sha2-nistp\d{3}$|^ssh-rsa$`)

// parseTrustBundle parses the CERTIFICATE blocks of a PEM bundle. Text
// around the blocks is ignored; problems are returned as details.
func parseTrustBundle(s string) ([]*x509.Certificate, []string) {
	var certs []*x509.Certificate
	var problems []string
	rest := []byte(s)
	n := 0
	for {
		block, r := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = r
		n++
		if block.Type != "CERTIFICATE" {
			problems = append(problems, fmt.Sprintf("PEM block %d is %s; only CERTIFICATE blocks are allowed", n, quoteShort(block.Type)))
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			problems = append(problems, fmt.Sprintf("PEM block %d: %s", n, shorten(err.Error())))
			continue
		}
		certs = append(certs, cert)
	}
	if bytes.Contains(rest, []byte("-----BEGIN")) {
		problems = append(problems, fmt.Sprintf("PEM block %d is malformed or incomplete", n+1))
	} else if n == 0 {
		problems = append(problems, "no PEM CERTIFICATE block found")
	}
	return certs, problems
}

func (v *validator) trustBundle() {
	if v.ic.AdditionalTrustBundle == "" {
		return
	}
	_, problems := parseTrustBundle(v.ic.AdditionalTrustBundle)
	for _, p := range problems {
		v.addf("additionalTrustBundle", "%s", p)
	}
}

func (v *validator) proxy(nets *netInfo) {
	p := v.ic.Proxy
	if p == nil {
		return
	}
	if p.HTTPProxy == "" && p.HTTPSProxy == "" {
		v.addf("proxy", "at least one of httpProxy or httpsProxy is required")
	}
	for _, u := range []struct{ field, value string }{{"proxy.httpProxy", p.HTTPProxy}, {"proxy.httpsProxy", p.HTTPSProxy}} {
		if u.value == "" {
			continue
		}
		schemes := []string{"http"}
		if u.field == "proxy.httpsProxy" {
			schemes = append(schemes, "https")
		}
		if msg := proxyURLProblem(u.value, schemes...); msg != "" {
			v.addf(u.field, "%s", msg)
		} else {
			v.proxyIP(u.field, u.value, nets)
		}
	}
	// The installer (validateProxy): "*" alone means every host; otherwise no spaces, and each entry an IP, a
	// CIDR or a lowercase domain (a leading dot allowed), never a wildcard.
	if p.NoProxy != "" && p.NoProxy != "*" {
		if strings.Contains(p.NoProxy, " ") {
			v.addf("proxy.noProxy", "must not have spaces")
		}
		for i, raw := range strings.Split(p.NoProxy, ",") {
			e := strings.TrimSpace(raw)
			if e == "" {
				v.addf("proxy.noProxy", "entry %d is empty", i+1)
			} else if !validNoProxyEntry(e) {
				v.addf("proxy.noProxy", `entry %d %s is not an IP address, CIDR or lowercase domain without wildcards ("*" is allowed only as the whole noProxy)`, i+1, quoteShort(e))
			}
		}
	}
}

// proxyIP refuses a proxy whose host is an IP address inside a cluster or service network: the node could not
// reach it there (the installer's validateIPProxy). The URL says nothing secret here: only the field is named.
func (v *validator) proxyIP(field, raw string, nets *netInfo) {
	u, err := url.Parse(raw)
	if err != nil || nets == nil {
		return
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return
	}
	ip = ip.Unmap()
	for _, l := range []struct {
		what    string
		entries []cidrEntry
	}{{"cluster", nets.cluster}, {"service", nets.service}} {
		for _, e := range l.entries {
			if e.prefix.Contains(ip) {
				v.addf(field, "the proxy's address %s is in the %s network %s", ip, l.what, e.prefix)
				break
			}
		}
	}
}

// proxyURLProblem checks a proxy URL. Proxy URLs may hold credentials, so
// the URL is never repeated.
func proxyURLProblem(s string, schemes ...string) string {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.Err != nil {
			return "not a valid URL: " + shorten(ue.Err.Error())
		}
		return "not a valid URL"
	}
	if u.Scheme == "" || u.Opaque != "" || !strings.Contains(s, "://") {
		return fmt.Sprintf("must be a URL of the form %s://host[:port]", schemes[0])
	}
	if !slices.Contains(schemes, u.Scheme) {
		return fmt.Sprintf("scheme must be %s, got %s", strings.Join(schemes, " or "), quoteShort(u.Scheme))
	}
	if u.Hostname() == "" {
		return "URL has no host"
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("port %s is out of range", shorten(port))
		}
	}
	return ""
}

// validNoProxyEntry accepts an IP, a CIDR or a lowercase domain (with an optional leading dot), as the installer's
// validate.NoProxyDomainName, net.ParseCIDR and net.ParseIP do.
func validNoProxyEntry(e string) bool {
	if _, err := netip.ParseAddr(e); err == nil {
		return true
	}
	if _, err := netip.ParsePrefix(e); err == nil {
		return true
	}
	return isDNSSubdomain(strings.TrimPrefix(e, "."))
}
