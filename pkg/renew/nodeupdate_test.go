package renew

import (
	"strings"
	"testing"

	"github.com/render-static/render-static/pkg/export"
	"github.com/render-static/render-static/pkg/inventory"
)

// aioWith is an aio.ign-shaped config: the passwd section given (none when ""), then storage and systemd.
func aioWith(passwd string) string {
	var b strings.Builder
	b.WriteString(`{"ignition":{"version":"3.2.0"}`)
	if passwd != "" {
		b.WriteString(`,"passwd":` + passwd)
	}
	b.WriteString(`,"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a%0A"},"mode":420},` +
		`{"path":"/etc/b","contents":{"compression":"gzip","source":"data:;base64,H4sIAAAAAAAAA8tIzcnJ11EoSs1LSS3SLS5JLMlMBgCBaSKVFAAAAA=="},"mode":420}]},` +
		`"systemd":{"units":[{"contents":"[Unit]\n","enabled":true,"name":"kubelet.service","dropins":[{"name":"10-x.conf","contents":"[Service]\n"}]},` +
		`{"mask":true,"name":"old.service"}]}}`)
	return b.String()
}

// TestEarlierConfigOneParse: compare parses the earlier aio.ign once and reads its files, units and passwd from that
// parse; the new aio.ign's passwd is read without parsing its storage.
func TestEarlierConfigOneParse(t *testing.T) {
	const keys = `{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA one"]}]}`
	earlier, err := parseEarlier([]byte(aioWith(keys)))
	if err != nil {
		t.Fatal(err)
	}
	files, err := inventory.DecodeFiles(earlier.Storage.Files)
	if err != nil {
		t.Fatal(err)
	}
	if string(files["/etc/a"]) != "a\n" || string(files["/etc/b"]) != "hello, render-static" {
		t.Errorf("files = %q", files)
	}
	for _, bad := range []string{`[]`, `{"storage":{}}`, `{"ignition":`} {
		if _, err := parseEarlier([]byte(bad)); err == nil || !strings.Contains(err.Error(), "not an Ignition config") {
			t.Errorf("parseEarlier(%s) = %v, want not an Ignition config", bad, err)
		}
	}

	for _, c := range []struct {
		name, now string
		changed   bool
	}{
		{"same keys", keys, false},
		{"another key", `{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA two"]}]}`, true},
		{"keys removed", "", true},
	} {
		got, err := passwdChanged(earlier.Passwd, []byte(aioWith(c.now)))
		if err != nil || got != c.changed {
			t.Errorf("%s: passwdChanged = %v, %v, want %v", c.name, got, err, c.changed)
		}
	}
	// The new config's value is read where it is: what follows it is not read (aio.ign's megabytes of storage).
	if v, err := topLevelValue([]byte(`{"ignition":{"version":"3.2.0"},"passwd":{"users":[]},"storage":!`), "passwd"); err != nil || string(v) != `{"users":[]}` {
		t.Errorf("topLevelValue = %s, %v", v, err)
	}
	if v, err := topLevelValue([]byte(`{"ignition":{}}`), "passwd"); err != nil || v != nil {
		t.Errorf("topLevelValue without the key = %s, %v, want nothing", v, err)
	}
	if _, err := topLevelValue([]byte(`["passwd"]`), "passwd"); err == nil {
		t.Error("topLevelValue of an array: no error")
	}

	units := []export.Unit{
		{Name: "kubelet.service", Contents: "[Unit]\n", Enabled: true, Dropins: []export.Dropin{{Name: "10-x.conf", Contents: "[Service]\nX=1\n"}}},
		{Name: "new.service", Contents: "[Unit]\n"},
	}
	got := strings.Join(changedUnits(earlier.Systemd.Units, units, nil), "; ")
	for _, want := range []string{"unit kubelet.service (changed", "unit new.service (new", "unit old.service (no longer in the render)"} {
		if !strings.Contains(got, want) {
			t.Errorf("changedUnits = %s, want %q", got, want)
		}
	}
}
