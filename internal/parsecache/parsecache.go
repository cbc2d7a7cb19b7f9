// Package parsecache keeps what was parsed from some bytes while those bytes stay the same.
//
// Several loops read a certificate or key from a Secret on every pass and parse it again (an RSA key's
// validation is most of what such a loop costs), though the bytes change only when the Secret is rotated.
// A Value keeps the last parse's result together with a copy of its input: parsing depends on nothing else,
// so the same bytes give back the same result, errors included.
package parsecache

import (
	"bytes"
	"sync"
)

// Value keeps the result of parsing one tuple of byte slices. The zero Value keeps nothing. Get is safe for
// concurrent use; the result it returns is shared: a caller that changes it (a memo inside it) must not run
// concurrently with another user of the Value.
type Value[T any] struct {
	mu   sync.Mutex
	in   [][]byte
	v    T
	err  error
	kept bool
}

// Get returns parse's result for in: the kept one when in is, slice by slice, the bytes of the last parse;
// otherwise it calls parse, which reads in, and keeps its result with a copy of in (a caller changing its bytes
// afterwards does not change what is kept).
func (k *Value[T]) Get(parse func() (T, error), in ...[]byte) (T, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kept && same(k.in, in) {
		return k.v, k.err
	}
	k.kept = false
	v, err := parse()
	k.in = make([][]byte, len(in))
	for i, b := range in {
		k.in[i] = bytes.Clone(b)
	}
	k.v, k.err, k.kept = v, err, true
	return v, err
}

func same(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
