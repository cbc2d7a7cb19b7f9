// Package inventory lists every certificate and CA bundle of a render or of a node: where each lives (the
// Secret or ConfigMap key and every file path on the node), what it is, who signed it and when it expires.
//
// It reads a set of node files (a render's rootfs/, the files of an aio.ign, or a node's root directory): the
// exported manifests under /opt/openshift/manifests are read as the Secrets and ConfigMaps they are, every other
// file as PEM or as a kubeconfig with embedded certificates. The same certificate found in several places is one
// entry with every place listed; it is named by what it is (its Secret, else its file, else the CA bundle that
// carries it), never by its common name, which is not unique (several serving certificates are "127.0.0.1" or
// "localhost"). A certificate found only in copies of revisions no static pod runs (revisions.go) is listed apart,
// as not in use.
package inventory

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/internal/kubeconfig"
)

// ManifestsDir is where aio.ign puts the exported manifests on the node.
const ManifestsDir = "/opt/openshift/manifests"

// Location is one place a certificate or bundle lives.
type Location struct {
	// Kind is "secret", "configmap" or "file".
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Key is the Secret or ConfigMap key; for a kubeconfig also which of its entries ("<key>:ca", "<key>:client").
	Key string `json:"key,omitempty"`
	// Path is the file on the node (for a Secret or ConfigMap: its manifest).
	Path string `json:"path"`
	// Bundle is true when the certificate is a member of a CA bundle here, not the certificate itself.
	Bundle bool `json:"bundle,omitempty"`
	// size is how many certificates the PEM here holds: a dedicated bundle names its CA better than a union.
	size int
}

func (l Location) String() string {
	var s string
	switch l.Kind {
	case "secret", "configmap":
		s = fmt.Sprintf("%s %s/%s[%s]", l.Kind, l.Namespace, l.Name, l.Key)
	default:
		s = "file " + l.Path
		if l.Key != "" {
			s += "[" + l.Key + "]"
		}
	}
	if l.Bundle {
		s += " (in bundle)"
	}
	return s
}

// Certificate is one distinct certificate (by SHA-256 fingerprint) and every place it lives.
type Certificate struct {
	// Name says what it is: "secret <ns>/<name>", "file <path>" or "<bundle> CA" (see package doc).
	Name        string     `json:"name"`
	Fingerprint string     `json:"sha256"`
	Subject     string     `json:"subject"`
	SANs        []string   `json:"sans,omitempty"`
	Issuer      string     `json:"issuer"`
	IsCA        bool       `json:"isCA"`
	SelfSigned  bool       `json:"selfSigned"`
	KeyType     string     `json:"keyType"`
	NotBefore   time.Time  `json:"notBefore"`
	NotAfter    time.Time  `json:"notAfter"`
	TimeLeft    string     `json:"timeLeft"`
	Signer      string     `json:"signer,omitempty"` // Name of the certificate that signed it, when present
	Locations   []Location `json:"locations"`

	cert *x509.Certificate
}

// Bundle is one distinct CA bundle (by its set of certificates) and every place it lives.
type Bundle struct {
	Name         string     `json:"name"`
	Certificates []string   `json:"certificates"` // member names, in bundle order
	Locations    []Location `json:"locations"`
	key          string
}

// Inventory is every certificate and CA bundle found.
type Inventory struct {
	Now time.Time `json:"now"`
	// Certificates are the certificates in use, soonest expiry first.
	Certificates []*Certificate `json:"certificates"`
	// Unused are the certificates found only in copies of revisions no static pod runs (Running), soonest expiry
	// first: kept for a rollback, used by nothing. They count neither for Earliest nor for ExpiringWithin.
	Unused []*Certificate `json:"unused,omitempty"`
	// UserCAs are the CAs of the install-config's additionalTrustBundle (UserCABundle, UserCATrustAnchor), soonest
	// expiry first: the user's to replace, never issued or renewed by render-static. They count neither for
	// Earliest nor for ExpiringWithin.
	UserCAs []*Certificate `json:"userCAs,omitempty"`
	// AdminKubeconfig is the client certificate of the admin kubeconfig (AdminKubeconfig: DIR/auth/kubeconfig),
	// which renew never renews (its signer's key is never kept), or nil where the node no longer has it. It counts
	// neither for Earliest nor for ExpiringWithin: after it, the node's LocalhostKubeconfig is the admin credential.
	AdminKubeconfig *Certificate `json:"adminKubeconfig,omitempty"`
	Bundles         []*Bundle    `json:"bundles"`
}

