package export

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

func mustAddFile(t *testing.T, tr *Tree, p string, mode fs.FileMode, data string) {
	t.Helper()
	if err := tr.AddFile(p, mode, []byte(data)); err != nil {
		t.Fatalf("AddFile(%q, %#o): %v", p, mode, err)
	}
}

func mustAddDir(t *testing.T, tr *Tree, p string, mode fs.FileMode) {
	t.Helper()
	if err := tr.AddDir(p, mode); err != nil {
		t.Fatalf("AddDir(%q, %#o): %v", p, mode, err)
	}
}

func mustAddUnit(t *testing.T, tr *Tree, u Unit) {
	t.Helper()
	if err := tr.AddUnit(u); err != nil {
		t.Fatalf("AddUnit(%q): %v", u.Name, err)
	}
}

func TestTreeAddFileDuplicates(t *testing.T) {
	tr := NewTree()
	mustAddFile(t, tr, "/etc/a.conf", 0o644, "a")
	// Identical re-add is fine and does not duplicate the file.
	mustAddFile(t, tr, "/etc/a.conf", 0o644, "a")
	if n := len(tr.Files()); n != 1 {
		t.Fatalf("got %d files after identical re-add, want 1", n)
	}
	if err := tr.AddFile("/etc/a.conf", 0o644, []byte("b")); err == nil {
		t.Error("re-adding with different contents: no error")
	}
	if err := tr.AddFile("/etc/a.conf", 0o600, []byte("a")); err == nil {
		t.Error("re-adding with a different mode: no error")
	}
	if got := string(tr.Files()[0].Contents); got != "a" {
		t.Errorf("contents changed by failed re-add: %q", got)
	}
	// Nil and empty contents are the same file.
	mustAddFile(t, tr, "/etc/empty", 0o644, "")
	if err := tr.AddFile("/etc/empty", 0o644, nil); err != nil {
		t.Errorf("re-adding empty file with nil contents: %v", err)
	}
}

func TestTreeAddFileCopiesContents(t *testing.T) {
	tr := NewTree()
	buf := []byte("original")
	if err := tr.AddFile("/etc/x", 0o644, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "CHANGED!")
	if got := string(tr.Files()[0].Contents); got != "original" {
		t.Errorf("tree contents follow the caller's buffer: %q", got)
	}
}

func TestTreePathRules(t *testing.T) {
	bad := []string{"", "etc/x", "./etc/x", "/etc//x", "/etc/x/", "/etc/../x", "/etc/./x", "/"}
	for _, p := range bad {
		if err := NewTree().AddFile(p, 0o644, nil); err == nil {
			t.Errorf("AddFile(%q): no error", p)
		}
		if err := NewTree().AddDir(p, 0o755); err == nil {
			t.Errorf("AddDir(%q): no error", p)
		}
	}
	for _, m := range []fs.FileMode{fs.ModeDir | 0o755, fs.ModeSetuid | 0o755, fs.ModeSticky | 0o755, 0o10000} {
		if err := NewTree().AddFile("/usr/local/bin/x", m, nil); err == nil {
			t.Errorf("AddFile with mode %v: no error", m)
		}
		if err := NewTree().AddDir("/var/x", m); err == nil {
			t.Errorf("AddDir with mode %v: no error", m)
		}
	}
}

