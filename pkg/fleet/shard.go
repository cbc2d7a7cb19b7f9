package fleet

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Shard is one part of a site list: shard Index of Count (0 <= Index < Count).
type Shard struct{ Index, Count int }

// All is the whole list.
var All = Shard{Index: 0, Count: 1}

// ParseShard parses "i/n" (i from 0, as a Kubernetes Indexed Job's JOB_COMPLETION_INDEX).
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return All, nil
	}
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("%q: want i/n, e.g. 0/4", s)
	}
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	if err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("%q: want i/n with integers, e.g. 0/4", s)
	}
	if cnt < 1 || idx < 0 || idx >= cnt {
		return Shard{}, fmt.Errorf("%q: want 0 <= i < n and n >= 1", s)
	}
	return Shard{Index: idx, Count: cnt}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Of returns the shard's sites: the k-th site of the list sorted by name belongs to shard k mod n. The
// partition depends only on the site names, so every shard of one list agrees on it, and shard sizes differ by
// at most one.
func (s Shard) Of(sites []Site) []Site {
	sorted := sortedByName(sites)
	var out []Site
	for k, site := range sorted {
		if k%s.Count == s.Index {
			out = append(out, site)
		}
	}
	return out
}

func sortedByName(sites []Site) []Site {
	out := append([]Site(nil), sites...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
