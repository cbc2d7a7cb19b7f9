package parsecache

import (
	"errors"
	"strings"
	"testing"
)

// TestValueParsesOnlyNewBytes: Get calls parse exactly when the bytes differ from the last parse's, slice by slice,
// returns what that parse returned (errors too), and keeps a copy of the bytes.
func TestValueParsesOnlyNewBytes(t *testing.T) {
	var k Value[string]
	calls := 0
	get := func(step string, wantCalls int, wantErr bool, in ...[]byte) string {
		t.Helper()
		v, err := k.Get(func() (string, error) {
			calls++
			var parts []string
			for _, b := range in {
				if string(b) == "bad" {
					return "", errors.New("bad input")
				}
				parts = append(parts, string(b))
			}
			return strings.Join(parts, "+"), nil
		}, in...)
		if calls != wantCalls {
			t.Fatalf("%s: parse called %d times in all, want %d", step, calls, wantCalls)
		}
		if (err != nil) != wantErr {
			t.Fatalf("%s: err = %v, want error %v", step, err, wantErr)
		}
		return v
	}
	if v := get("first", 1, false, []byte("a"), []byte("b")); v != "a+b" {
		t.Fatalf("first: %q", v)
	}
	if v := get("same bytes", 1, false, []byte("a"), []byte("b")); v != "a+b" {
		t.Fatalf("same bytes: %q", v)
	}
	get("second slice differs", 2, false, []byte("a"), []byte("c"))
	get("split differently", 3, false, []byte("ac"), []byte(""))
	get("fewer slices", 4, false, []byte("ac"))
	get("an error", 5, true, []byte("bad"))
	get("the error kept", 5, true, []byte("bad"))
	get("back to good bytes", 6, false, []byte("a"), []byte("b"))
	in := []byte("x")
	get("from a buffer", 7, false, in)
	in[0] = 'y' // the caller reuses its buffer: what was kept is x's
	if v := get("the changed buffer", 8, false, in); v != "y" {
		t.Fatalf("the changed buffer: %q", v)
	}
	if v := get("x again", 9, false, []byte("x")); v != "x" {
		t.Fatalf("x again: %q", v)
	}
}
