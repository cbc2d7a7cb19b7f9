package inventory

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes the inventory as indented JSON.
func (inv *Inventory) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(inv)
}

// UnusedHeading introduces the certificates not in use (Inventory.Unused) in WriteTable.
const UnusedHeading = "NOT IN USE: only in copies kept for revisions no static pod runs (never counted as expiring)"

// UserCAsHeading introduces the install-config's trust bundle (Inventory.UserCAs) in WriteTable.
const UserCAsHeading = "USER CAs: the install-config's additionalTrustBundle, the user's to replace; render-static neither issues nor renews them (never counted as expiring)"

// AdminHeading introduces the admin kubeconfig's client certificate (Inventory.AdminKubeconfig) in WriteTable.
const AdminHeading = "ADMIN KUBECONFIG: never renewed (its signer's key is not kept); after it expires, use the node's " + LocalhostKubeconfig + " (never counted as expiring)"

// WriteTable writes a table of every certificate in use (soonest expiry first), then of those not in use, their
// details, the CA bundles, and the signer tree.
func (inv *Inventory) WriteTable(w io.Writer) error {
	if err := writeCertTable(w, inv.Certificates); err != nil {
		return err
	}
	if len(inv.Unused) > 0 {
		fmt.Fprintf(w, "\n%s\n", UnusedHeading)
		if err := writeCertTable(w, inv.Unused); err != nil {
			return err
		}
	}
	if inv.AdminKubeconfig != nil {
		fmt.Fprintf(w, "\n%s\n", AdminHeading)
		if err := writeCertTable(w, []*Certificate{inv.AdminKubeconfig}); err != nil {
			return err
		}
	}
	if len(inv.UserCAs) > 0 {
		fmt.Fprintf(w, "\n%s\n", UserCAsHeading)
		if err := writeCertTable(w, inv.UserCAs); err != nil {
			return err
		}
		for _, c := range inv.ExpiredUserCAs() {
			fmt.Fprintf(w, "warning: %s\n", ExpiredUserCA(c))
		}
	}
	fmt.Fprintf(w, "\nDETAILS\n")
	for _, c := range inv.All() {
		fmt.Fprintf(w, "%s\n", c.Name)
		fmt.Fprintf(w, "  subject:    %s\n", c.Subject)
		if len(c.SANs) > 0 {
			fmt.Fprintf(w, "  SANs:       %s\n", strings.Join(c.SANs, ", "))
		}
		signer := c.Signer
		switch {
		case c.SelfSigned:
			signer = "self-signed"
		case signer == "":
			signer = "not present"
		}
		fmt.Fprintf(w, "  issuer:     %s (%s)\n", c.Issuer, signer)
		fmt.Fprintf(w, "  key:        %s\n", c.KeyType)
		fmt.Fprintf(w, "  valid:      %s to %s (%s left)\n", c.NotBefore.Format(time.RFC3339), c.NotAfter.Format(time.RFC3339), c.TimeLeft)
		fmt.Fprintf(w, "  sha256:     %s\n", c.Fingerprint)
		for _, l := range c.Locations {
			fmt.Fprintf(w, "  in:         %s\n", l)
		}
		switch {
		case inv.unused(c):
			fmt.Fprintf(w, "  not in use: only in copies of revisions no static pod runs\n")
		case slices.Contains(inv.UserCAs, c):
			fmt.Fprintf(w, "  user CA:    from the install-config's additionalTrustBundle; not renewed by render-static\n")
		case c == inv.AdminKubeconfig:
			fmt.Fprintf(w, "  admin:      never renewed; after it, use the node's %s\n", LocalhostKubeconfig)
		}
	}
	fmt.Fprintf(w, "\nCA BUNDLES\n")
	for _, b := range inv.Bundles {
		fmt.Fprintf(w, "%s\n", b.Name)
		for _, m := range b.Certificates {
			fmt.Fprintf(w, "  holds:      %s\n", m)
		}
		for _, l := range b.Locations {
			fmt.Fprintf(w, "  in:         %s\n", l)
		}
	}
	fmt.Fprintf(w, "\nSIGNER TREE\n")
	inv.WriteTree(w)
	return nil
}

// writeCertTable writes one line per certificate: name, kind, key, not-after and time left, in aligned columns.
func writeCertTable(w io.Writer, certs []*Certificate) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CERTIFICATE\tKIND\tKEY\tNOT AFTER\tLEFT\n")
	for _, c := range certs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, kindOf(c), c.KeyType, c.NotAfter.Format(time.RFC3339), c.TimeLeft)
	}
	return tw.Flush()
}

func (inv *Inventory) unused(c *Certificate) bool { return slices.Contains(inv.Unused, c) }

func kindOf(c *Certificate) string {
	switch {
	case c.IsCA && c.SelfSigned:
		return "root CA"
	case c.IsCA:
		return "CA"
	}
	return "leaf"
}

// WriteTree prints every certificate under the certificate that signed it; certificates whose signer is not
// present are roots of their own. Those not in use are marked so.
func (inv *Inventory) WriteTree(w io.Writer) {
	children := map[string][]*Certificate{}
	var roots []*Certificate
	for _, c := range inv.All() {
		if c.Signer == "" {
			roots = append(roots, c)
			continue
		}
		children[c.Signer] = append(children[c.Signer], c)
	}
	byName := func(cs []*Certificate) {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	}
	byName(roots)
	var walk func(c *Certificate, indent string)
	walk = func(c *Certificate, indent string) {
		note := ""
		if c.Signer == "" && !c.SelfSigned {
			note = " (signer not present: " + c.Issuer + ")"
		}
		switch {
		case inv.unused(c):
			note += " (not in use)"
		case slices.Contains(inv.UserCAs, c):
			note += " (user CA)"
		}
		fmt.Fprintf(w, "%s%s [%s, %s left]%s\n", indent, c.Name, kindOf(c), c.TimeLeft, note)
		kids := children[c.Name]
		byName(kids)
		for _, k := range kids {
			walk(k, indent+"  ")
		}
	}
	for _, r := range roots {
		walk(r, "")
	}
}

// ExpiredUserCA says that a user CA (Inventory.UserCAs) expired, and what to do.
func ExpiredUserCA(c *Certificate) string {
	return fmt.Sprintf("the install-config's additionalTrustBundle holds %q, a CA that expired at %s: nothing it signed is trusted any more; "+
		"remove it from the trust bundle (or replace it with its successor) and render again", c.Subject, c.NotAfter.UTC().Format(time.RFC3339))
}
