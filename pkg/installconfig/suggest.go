package installconfig

import (
	"strings"
	"unicode/utf8"
)

// Suggest is the one of known that name most likely misspells, for a "did you mean" (an install-config's unknown
// field, and the command line's unknown flags and commands: one rule for all): the same but for case, else the
// nearest within two edits (one for a name of up to five characters); "" when none is near. Ties go to the first
// in known.
func Suggest(name string, known []string) string {
	if name == "" {
		return ""
	}
	lower := strings.ToLower(name)
	best, bestDist := "", -1
	for _, k := range known {
		kl := strings.ToLower(k)
		if kl == lower {
			return k
		}
		limit := 2
		if utf8.RuneCountInString(k) <= 5 {
			limit = 1
		}
		if d := editDistance(lower, kl); d <= limit && (bestDist < 0 || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
