package testtools

import (
	"flag"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeT records how a helper ended the test.
type fakeT struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, format
	panic(f)
}
func (f *fakeT) Skipf(format string, args ...any) {
	f.skipped, f.msg = true, format
	panic(f)
}

func run(fn func(t testing.TB)) (f *fakeT) {
	f = &fakeT{}
	defer func() {
		if r := recover(); r != nil && r != any(f) {
			panic(r)
		}
	}()
	fn(f)
	return f
}

func TestMissingFailsOnlyWhenRequired(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		env                string
		wantFail, wantSkip bool
	}{{"1", true, false}, {"", false, true}, {"0", false, true}} {
		t.Setenv(Env, tc.env)
		for name, fn := range map[string]func(testing.TB){
			"tool": func(t testing.TB) { Tool(t, "render-static-no-such-tool") },
			"path": func(t testing.TB) { Path(t, none, "expected tree") },
		} {
			f := run(fn)
			if f.failed != tc.wantFail || f.skipped != tc.wantSkip {
				t.Errorf("%s=%q %s: failed %v skipped %v", Env, tc.env, name, f.failed, f.skipped)
			}
		}
	}
	t.Setenv(Env, "1")
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if f := run(func(t testing.TB) { got = Tool(t, "sh") }); f.failed || f.skipped || got != sh {
		t.Errorf("Tool(sh) = %q (failed %v skipped %v), want %s", got, f.failed, f.skipped, sh)
	}
	dir := t.TempDir()
	if f := run(func(t testing.TB) { Path(t, dir, "dir") }); f.failed || f.skipped {
		t.Errorf("an existing path ended the test: %s", f.msg)
	}
	if f := run(func(t testing.TB) { Missing(t, "x") }); !strings.Contains(f.msg, "required") {
		t.Errorf("message %q does not say it is required", f.msg)
	}
}

func TestLongSkipsOnlyUnderShort(t *testing.T) {
	short := flag.Lookup("test.short")
	defer func(v string) { _ = short.Value.Set(v) }(short.Value.String())
	for _, tc := range []struct {
		short    string
		wantSkip bool
	}{{"true", true}, {"false", false}} {
		if err := short.Value.Set(tc.short); err != nil {
			t.Fatal(err)
		}
		if f := run(func(t testing.TB) { Long(t, "renders") }); f.skipped != tc.wantSkip || f.failed {
			t.Errorf("-short=%s: skipped %v failed %v, want skipped %v", tc.short, f.skipped, f.failed, tc.wantSkip)
		}
	}
}