func TestTreeFileDirCollisions(t *testing.T) {
	t.Run("dir where file is", func(t *testing.T) {
		tr := NewTree()
		mustAddFile(t, tr, "/etc/a", 0o644, "x")
		if err := tr.AddDir("/etc/a", 0o755); err == nil {
			t.Error("no error")
		}
		if len(tr.Dirs()) != 0 {
			t.Error("failed AddDir left a directory behind")
		}
	})
	t.Run("file where explicit dir is", func(t *testing.T) {
		tr := NewTree()
		mustAddDir(t, tr, "/etc/a", 0o700)
		if err := tr.AddFile("/etc/a", 0o644, nil); err == nil {
			t.Error("no error")
		}
	})
	t.Run("file where implied dir is", func(t *testing.T) {
		tr := NewTree()
		mustAddFile(t, tr, "/etc/a/b/c", 0o644, "x")
		for _, p := range []string{"/etc/a/b", "/etc/a", "/etc"} {
			if err := tr.AddFile(p, 0o644, nil); err == nil {
				t.Errorf("AddFile(%q): no error", p)
			}
		}
	})
	t.Run("file used as parent", func(t *testing.T) {
		tr := NewTree()
		mustAddFile(t, tr, "/etc/a", 0o644, "x")
		if err := tr.AddFile("/etc/a/b", 0o644, nil); err == nil {
			t.Error("AddFile under a file: no error")
		}
		if err := tr.AddDir("/etc/a/b/c", 0o755); err == nil {
			t.Error("AddDir under a file: no error")
		}
		if len(tr.Files()) != 1 || len(tr.Dirs()) != 0 {
			t.Errorf("failed adds changed the tree: %v %v", tr.Files(), tr.Dirs())
		}
	})
	t.Run("dir modes", func(t *testing.T) {
		tr := NewTree()
		mustAddFile(t, tr, "/etc/kubernetes/x", 0o644, "x")
		// An implied directory may be made explicit, with any mode.
		mustAddDir(t, tr, "/etc/kubernetes", 0o700)
		mustAddDir(t, tr, "/etc/kubernetes", 0o700)
		if err := tr.AddDir("/etc/kubernetes", 0o755); err == nil {
			t.Error("AddDir with a different mode: no error")
		}
		want := []File{{Path: "/etc/kubernetes", Mode: 0o700}}
		if got := tr.Dirs(); !reflect.DeepEqual(got, want) {
			t.Errorf("Dirs() = %v, want %v", got, want)
		}
	})
	t.Run("unit vs file", func(t *testing.T) {
		tr := NewTree()
		mustAddFile(t, tr, "/etc/systemd/system/kubelet.service", 0o644, "[Unit]\n")
		if err := tr.AddUnit(Unit{Name: "kubelet.service", Contents: "[Unit]\n"}); err == nil {
			t.Error("unit over a file: no error")
		}
		tr = NewTree()
		mustAddUnit(t, tr, Unit{Name: "crio.service", Dropins: []Dropin{{"10-x.conf", "[Service]\n"}}})
		if err := tr.AddFile("/etc/systemd/system/crio.service.d/10-x.conf", 0o644, nil); err == nil {
			t.Error("file over a drop-in: no error")
		}
		if err := tr.AddFile("/etc/systemd/system/crio.service.d", 0o644, nil); err == nil {
			t.Error("file over a drop-in directory: no error")
		}
		// A unit with only drop-ins does not claim the unit file path.
		mustAddFile(t, tr, "/etc/systemd/system/crio.service.d/20-other.conf", 0o644, "[Service]\n")
		if err := tr.AddFile(presetPath, 0o644, nil); err == nil {
			t.Error("file at the reserved preset path: no error")
		}
	})
}

func TestIsSecretPath(t *testing.T) {
	secret := []string{
		"/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/serving-cert/tls.key",
		"/etc/kubernetes/secrets/anything.yaml",
		"/etc/kubernetes/bootstrap-secrets/secrets/x",
		"/var/lib/kubelet/kubeconfig",
		"/etc/kubernetes/kubeconfig",
		"/etc/kubernetes/static-pod-resources/lb-int.kubeconfig",
		"/var/lib/kubelet/bootstrap-kubeconfig",
		"/etc/kubernetes/token",
		"/var/run/secrets/kubernetes.io/serviceaccount/token",
		"/var/lib/kubelet/config.json",
		"/var/lib/kubelet/pull-secret",
		"/etc/crio/pull-secret.json",
		"/etc/crio/config.json",
		"/opt/render/aio.ign",
		"/etc/pki/ca.key",
	}
	public := []string{
		"/etc/kubernetes/manifests/kube-apiserver-pod.yaml",
		"/etc/kubernetes/ca.crt",
		"/etc/kubernetes/secrets", // the directory itself is not "under" secrets
		"/etc/containers/config.json",
		"/etc/kubernetes/tokens.csv",
		"/etc/kubernetes/keys/ca.pub",
		"/etc/kubernetes/kubeconfig.d/readme",
		"/usr/share/doc/pull-secret",
		"/etc/aio.ign.sample",
	}
	for _, p := range secret {
		if !IsSecretPath(p) {
			t.Errorf("IsSecretPath(%q) = false, want true", p)
		}
	}
	for _, p := range public {
		if IsSecretPath(p) {
			t.Errorf("IsSecretPath(%q) = true, want false", p)
		}
	}
}

