package loops

// Memo lets a loop skip work that would repeat its last run: the loop reads the versions (Cluster.Version) of
// everything the work reads, the object it writes among them, and skips the work while they are those of a
// run that succeeded and wrote nothing. That run's result is then the result again, as long as the work depends
// on nothing else (no clock, no state of its own). The zero Memo holds nothing. A Memo belongs to one loop, whose
// runs never overlap: it is not safe for concurrent use.
type Memo struct {
	versions []int
	kept     bool
}

// Versions returns the versions of objs, in order.
func (c *Cluster) Versions(objs ...Object) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, len(objs))
	for i, o := range objs {
		out[i] = c.versions[o]
	}
	return out
}

// Same says whether versions are those Keep kept.
func (m *Memo) Same(versions []int) bool {
	if !m.kept || len(versions) != len(m.versions) {
		return false
	}
	for i, v := range versions {
		if m.versions[i] != v {
			return false
		}
	}
	return true
}

// Keep records versions as read before a run that succeeded and wrote nothing; Forget drops them (a run that
// failed or wrote). A loop whose run is idempotent (run again right after itself, with nothing else written in
// between, it writes nothing, as resourceapply.ApplySecret of an Opaque secret does) may instead keep the versions
// as read after a run that succeeded, whether or not it wrote.
func (m *Memo) Keep(versions []int) { m.versions, m.kept = versions, true }

// Forget drops what Keep kept.
func (m *Memo) Forget() { m.versions, m.kept = nil, false }
