package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/render-static/render-static/internal/isoembed"
	"github.com/render-static/render-static/internal/testkit/testtools"
)

// embedTarget is the bundled example's live.ign's target in the live ISO's embed area: 200 KiB (issue 39), met
// with the Secrets' text exported as text (export.SecretsAsText) and only the running revisions' copies
// (export.PruneRevisions).
const embedTarget = 200 << 10

// trustBundleCAs make a trust bundle of over 200 KB (about 1,150 bytes of PEM each).
const trustBundleCAs = 200

// TestLiveEmbedTargets renders the bundled example, a dual-stack cluster behind a proxy, and the example with a
// trust bundle of over 200 KB, and reads each live.ign's embed size from the summary (xz as coreos-installer
// compresses it): the example under 200 KiB, the dual-stack proxy and the trust bundle inside the 262,144-byte
// area. The trust bundle (user CAs, each with its own RSA signature) is on the node three times, in three encodings
// (the trust anchor file as it is, openshift-config/user-ca-bundle's YAML and cluster-config-v1's install-config,
// indented differently), which xz finds again only line by line: it may cost at most 1.5 times what xz makes of the
// bundle alone. It fits since the node's CRDs are JSON (export.Manifest.NodeBytes; ~4 KB to spare), and with ~43 KB
// to spare since they are without their schemas' descriptions (docs/install.md, "Limits").
func TestLiveEmbedTargets(t *testing.T) {
	testtools.Long(t, "renders three clusters")
	testtools.Tool(t, "xz")
	work := t.TempDir()
	dual, err := os.ReadFile(repo("testdata/installconfig/good/dualstack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dualProxy := filepath.Join(work, "dual-proxy.yaml")
	proxy := "proxy:\n  httpProxy: http://[fd00::1]:3128\n  httpsProxy: http://proxy.example.com:3129\n" +
		"  noProxy: .example.com,192.168.126.0/24,fd00::/64,localhost\n"
	if err := os.WriteFile(dualProxy, append(dual, proxy...), 0o600); err != nil {
		t.Fatal(err)
	}
	bundle, _ := userCAs(t, trustBundleCAs)
	if len(bundle) < 200_000 {
		t.Fatalf("the trust bundle has %d bytes, want at least 200 KB", len(bundle))
	}
	embed := func(name, ic, nodeIP string) int {
		code, stdout, stderr := runCLI("--install-config", ic, "--node-ip", nodeIP, "--dir", filepath.Join(work, name))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		m := regexp.MustCompile(`live\.ign:\s+\d+ bytes; (?:embeds in (\d+) of|DOES NOT FIT the live ISO's embed area: (\d+) >)`).FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("%s: the summary says no embed size:\n%s", name, stdout)
		}
		n, _ := strconv.Atoi(m[1] + m[2])
		t.Logf("%s: live.ign embeds in %d bytes", name, n)
		return n
	}
	example := embed("example", repo("examples/sno/install-config.yaml"), "192.168.126.10")
	if example >= embedTarget {
		t.Errorf("the bundled example's live.ign embeds in %d bytes, want under %d (200 KiB)", example, embedTarget)
	}
	if n := embed("dual-stack-proxy", dualProxy, "192.168.126.10,fd00::10"); n >= isoembed.AreaSize {
		t.Errorf("dual stack behind a proxy: live.ign embeds in %d bytes, the area holds %d", n, isoembed.AreaSize)
	}
	withBundle := embed("trust-bundle", withTrustBundle(t, t.TempDir(), bundle), "192.168.126.10")
	alone, err := isoembed.Compress(context.Background(), []byte(bundle))
	if err != nil {
		t.Fatal(err)
	}
	cost := withBundle - example
	if cost*2 > len(alone)*3 {
		t.Errorf("a trust bundle of %d bytes (%d once compressed alone) adds %d bytes to live.ign's embed size: more than 1.5 times", len(bundle), len(alone), cost)
	}
	if withBundle >= isoembed.AreaSize {
		t.Errorf("with a trust bundle of %d bytes: live.ign embeds in %d bytes, the area holds %d", len(bundle), withBundle, isoembed.AreaSize)
	}
	t.Logf("a trust bundle of %d bytes (%d once compressed alone, %d CAs) adds %d bytes: live.ign embeds in %d of %d bytes (fits: %v)",
		len(bundle), len(alone), bytes.Count([]byte(bundle), []byte("BEGIN CERTIFICATE")), cost, withBundle, isoembed.AreaSize, withBundle < isoembed.AreaSize)
}