func TestTreeSecretModes(t *testing.T) {
	const p = "/etc/kubernetes/secrets/tls.key"
	for _, m := range []fs.FileMode{0o644, 0o640, 0o604, 0o660, 0o755, 0o710, 0o200, 0} {
		if err := NewTree().AddFile(p, m, []byte("k")); err == nil {
			t.Errorf("secret with mode %#o: no error", m)
		} else if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not name the path: %v", err)
		}
	}
	for _, m := range []fs.FileMode{0o600, 0o400, 0o700, 0o500} {
		if err := NewTree().AddFile(p, m, []byte("k")); err != nil {
			t.Errorf("secret with mode %#o: %v", m, err)
		}
	}
	// Non-secret paths may be world-readable.
	if err := NewTree().AddFile("/etc/kubernetes/ca.crt", 0o644, nil); err != nil {
		t.Error(err)
	}
}

func TestTreeSortedOutput(t *testing.T) {
	tr := NewTree()
	for _, p := range []string{"/z/file", "/a/b/c", "/m", "/a/a", "/etc/x.yaml"} {
		mustAddFile(t, tr, p, 0o644, p)
	}
	for _, p := range []string{"/var/z", "/var/a", "/opt/d"} {
		mustAddDir(t, tr, p, 0o700)
	}
	mustAddUnit(t, tr, Unit{Name: "z.service", Contents: "[Unit]\n"})
	mustAddUnit(t, tr, Unit{Name: "a.target", Contents: "[Unit]\n"})
	mustAddUnit(t, tr, Unit{Name: "kubelet.service", Dropins: []Dropin{{"20-b.conf", "[Service]\n"}, {"10-a.conf", "[Service]\n"}}})

	var files, dirs, units []string
	for _, f := range tr.Files() {
		files = append(files, f.Path)
		if string(f.Contents) != f.Path || f.Mode != 0o644 {
			t.Errorf("file %s: got %q %#o", f.Path, f.Contents, f.Mode)
		}
	}
	for _, d := range tr.Dirs() {
		dirs = append(dirs, d.Path)
		if d.Contents != nil || d.Mode != 0o700 {
			t.Errorf("dir %s: got %q %#o", d.Path, d.Contents, d.Mode)
		}
	}
	for _, u := range tr.Units() {
		units = append(units, u.Name)
	}
	check := func(name string, got, want []string) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	check("Files", files, []string{"/a/a", "/a/b/c", "/etc/x.yaml", "/m", "/z/file"})
	check("Dirs", dirs, []string{"/opt/d", "/var/a", "/var/z"})
	check("Units", units, []string{"a.target", "kubelet.service", "z.service"})
	d := tr.Units()[1].Dropins
	if len(d) != 2 || d[0].Name != "10-a.conf" || d[1].Name != "20-b.conf" {
		t.Errorf("drop-ins not sorted: %v", d)
	}
}