// blob is one PEM (or kubeconfig entry) found at a location.
type blob struct {
	loc   Location
	certs []*x509.Certificate
}

// Read is the inventory of the node files of src (see Load) at now.
func Read(src string, now time.Time) (*Inventory, error) {
	files, err := Load(src)
	if err != nil {
		return nil, err
	}
	return FromFiles(files, now)
}

// FromFiles builds the inventory of node files (absolute paths → contents) at time now.
func FromFiles(files map[string][]byte, now time.Time) (*Inventory, error) {
	return FromFilesWith(files, nil, now)
}

// Manifest is what the inventory reads of a Secret or ConfigMap manifest: its kind, namespace, name and data (a
// Secret's values base64-encoded, as in the manifest), and a Secret's stringData (its values as text, which the API
// server merges over data: export.SecretsAsText).
type Manifest struct {
	Kind, Namespace, Name string
	Data                  map[string]string
	StringData            map[string]string
}

// FromFilesWith is FromFiles for a caller that holds the objects some manifests under ManifestsDir were marshalled
// from (by node path; each must be what parsing that file gives): those are read from the object instead of being
// parsed again (a render's manifests: parsing their YAML back was most of the cost).
func FromFilesWith(files map[string][]byte, manifests map[string]Manifest, now time.Time) (*Inventory, error) {
	blobs, err := readBlobs(files, manifests)
	if err != nil {
		return nil, err
	}
	return build(blobs, now, true, RunningRevisions(files)), nil
}

// EarliestWith is FromFilesWith(files, manifests, now).Earliest() without what naming and ordering the
// certificates does not need (signers, self-signature checks, SANs, bundles): a render's summary line.
func EarliestWith(files map[string][]byte, manifests map[string]Manifest, now time.Time) (*Certificate, error) {
	blobs, err := readBlobs(files, manifests)
	if err != nil {
		return nil, err
	}
	return build(blobs, now, false, RunningRevisions(files)).Earliest(), nil
}

// Expiries are what a render's summary says of its certificates' expiry.
type Expiries struct {
	// Earliest is the certificate in use that expires first (Inventory.Earliest); Kept the first among those
	// that live somewhere besides the paths ExpiriesWith's transient names (what only a first boot reads, then
	// removes). Neither is a user CA or the admin kubeconfig's.
	Earliest, Kept *Certificate
	// AdminKubeconfig is the admin kubeconfig's client certificate (Inventory.AdminKubeconfig), never renewed.
	AdminKubeconfig *Certificate
	// UserCAs are the install-config's trust bundle's CAs (Inventory.UserCAs), soonest expiry first, their
	// subjects set.
	UserCAs []*Certificate
}

// ExpiriesWith is what the summary says of the certificates of files (manifests: see FromFilesWith) at now,
// without what naming and ordering them does not need (signers, self-signature checks, SANs, bundles).
func ExpiriesWith(files map[string][]byte, manifests map[string]Manifest, now time.Time, transient func(path string) bool) (Expiries, error) {
	blobs, err := readBlobs(files, manifests)
	if err != nil {
		return Expiries{}, err
	}
	run := RunningRevisions(files)
	inv := build(blobs, now, false, run)
	e := Expiries{Earliest: inv.Earliest(), AdminKubeconfig: inv.AdminKubeconfig, UserCAs: inv.UserCAs}
	for _, c := range inv.Certificates { // sorted by expiry
		if slices.ContainsFunc(c.Locations, func(l Location) bool { return !transient(l.Path) && !run.unused(l) }) {
			e.Kept = c
			break
		}
	}
	return e, nil
}

