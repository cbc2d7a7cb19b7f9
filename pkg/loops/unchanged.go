package loops

import (
	"fmt"
	"sync"
)

// Skipping loops whose inputs did not change.
//
// A cert-rotation row (pkg/certs) reads nothing but what it watches (its footprint, its Reads, the turn's
// contract) and the clock, and its controller is level-driven: run again right after a run that succeeded, it
// finds its signer, bundle and target as it left them and writes nothing (library-go certrotation: signer.go,
// cabundle.go and target.go rewrite an object only when it is missing, expired past its refresh time, or does
// not match its inputs; the status reporter sets the row's own CertRotation_<name>_Degraded condition, which no
// other controller sets). Each pass after the one that made its certificates still ran every row and parsed its
// signer's key again (crypto.GetCAFromBytes: Go validates an RSA private key on every parse), about a third of a
// render's key parsing. library-go's static resource controller is alike: it reads and writes the objects of its
// manifests, of which a loop that is not concurrent declares every one (Watches). A loop marked Unchanged is
// skipped in a later pass of its phase while nothing it watches was written since its last run that succeeded
// ended: that run's outcome stands, and a run now would write nothing. The pass's trace line counts the loops
// skipped.

// Unchanged marks a loop that depends on nothing but what it watches (a concurrent loop's footprint and Reads,
// another loop's Watches) and the clock, and writes nothing when it runs again right after a run that succeeded
// (above): the runner skips it while nothing it watches changed since.
func (l Loop) Unchanged() Loop {
	if l.watch == nil {
		panic(fmt.Sprintf("loops: %s: Unchanged applies to a loop that declares what it watches", l.Name))
	}
	l.lastRun = &lastRun{}
	return l
}

// Watches declares every object a loop that is not concurrent reads and writes, besides its operator resource's
// status, in which it only sets conditions of its own (library-go's static resource controller: the objects of
// its manifests, and the operator's spec for the management state). A write of any other object fails, so that
// a declaration that misses (or misnames) an object the loop writes shows at once; what it only reads, the
// declaration must name right.
func (l Loop) Watches(objs ...Object) Loop {
	if l.turn != nil {
		panic(fmt.Sprintf("loops: %s: a concurrent loop watches its footprint and Reads", l.Name))
	}
	l.watch = map[Object]bool{}
	for _, o := range objs {
		l.watch[o] = true
	}
	return l
}

// lastRun is what the runner knows of an Unchanged loop's last run in the current phase run.
type lastRun struct {
	mu sync.Mutex
	// ok: the last run succeeded; end is the cluster's write count when it ended.
	ok  bool
	end int
}

// forget drops what the runner knew (a new phase run: the cluster may have changed outside the loops).
func (r *lastRun) forget() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ok = false
}

// ran records how the loop's run ended, once it ended (its turn's writes made).
func (r *lastRun) ran(c *Cluster, err error) {
	if r == nil {
		return
	}
	end := c.writeCount()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ok, r.end = err == nil, end
}

// candidate says whether the loop's last run succeeded: it may be skipped if nothing it watches changes.
func (r *lastRun) candidate() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok
}

// unchanged says whether the loop's last run succeeded and nothing in watch was written since it ended.
func (r *lastRun) unchanged(c *Cluster, watch map[Object]bool) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	ok, end := r.ok, r.end
	r.mu.Unlock()
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for o := range watch {
		if c.watchVersions[o] > end {
			return false
		}
	}
	return true
}