func TestTreeUnits(t *testing.T) {
	tr := NewTree()
	u := Unit{Name: "kubelet.service", Contents: "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n", Enabled: true,
		Dropins: []Dropin{{"10-a.conf", "[Service]\n"}, {"20-b.conf", "[Service]\n"}}}
	mustAddUnit(t, tr, u)
	// Identical (drop-ins in another order) is fine.
	mustAddUnit(t, tr, Unit{Name: u.Name, Contents: u.Contents, Enabled: true, Dropins: []Dropin{u.Dropins[1], u.Dropins[0]}})
	for _, other := range []Unit{
		{Name: u.Name, Contents: u.Contents, Enabled: false, Dropins: u.Dropins},
		{Name: u.Name, Contents: u.Contents + "#\n", Enabled: true, Dropins: u.Dropins},
		{Name: u.Name, Contents: u.Contents, Enabled: true, Dropins: u.Dropins[:1]},
	} {
		if err := tr.AddUnit(other); err == nil {
			t.Errorf("conflicting unit %+v: no error", other)
		}
	}
	for _, bad := range []Unit{
		{Name: "", Contents: "[Unit]\n"},
		{Name: "kubelet", Contents: "[Unit]\n"},
		{Name: "x/y.service", Contents: "[Unit]\n"},
		{Name: "idle.service"},
		{Name: "d.service", Dropins: []Dropin{{"10-x", "[Service]\n"}}},
		{Name: "d.service", Dropins: []Dropin{{"../10-x.conf", "[Service]\n"}}},
		{Name: "d.service", Dropins: []Dropin{{"10-x.conf", ""}}},
		{Name: "d.service", Dropins: []Dropin{{"10-x.conf", "[Service]\n"}, {"10-x.conf", "[Service]\n"}}},
	} {
		if err := NewTree().AddUnit(bad); err == nil {
			t.Errorf("invalid unit %+v: no error", bad)
		}
	}
	// Enabling a unit the OS ships needs no contents.
	mustAddUnit(t, tr, Unit{Name: "crio.service", Enabled: true})
	if got := tr.Units(); len(got) != 2 || !reflect.DeepEqual(got[1], u) {
		t.Errorf("Units() = %+v", got)
	}
}

func TestTreeMerge(t *testing.T) {
	a := NewTree()
	mustAddFile(t, a, "/etc/a", 0o644, "a")
	mustAddFile(t, a, "/etc/shared", 0o644, "same")
	b := NewTree()
	mustAddFile(t, b, "/etc/shared", 0o644, "same")
	mustAddFile(t, b, "/var/b", 0o600, "b")
	mustAddDir(t, b, "/var/empty", 0o700)
	mustAddUnit(t, b, Unit{Name: "b.service", Contents: "[Unit]\n"})
	if err := a.Merge(b); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if n := len(a.Files()); n != 3 {
		t.Errorf("%d files after merge, want 3", n)
	}
	if len(a.Dirs()) != 1 || len(a.Units()) != 1 {
		t.Errorf("dirs %v units %v after merge", a.Dirs(), a.Units())
	}

	// A conflicting merge fails and leaves the tree exactly as it was, even though parts of o fit.
	before := [3]any{a.Files(), a.Dirs(), a.Units()}
	c := NewTree()
	mustAddFile(t, c, "/aaa/new", 0o644, "fits")
	mustAddUnit(t, c, Unit{Name: "c.service", Contents: "[Unit]\n"})
	mustAddFile(t, c, "/etc/shared", 0o644, "different")
	if err := a.Merge(c); err == nil {
		t.Fatal("conflicting Merge: no error")
	}
	if after := [3]any{a.Files(), a.Dirs(), a.Units()}; !reflect.DeepEqual(before, after) {
		t.Errorf("failed Merge changed the tree:\nbefore %v\nafter  %v", before, after)
	}
	// The failed merge must not have left claimed paths behind either.
	mustAddFile(t, a, "/aaa/new/child", 0o644, "")

	d := NewTree()
	mustAddFile(t, d, "/var/b/child", 0o644, "x")
	if err := a.Merge(d); err == nil {
		t.Error("Merge putting a file under a file: no error")
	}
}