// readBlobs reads every certificate of files (manifests: see FromFilesWith), in the order of their paths.
func readBlobs(files map[string][]byte, manifests map[string]Manifest) ([]blob, error) {
	r := &reader{parsed: map[string][]*x509.Certificate{}}
	var blobs []blob
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data := files[p]
		if path.Dir(p) == ManifestsDir && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".json")) {
			if m, ok := manifests[p]; ok {
				bs, err := r.fromObject(p, m)
				if err != nil {
					return nil, err
				}
				blobs = append(blobs, bs...)
				continue
			}
			bs, err := r.fromManifest(p, data)
			if err != nil {
				return nil, err
			}
			blobs = append(blobs, bs...)
			continue
		}
		blobs = append(blobs, r.fromData(Location{Kind: "file", Path: p}, path.Base(p), data)...)
	}
	return blobs, nil
}

// reader reads the certificates of one set of files: the same PEM data (a CA bundle in many files, a manifest
// and its copy on the node) and the same kubeconfig (one per revision of a static pod) are parsed once.
type reader struct {
	parsed      map[string][]*x509.Certificate     // by PEM data
	kubeconfigs map[string]kubeconfig.Certificates // by kubeconfig data; read only
}

// loadKubeconfig is kubeconfig.Read(data) (the certificates clientcmd.Load(data) gives), once per distinct data.
func (r *reader) loadKubeconfig(data []byte) (kubeconfig.Certificates, error) {
	if c, ok := r.kubeconfigs[string(data)]; ok {
		return c, nil
	}
	c, err := kubeconfig.Read(data)
	if err != nil {
		return kubeconfig.Certificates{}, err
	}
	if r.kubeconfigs == nil {
		r.kubeconfigs = map[string]kubeconfig.Certificates{}
	}
	r.kubeconfigs[string(data)] = c
	return c, nil
}

// fromManifest reads a Secret or ConfigMap manifest; other kinds hold no certificates we track.
func (r *reader) fromManifest(p string, data []byte) ([]blob, error) {
	if !bytes.Contains(data, []byte("kind: Secret")) && !bytes.Contains(data, []byte("kind: ConfigMap")) {
		return nil, nil
	}
	var obj struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
		Data       map[string]string `json:"data"`
		StringData map[string]string `json:"stringData"`
	}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return r.fromObject(p, Manifest{Kind: obj.Kind, Namespace: obj.Metadata.Namespace, Name: obj.Metadata.Name, Data: obj.Data, StringData: obj.StringData})
}

