package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/render-static/render-static/pkg/clusterconfig"
	"github.com/render-static/render-static/pkg/emulate"
	"github.com/render-static/render-static/pkg/export"
)

// The legacy token secrets of a render: one per static-pod component, each for its localhost-recovery-client.
var legacyTokenNamespaces = []string{"openshift-kube-apiserver", "openshift-kube-controller-manager", "openshift-kube-scheduler"}

const (
	recoveryTokenSecret = "localhost-recovery-client-token"
	recoverySA          = "localhost-recovery-client"
	// stubCA is the ca.crt the stub's token controller fills in (testdata/node/bin/oc).
	stubCA = "-----BEGIN CERTIFICATE-----\nbGl2ZQ==\n-----END CERTIFICATE-----\n"
)

// liveToken is the token the stub's token controller fills a secret with for the live service account.
func liveToken(ns, sa string) string {
	return "live-token-" + ns + "-" + sa + "-live-uid-" + ns + "-" + sa
}

// offlineToken is a legacy token secret the render minted, and the node directories holding its files.
type offlineToken struct {
	ns, secret, sa string
	token, ca      []byte
	dirs           []string // node paths
}

// addLegacyTokens gives the fixture's cluster what a render holds for legacy tokens: the service-account key
// pair, the serving CA bundle, a ServiceAccount and an empty token secret per component, and the emulated token
// controller that fills them.
func addLegacyTokens(t *testing.T, f *fixture) {
	t.Helper()
	ctx := context.Background()
	seeds, err := clusterconfig.ServiceAccountKeySeeds()
	if err != nil {
		t.Fatal(err)
	}
	objs := append(seeds, bundleConfigMap(clusterconfig.ServerCANamespace, clusterconfig.ServerCAConfigMap, f.servingC.certPEM))
	for _, ns := range legacyTokenNamespaces {
		objs = append(objs,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: recoverySA}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: recoveryTokenSecret,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: recoverySA}}, Type: corev1.SecretTypeServiceAccountToken})
	}
	for _, o := range objs {
		var err error
		switch x := o.(type) {
		case *corev1.Secret:
			_, err = f.c.Kube.CoreV1().Secrets(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = f.c.Kube.CoreV1().ConfigMaps(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = f.c.Kube.CoreV1().ServiceAccounts(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
		default:
			t.Fatalf("unexpected seed %T", o)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	f.extra = append(f.extra, emulate.LegacyServiceAccountTokens(f.c))
}

// layDownLegacyTokens writes the render's tokens under root as the installer layout does: every key of the secret
// into <ResourceDir>/<component>-pod-1/secrets/<secret>/, 0600, and, for kube-apiserver, into a second revision
// too. A directory of the same secret name for a namespace the render has no token for is laid down as well: it
// must stay as it is.
func layDownLegacyTokens(t *testing.T, f *fixture, root string) []offlineToken {
	t.Helper()
	var out []offlineToken
	for _, ns := range legacyTokenNamespaces {
		s, err := f.c.Kube.CoreV1().Secrets(ns).Get(context.Background(), recoveryTokenSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Data[corev1.ServiceAccountTokenKey]) == 0 || s.Annotations[corev1.ServiceAccountUIDKey] == "" {
			t.Fatalf("the emulated token controller did not fill %s/%s", ns, s.Name)
		}
		tok := offlineToken{ns: ns, secret: s.Name, sa: recoverySA, token: s.Data["token"], ca: s.Data["ca.crt"]}
		revs := []int{1}
		if ns == "openshift-kube-apiserver" {
			revs = append(revs, 2)
		}
		for _, rev := range revs {
			dir := path.Join(export.ResourceDir, fmt.Sprintf("%s-pod-%d", strings.TrimPrefix(ns, "openshift-"), rev), "secrets", s.Name)
			for k, v := range s.Data {
				if err := export.WriteFile(filepath.Join(root, dir, k), 0600, v); err != nil {
					t.Fatal(err)
				}
			}
			tok.dirs = append(tok.dirs, dir)
		}
		out = append(out, tok)
	}
	decoy := path.Join(export.ResourceDir, "other-pod-1/secrets", recoveryTokenSecret)
	for k, v := range map[string]string{"token": "decoy", "namespace": "openshift-other"} {
		if err := export.WriteFile(filepath.Join(root, decoy, k), 0600, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func (a *applyEnv) read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(a.root, p))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (a *applyEnv) inode(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Stat(filepath.Join(a.root, p))
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// fileIDs are the inode and modification time of every file of the tokens' directories, to see a rerun write nothing.
func (a *applyEnv) fileIDs(t *testing.T) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, tok := range a.tokens {
		for _, d := range tok.dirs {
			ents, err := os.ReadDir(filepath.Join(a.root, d))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				st, err := os.Stat(filepath.Join(a.root, d, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				ids[path.Join(d, e.Name())] = fmt.Sprintf("inode %d, modified %s", st.Sys().(*syscall.Stat_t).Ino, st.ModTime())
			}
		}
	}
	return ids
}

// checkLive checks that tok's files on the node hold the live token and the live CA, 0600, and nothing else
// changed (namespace; no temporary files left).
func (a *applyEnv) checkLive(t *testing.T, tok offlineToken) {
	t.Helper()
	for _, d := range tok.dirs {
		if got := string(a.read(t, path.Join(d, "token"))); got != liveToken(tok.ns, tok.sa) {
			t.Errorf("%s/token = %.40q…, want the live token %q", d, got, liveToken(tok.ns, tok.sa))
		}
		if got := string(a.read(t, path.Join(d, "ca.crt"))); got != stubCA {
			t.Errorf("%s/ca.crt is not the live secret's ca.crt: %.40q…", d, got)
		}
		if got := string(a.read(t, path.Join(d, "namespace"))); got != tok.ns {
			t.Errorf("%s/namespace = %q", d, got)
		}
		ents, _ := os.ReadDir(filepath.Join(a.root, d))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
			st, err := os.Stat(filepath.Join(a.root, d, e.Name()))
			if err != nil || st.Mode().Perm() != 0600 || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
				t.Errorf("%s/%s: mode %v, owner %d (want 0600, %d): %v", d, e.Name(), st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Uid, os.Getuid(), err)
			}
		}
		if !slices.Equal(names, []string{"ca.crt", "namespace", "token"}) {
			t.Errorf("%s holds %v", d, names)
		}
	}
}

// checkOffline checks that tok's files on the node still hold the render's token.
func (a *applyEnv) checkOffline(t *testing.T, tok offlineToken) {
	t.Helper()
	for _, d := range tok.dirs {
		if got := a.read(t, path.Join(d, "token")); !bytes.Equal(got, tok.token) {
			t.Errorf("%s/token changed to %.40q…, want the render's token", d, got)
		}
	}
}

// tokenCalls are the stub calls that read service accounts or token secrets.
func tokenCalls(calls []string) []string {
	var out []string
	for _, c := range calls {
		if strings.Contains(c, "get serviceaccount") || strings.Contains(c, "get secret") {
			out = append(out, c)
		}
	}
	return out
}

// TestFilterExportLegacyTokens: a legacy token secret is exported as a request for a token (type and service
// account name; no token, ca.crt, namespace or uid annotation; the rest as it is), in the object and in its YAML,
// without changing the render's manifest; other secrets are exported as they are; one that cannot be rewritten is
// not exported at all.
func TestFilterExportLegacyTokens(t *testing.T) {
	obj := func(typ string, data map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "type": typ, "data": data,
			"metadata": map[string]any{"namespace": "ns", "name": "client-token", "labels": map[string]any{"l": "v"},
				"annotations": map[string]any{corev1.ServiceAccountNameKey: "client", corev1.ServiceAccountUIDKey: "render-uid", "other": "kept"}}}
	}
	mk := func(o map[string]any) export.Manifest {
		m := manifest("", "v1", "Secret", "ns", "client-token", o)
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		m.YAML = b
		return m
	}
	tokenData := map[string]any{"token": "dG9r", "ca.crt": "Y2E=", "namespace": "bnM=", "extra": "ZQ=="}
	token := mk(obj(string(corev1.SecretTypeServiceAccountToken), tokenData))
	plain := mk(obj(string(corev1.SecretTypeOpaque), map[string]any{"token": "dG9r"}))
	broken := mk(obj(string(corev1.SecretTypeServiceAccountToken), map[string]any{"token": "dG9r"}))
	broken.Object["data"].(map[string]any)["bad"] = func() {} // not serialisable
	broken.File = "broken"
	before := string(token.YAML)

	kept, dropped := FilterExport([]export.Manifest{token, plain, broken})
	if len(kept) != 2 || len(dropped) != 1 || dropped[0].File != "broken" || dropped[0].Rule != LegacyTokenRule {
		t.Fatalf("kept %d, dropped %+v; want the token and the plain secret kept, the broken one dropped by %s", len(kept), dropped, LegacyTokenRule)
	}
	got := kept[0]
	var fromYAML map[string]any
	if err := yaml.Unmarshal(got.YAML, &fromYAML); err != nil {
		t.Fatal(err)
	}
	for what, o := range map[string]map[string]any{"object": got.Object, "YAML": fromYAML} {
		b, _ := json.Marshal(o)
		var s corev1.Secret
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if s.Type != corev1.SecretTypeServiceAccountToken || s.Annotations[corev1.ServiceAccountNameKey] != "client" {
			t.Errorf("%s: type %q, service account %q: the request for a token is lost", what, s.Type, s.Annotations[corev1.ServiceAccountNameKey])
		}
		if _, ok := s.Annotations[corev1.ServiceAccountUIDKey]; ok {
			t.Errorf("%s: the render's service-account UID is exported", what)
		}
		for _, k := range []string{"token", "ca.crt", "namespace"} {
			if _, ok := s.Data[k]; ok {
				t.Errorf("%s: data.%s is exported", what, k)
			}
		}
		if string(s.Data["extra"]) != "e" || s.Annotations["other"] != "kept" || s.Labels["l"] != "v" || s.Name != "client-token" {
			t.Errorf("%s: what the token controller does not own changed: %+v", what, s)
		}
	}
	if string(token.YAML) != before || tokenData["token"] != "dG9r" || token.Object["metadata"].(map[string]any)["annotations"].(map[string]any)[corev1.ServiceAccountUIDKey] != "render-uid" {
		t.Error("the render's manifest was changed")
	}
	if !bytes.Equal(kept[1].YAML, plain.YAML) {
		t.Errorf("an Opaque secret was rewritten:\n%s", kept[1].YAML)
	}

	// aiokube is told which secrets to wait for, with their service accounts; a token secret without one is an error.
	list, err := legacyTokens(kept)
	if err != nil || !slices.Equal(list, []string{"ns/client-token/client"}) {
		t.Errorf("legacyTokens = %v, %v", list, err)
	}
	delete(got.Object["metadata"].(map[string]any)["annotations"].(map[string]any), corev1.ServiceAccountNameKey)
	if _, err := legacyTokens([]export.Manifest{got}); err == nil {
		t.Error("a token secret without a service account is accepted")
	}
}

// TestLegacyTokenJSONPath: the jsonpath aiokube reads token secrets with (token_fields in aiokube.sh) gives, with
// client-go's jsonpath as oc and kubectl run it (missing keys allowed), "<uid>|<token>|<ca.crt>" of a filled
// secret and "||" of an empty one; the stub oc answers in that form.
func TestLegacyTokenJSONPath(t *testing.T) {
	script, err := readScript("aiokube.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^token_fields='([^']*)'$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("aiokube.sh has no token_fields='…' line")
	}
	jp := jsonpath.New("token").AllowMissingKeys(true)
	if err := jp.Parse(string(m[1])); err != nil {
		t.Fatalf("token_fields %s: %v", m[1], err)
	}
	run := func(s *corev1.Secret) string {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(u) // what oc prints from: the JSON form, data base64
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := jp.Execute(&out, v); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	filled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "t", Annotations: map[string]string{
		corev1.ServiceAccountNameKey: "sa", corev1.ServiceAccountUIDKey: "uid-1"}},
		Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{"token": []byte("tok"), "ca.crt": []byte("ca"), "namespace": []byte("ns")}}
	if got := run(filled); got != "uid-1|dG9r|Y2E=" {
		t.Errorf("filled secret: %q", got)
	}
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "t", Annotations: map[string]string{corev1.ServiceAccountNameKey: "sa"}},
		Type: corev1.SecretTypeServiceAccountToken}
	if got := run(empty); got != "||" {
		t.Errorf("empty secret: %q", got)
	}
}

// TestApplyLegacyTokens: the exported token secrets reach the API without the render's token and UID; aiokube
// waits until the token controller filled them for the live service accounts, then writes each live token and
// CA into every revision directory of its own namespace (0600, by rename), leaves other directories alone, and
// records each secret. A rerun (after a stop during the clean-up) reads nothing and writes nothing; without the
// records, it reads the secrets again but still writes nothing.
func TestApplyLegacyTokens(t *testing.T) {
	a := newApplyEnv(t)
	want := []string{}
	for _, tok := range a.tokens {
		want = append(want, tok.ns+"/"+tok.secret+"/"+tok.sa)
	}
	if got := a.env["AIOKUBE_LEGACY_TOKENS"]; got != strings.Join(want, " ") {
		t.Fatalf("aiokube.service: AIOKUBE_LEGACY_TOKENS=%q, want %q", got, strings.Join(want, " "))
	}
	inodes := map[string]uint64{}
	for _, tok := range a.tokens {
		for _, d := range tok.dirs {
			inodes[d] = a.inode(t, path.Join(d, "token"))
		}
	}
	out, err := a.run(t, "STUB_TOKEN_FILL_AFTER=2", "STUB_SYSTEMCTL_FAIL=1")
	if err == nil || !strings.Contains(out, "every legacy service-account token on the node is the live one") {
		t.Fatalf("aiokube (stopping in the clean-up): %v\n%s", err, out)
	}
	calls := a.calls(t)
	// What the API got: the secrets as requests for a token.
	for _, tok := range a.tokens {
		b, err := os.ReadFile(filepath.Join(a.api, "created", "05_"+tok.ns+"_secret_"+tok.secret+".yaml"))
		if err != nil {
			t.Fatalf("%s/%s was not created: %v", tok.ns, tok.secret, err)
		}
		var s corev1.Secret
		if err := yaml.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if s.Type != corev1.SecretTypeServiceAccountToken || s.Annotations[corev1.ServiceAccountNameKey] != tok.sa ||
			s.Annotations[corev1.ServiceAccountUIDKey] != "" || len(s.Data["token"]) != 0 || len(s.Data["ca.crt"]) != 0 {
			t.Errorf("%s/%s reached the API as\n%s", tok.ns, tok.secret, b)
		}
		if !strings.Contains(out, tok.ns+"/"+tok.secret+": the live token (service account UID live-uid-"+tok.ns+"-"+tok.sa+") is on the node") {
			t.Errorf("the journal does not say %s/%s is done:\n%s", tok.ns, tok.secret, out)
		}
		a.checkLive(t, tok)
		for _, d := range tok.dirs {
			if a.inode(t, path.Join(d, "token")) == inodes[d] {
				t.Errorf("%s/token was written in place, not replaced by a rename", d)
			}
		}
	}
	// It waited: every secret was read unfilled twice before (STUB_TOKEN_FILL_AFTER=2), and after the apply.
	tc := tokenCalls(calls)
	if n := len(tc); n != 2*3*len(a.tokens) {
		t.Errorf("%d reads of service accounts and secrets, want %d (3 polls of 3 secrets, 2 reads each)", n, 2*3*len(a.tokens))
	}
	lastCreate := -1
	for i, c := range calls {
		if strings.Contains(c, " create ") {
			lastCreate = i
		}
	}
	if first := slices.IndexFunc(calls, func(c string) bool { return strings.Contains(c, "get secret") }); first < lastCreate {
		t.Errorf("a token secret was read (call %d) before the last create (call %d)", first, lastCreate)
	}
	if got := string(a.read(t, path.Join(export.ResourceDir, "other-pod-1/secrets", recoveryTokenSecret, "token"))); got != "decoy" {
		t.Errorf("a directory of another namespace was written: %q", got)
	}
	for _, tok := range a.tokens {
		if !a.exists(path.Join(StateDir, "tokens", tok.ns+"_"+tok.secret)) {
			t.Errorf("%s/%s is not recorded", tok.ns, tok.secret)
		}
	}

	// The rerun: nothing to read, nothing written, the clean-up finished.
	ids := a.fileIDs(t)
	out, err = a.run(t)
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	calls = a.calls(t)
	if tc := tokenCalls(calls); len(tc) != 0 || len(creates(calls)) != 0 {
		t.Errorf("the rerun read %v and created %v", tc, creates(calls))
	}
	if got := a.fileIDs(t); !maps.Equal(got, ids) {
		t.Errorf("the rerun rewrote token files:\n%v\n%v", ids, got)
	}
	if a.exists(AIOKubeDir) || a.exists(AIOKubeScript) {
		t.Error("the rerun did not clean up")
	}
	for _, tok := range a.tokens {
		a.checkLive(t, tok)
	}

	// Without its records (a reboot after the files were written, before they were recorded), a run reads the
	// secrets again and finds the files up to date.
	a.reboot(t)
	out, err = a.run(t)
	if err != nil {
		t.Fatalf("rerun without records: %v\n%s", err, out)
	}
	if tc := tokenCalls(a.calls(t)); len(tc) != 2*len(a.tokens) {
		t.Errorf("the rerun without records made %d reads, want %d", len(tc), 2*len(a.tokens))
	}
	if got := a.fileIDs(t); !maps.Equal(got, ids) {
		t.Errorf("files already up to date were rewritten:\n%v\n%v", ids, got)
	}
	if !strings.Contains(out, "0 files written") {
		t.Errorf("the journal does not say nothing was written:\n%s", out)
	}
}

// TestApplyLegacyTokensBounded: a token secret the API never has is given up after AIOKUBE_TOKEN_WAIT_SECONDS,
// with its files left as the render wrote them, and the run still succeeds and cleans up; a filled secret no
// directory on the node holds is logged and done; a secret whose token names another service-account UID is
// never taken for the live one.
func TestApplyLegacyTokensBounded(t *testing.T) {
	a := newApplyEnv(t)
	missing, absent, synced := a.tokens[2], a.tokens[1], a.tokens[0] // scheduler, controller manager, apiserver
	for _, d := range absent.dirs {
		if err := os.RemoveAll(filepath.Join(a.root, d)); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	out, err := a.run(t, "STUB_TOKEN_MISSING="+missing.ns+"/"+missing.secret, "AIOKUBE_TOKEN_WAIT_SECONDS=2", "AIOKUBE_RETRY_SECONDS=1")
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("a missing token secret failed the run: %v\n%s", err, out)
	}
	if elapsed > 20*time.Second {
		t.Errorf("the run took %s with a 2 s token wait", elapsed)
	}
	entry := missing.ns + "/" + missing.secret + "/" + missing.sa
	if !regexp.MustCompile(regexp.QuoteMeta(entry+": giving up after 2s: ") + `.*NotFound.*the node keeps the render's token`).MatchString(out) {
		t.Errorf("the journal does not report the missing secret:\n%s", out)
	}
	if !strings.Contains(out, absent.ns+"/"+absent.secret+": filled, but no directory on this node holds it") {
		t.Errorf("the journal does not report the absent component:\n%s", out)
	}
	a.checkOffline(t, missing)
	a.checkLive(t, synced)
	if a.exists(AIOKubeDir) || a.exists(testOptions.ManifestsDir) {
		t.Error("the run did not clean up after giving up on a token")
	}
	if !strings.Contains(out, "done: "+AIOKubeUnit+" is disabled and removed") {
		t.Errorf("the run did not finish:\n%s", out)
	}

	// A token for another UID (the render's, or a stale one) is not the live token.
	b := newApplyEnv(t)
	out, err = b.run(t, "STUB_TOKEN_STALE=1", "AIOKUBE_TOKEN_WAIT_SECONDS=1", "AIOKUBE_RETRY_SECONDS=1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, tok := range b.tokens {
		b.checkOffline(t, tok)
		if !strings.Contains(out, tok.ns+"/"+tok.secret+"/"+tok.sa+": giving up after 1s: no token for service account UID live-uid-"+tok.ns+"-"+tok.sa+" yet (the secret names UID 'render-uid')") {
			t.Errorf("the journal does not report the stale token of %s:\n%s", tok.ns, out)
		}
	}
}