// fromObject reads a Secret's or ConfigMap's data; other kinds hold no certificates we track.
func (r *reader) fromObject(p string, obj Manifest) ([]blob, error) {
	if obj.Kind != "Secret" && obj.Kind != "ConfigMap" {
		return nil, nil
	}
	var out []blob
	keys := slices.Collect(maps.Keys(obj.Data))
	if obj.Kind == "Secret" {
		for k := range obj.StringData {
			if _, ok := obj.Data[k]; !ok {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := []byte(obj.Data[k])
		if text, ok := obj.StringData[k]; ok && obj.Kind == "Secret" {
			v = []byte(text) // merged over data, as the API server does
		} else if obj.Kind == "Secret" {
			d, err := base64.StdEncoding.DecodeString(obj.Data[k])
			if err != nil {
				return nil, fmt.Errorf("%s: data.%s: %w", p, k, err)
			}
			v = d
		}
		loc := Location{Kind: strings.ToLower(obj.Kind), Namespace: obj.Namespace, Name: obj.Name, Key: k, Path: p}
		out = append(out, r.fromData(loc, k, v)...)
	}
	return out, nil
}

// fromData finds certificates in PEM data or in a kubeconfig's embedded data.
func (r *reader) fromData(loc Location, name string, data []byte) []blob {
	if bytes.Contains(data, []byte("-----BEGIN CERTIFICATE-----")) {
		cs := r.parsePEM(data)
		if len(cs) == 0 {
			return nil
		}
		// A bundle: a ConfigMap's certificates, a file or key named as a CA, or several CAs with no key beside
		// them. Otherwise the first certificate is the one that lives here and the rest is its chain.
		loc.Bundle = loc.Kind == "configmap" || isCAName(name) ||
			(len(cs) > 1 && allCA(cs) && !bytes.Contains(data, []byte("PRIVATE KEY-----")))
		loc.size = len(cs)
		return []blob{{loc: loc, certs: cs}}
	}
	if !bytes.Contains(data, []byte("certificate-authority-data")) && !bytes.Contains(data, []byte("client-certificate-data")) {
		return nil
	}
	cfg, err := r.loadKubeconfig(data)
	if err != nil {
		return nil
	}
	var out []blob
	prefix := loc.Key
	if prefix != "" {
		prefix += ":"
	}
	for _, n := range slices.Sorted(maps.Keys(cfg.Clusters)) {
		if cs := r.parsePEM(cfg.Clusters[n]); len(cs) > 0 {
			l := loc
			l.Key, l.Bundle, l.size = prefix+"cluster "+n+" ca", true, len(cs)
			out = append(out, blob{loc: l, certs: cs})
		}
	}
	for _, n := range slices.Sorted(maps.Keys(cfg.Users)) {
		if cs := r.parsePEM(cfg.Users[n]); len(cs) > 0 {
			l := loc
			l.Key, l.size = prefix+"user "+n+" client", len(cs)
			out = append(out, blob{loc: l, certs: cs})
		}
	}
	return out
}

var caName = regexp.MustCompile(`(^|[-_.])(ca|ca-bundle|client-ca|trusted-ca|cacert)([-_.]|$)`)

func isCAName(name string) bool { return caName.MatchString(strings.ToLower(name)) }

func allCA(cs []*x509.Certificate) bool {
	for _, c := range cs {
		if !c.IsCA {
			return false
		}
	}
	return true
}

// parsePEM is the certificates in data, parsed once per distinct data; the slice is the caller's.
func (r *reader) parsePEM(data []byte) []*x509.Certificate {
	if cs, ok := r.parsed[string(data)]; ok {
		return slices.Clone(cs)
	}
	cs := parsePEM(data)
	r.parsed[string(data)] = cs
	return slices.Clone(cs)
}

func parsePEM(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

func fingerprint(c *x509.Certificate) string {
	s := sha256.Sum256(c.Raw)
	return hex.EncodeToString(s[:])
}

var revisionSuffix = regexp.MustCompile(`-\d+$`)

// ranker orders the locations a certificate or bundle is named after. For a certificate: a TLS Secret of its
// own, then another Secret key, then a revisioned copy (<name>-<N> beside <name>), then a file, then the bundles
// that carry it (the smallest first, so a dedicated bundle names its CA rather than a union). For a bundle: a
// ConfigMap, then a revisioned copy, then a file.
type ranker struct{ objects map[string]bool }

func newRanker(ls []Location) ranker {
	r := ranker{objects: map[string]bool{}}
	for _, l := range ls {
		if l.Kind != "file" {
			r.objects[l.Kind+" "+l.Namespace+"/"+l.Name] = true
		}
	}
	return r
}

// isCopy: a revisioned copy <name>-<N> of an object also present.
func (r ranker) isCopy(l Location) bool {
	return l.Kind != "file" && revisionSuffix.MatchString(l.Name) &&
		r.objects[l.Kind+" "+l.Namespace+"/"+revisionSuffix.ReplaceAllString(l.Name, "")]
}

func (r ranker) rank(l Location) int {
	switch {
	case l.Bundle && l.Kind == "configmap":
		return 5
	case l.Bundle:
		return 6
	case r.isCopy(l):
		return 3
	case l.Kind == "secret" && l.Key == "tls.crt":
		return 0
	case l.Kind == "secret":
		return 1
	case l.Kind == "configmap":
		return 2
	}
	return 4
}

func (r ranker) less(a, b Location) bool {
	if ra, rb := r.rank(a), r.rank(b); ra != rb {
		return ra < rb
	}
	if a.Bundle && a.size != b.size {
		return a.size < b.size
	}
	if a.Kind != b.Kind {
		return a.Kind > b.Kind // secret, then configmap, then file
	}
	if a.Namespace+"/"+a.Name != b.Namespace+"/"+b.Name {
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	}
	if a.Path != b.Path {
		return a.Path < b.Path
	}
	return a.Key < b.Key
}

func (r ranker) sort(ls []Location) {
	sort.SliceStable(ls, func(i, j int) bool { return r.less(ls[i], ls[j]) })
}

func nameOf(l Location) string {
	switch {
	case l.Bundle && l.Kind == "file":
		return "CA in " + l.Path
	case l.Bundle:
		return fmt.Sprintf("CA in %s %s/%s", l.Kind, l.Namespace, l.Name)
	case l.Kind == "file" && l.Key != "":
		return "file " + l.Path + " (" + l.Key + ")"
	case l.Kind == "file":
		return "file " + l.Path
	case l.Key != "tls.crt":
		return fmt.Sprintf("%s %s/%s[%s]", l.Kind, l.Namespace, l.Name, l.Key)
	}
	return fmt.Sprintf("%s %s/%s", l.Kind, l.Namespace, l.Name)
}

// getOrAdd returns m[key], first making it with mk, recording it in m and appending it to list (which keeps the
// order of first sight) when m has none.
func getOrAdd[K comparable, V any](m map[K]*V, list *[]*V, key K, mk func() *V) *V {
	v := m[key]
	if v == nil {
		v = mk()
		m[key] = v
		*list = append(*list, v)
	}
	return v
}

// build makes the inventory of blobs: certificates found only in locations that run (see Running) does not use
// go to Unused.
func build(blobs []blob, now time.Time, full bool, run Running) *Inventory {
	inv := &Inventory{Now: now}
	byFP := map[string]*Certificate{}
	bundles := map[string]*Bundle{}
	for _, b := range blobs {
		var members []string
		for i, c := range b.certs {
			fp := fingerprint(c)
			members = append(members, fp)
			e := getOrAdd(byFP, &inv.Certificates, fp, func() *Certificate { return &Certificate{Fingerprint: fp, cert: c} })
			l := b.loc
			if !l.Bundle && i > 0 {
				l.Bundle = true // a chain member: the issuer's copy, not the certificate that lives here
			}
			e.Locations = append(e.Locations, l)
		}
		if b.loc.Bundle && full {
			key := strings.Join(members, ",")
			bu := getOrAdd(bundles, &inv.Bundles, key, func() *Bundle { return &Bundle{key: key, Certificates: members} })
			l := b.loc
			l.Bundle = false
			bu.Locations = append(bu.Locations, l)
		}
	}
	for _, e := range inv.Certificates {
		c := e.cert
		newRanker(e.Locations).sort(e.Locations)
		e.Locations = dedupe(e.Locations)
		e.Name = nameOf(e.Locations[0])
		e.NotBefore, e.NotAfter = c.NotBefore.UTC(), c.NotAfter.UTC()
		if !full {
			continue
		}
		e.Subject = c.Subject.String()
		e.Issuer = c.Issuer.String()
		e.IsCA = c.IsCA
		e.KeyType = keyType(c)
		e.TimeLeft = FormatLeft(c.NotAfter.Sub(now))
		e.SANs = append(e.SANs, c.DNSNames...)
		for _, ip := range c.IPAddresses {
			e.SANs = append(e.SANs, ip.String())
		}
		e.SANs = append(e.SANs, c.EmailAddresses...)
		for _, u := range c.URIs {
			e.SANs = append(e.SANs, u.String())
		}
		e.SelfSigned = bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignatureFrom(c) == nil
	}
	// Several certificates may share a name (a leaf and its bundle-only predecessor); keep names unique.
	seen := map[string]int{}
	sort.SliceStable(inv.Certificates, func(i, j int) bool { return certLess(inv.Certificates[i], inv.Certificates[j]) })
	for _, e := range inv.Certificates {
		seen[e.Name]++
		if n := seen[e.Name]; n > 1 {
			e.Name = fmt.Sprintf("%s #%d", e.Name, n)
		}
	}
	all := inv.Certificates
	inUse := make([]*Certificate, 0, len(all))
	for _, e := range all {
		switch {
		case isUserCA(e):
			if e.Subject == "" {
				e.Subject = e.cert.Subject.String() // the warning for an expired one names it
			}
			inv.UserCAs = append(inv.UserCAs, e)
			continue
		case inv.AdminKubeconfig == nil && isAdminClient(e):
			inv.AdminKubeconfig = e
			continue
		}
		if slices.ContainsFunc(e.Locations, func(l Location) bool { return !run.unused(l) }) {
			inUse = append(inUse, e)
		} else {
			inv.Unused = append(inv.Unused, e)
		}
	}
	inv.Certificates = inUse
	if !full {
		return inv
	}
	for _, e := range all {
		if e.SelfSigned {
			continue
		}
		if s := findSigner(e.cert, all); s != nil {
			e.Signer = s.Name
		}
	}
	for _, bu := range inv.Bundles {
		newRanker(bu.Locations).sort(bu.Locations)
		bu.Locations = dedupe(bu.Locations)
		if l := bu.Locations[0]; l.Kind != "file" {
			bu.Name = fmt.Sprintf("%s %s/%s[%s]", l.Kind, l.Namespace, l.Name, l.Key)
		} else if l.Key != "" {
			bu.Name = l.Path + "[" + l.Key + "]"
		} else {
			bu.Name = l.Path
		}
		for i, fp := range bu.Certificates {
			bu.Certificates[i] = byFP[fp].Name
		}
	}
	sort.SliceStable(inv.Bundles, func(i, j int) bool { return inv.Bundles[i].Name < inv.Bundles[j].Name })
	return inv
}

// isUserCA: a CA of the install-config's trust bundle, found in its ConfigMap or the node's trust anchor, and
// only ever as a member of a bundle (a certificate of the cluster's own that a user put into the trust bundle
// stays the cluster's).
func isUserCA(e *Certificate) bool {
	inBundle := false
	for _, l := range e.Locations {
		if !l.Bundle {
			return false
		}
		inBundle = inBundle || l.Kind == "configmap" && l.Namespace == UserCABundleNamespace && l.Name == UserCABundleName ||
			l.Kind == "file" && (l.Path == UserCATrustAnchor || strings.HasSuffix(l.Path, ":"+UserCATrustAnchor))
	}
	return inBundle && e.cert.IsCA
}

// isAdminClient: the client certificate of the admin kubeconfig, found nowhere else.
func isAdminClient(e *Certificate) bool {
	for _, l := range e.Locations {
		if l.Bundle || l.Kind != "file" || l.Path != AdminKubeconfig {
			return false
		}
	}
	return len(e.Locations) > 0
}

// certLess orders certificates by expiry, then name.
func certLess(a, b *Certificate) bool {
	if !a.cert.NotAfter.Equal(b.cert.NotAfter) {
		return a.cert.NotAfter.Before(b.cert.NotAfter)
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Fingerprint < b.Fingerprint
}

func dedupe(ls []Location) []Location {
	out := ls[:0]
	seen := map[Location]bool{}
	for _, l := range ls {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// findSigner is the CA certificate whose key signed c (matched by key ID, then checked by signature).
func findSigner(c *x509.Certificate, all []*Certificate) *Certificate {
	var found *Certificate
	for _, s := range all {
		p := s.cert
		if !p.IsCA || !bytes.Equal(p.RawSubject, c.RawIssuer) {
			continue
		}
		if len(c.AuthorityKeyId) > 0 && len(p.SubjectKeyId) > 0 && !bytes.Equal(c.AuthorityKeyId, p.SubjectKeyId) {
			continue
		}
		if c.CheckSignatureFrom(p) != nil {
			continue
		}
		// Several certificates of one key (a signer re-issued with the same key): prefer the one living longest.
		if found == nil || p.NotAfter.After(found.cert.NotAfter) {
			found = s
		}
	}
	return found
}

func keyType(c *x509.Certificate) string {
	switch k := c.PublicKey.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d", k.N.BitLen())
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return c.PublicKeyAlgorithm.String()
}

// FormatLeft prints a duration in days and hours ("364d23h", "-2d1h" once expired).
func FormatLeft(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	days := d / (24 * time.Hour)
	hours := (d % (24 * time.Hour)) / time.Hour
	if days == 0 {
		mins := (d % time.Hour) / time.Minute
		return fmt.Sprintf("%s%dh%dm", sign, hours, mins)
	}
	return fmt.Sprintf("%s%dd%dh", sign, days, hours)
}

// Earliest is the certificate in use that expires first, or nil when there is none.
func (inv *Inventory) Earliest() *Certificate {
	if len(inv.Certificates) == 0 {
		return nil
	}
	return inv.Certificates[0] // sorted by expiry
}

// ExpiringWithin is every certificate in use whose not-after is before now+d, soonest first.
func (inv *Inventory) ExpiringWithin(d time.Duration) []*Certificate {
	var out []*Certificate
	for _, c := range inv.Certificates {
		if c.NotAfter.Before(inv.Now.Add(d)) {
			out = append(out, c)
		}
	}
	return out
}

// All is every certificate: in use, not in use, the user CAs and the admin kubeconfig's.
func (inv *Inventory) All() []*Certificate {
	all := slices.Concat(inv.Certificates, inv.Unused, inv.UserCAs)
	if inv.AdminKubeconfig != nil {
		all = append(all, inv.AdminKubeconfig)
	}
	return all
}

// ExpiredUserCAs are the user CAs (UserCAs) already expired at Now, soonest first.
func (inv *Inventory) ExpiredUserCAs() []*Certificate {
	var out []*Certificate
	for _, c := range inv.UserCAs {
		if !c.NotAfter.After(inv.Now) {
			out = append(out, c)
		}
	}
	return out
}

// ByFingerprint returns the certificate of that SHA-256 fingerprint (hex), in use or not, or nil.
func (inv *Inventory) ByFingerprint(fp string) *Certificate {
	for _, c := range inv.All() {
		if c.Fingerprint == fp {
			return c
		}
	}
	return nil
}

// Lookup returns the certificate of that name, in use or not, or nil.
func (inv *Inventory) Lookup(name string) *Certificate {
	for _, c := range inv.All() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Where the certificates render-static does not renew live (the pkg/node and pkg/clusterconfig constants of the
// same names; the inventory imports neither).
const (
	// UserCABundleNamespace, UserCABundleName: the ConfigMap of the install-config's additionalTrustBundle.
	UserCABundleNamespace = "openshift-config"
	UserCABundleName      = "user-ca-bundle"
	// UserCATrustAnchor is the node's copy of it, a trust anchor of the node's system bundle.
	UserCATrustAnchor = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"
	// AdminKubeconfig is the admin kubeconfig on the node until the first boot's end (the user keeps it as
	// DIR/auth/kubeconfig).
	AdminKubeconfig = "/opt/openshift/auth/kubeconfig"
	// LocalhostKubeconfig is kube-apiserver's localhost kubeconfig (system:admin) on the node, which renew renews.
	LocalhostKubeconfig = "/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/localhost.kubeconfig"
)
