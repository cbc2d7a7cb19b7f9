package main

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// durationValue is a duration flag (pflag.Value) that takes what time.ParseDuration takes and days as a person
// writes them: "30d" is 720h, "1.5d" 36h, "1d12h" 36h. Certificates live days and years, and "720h" is not how anyone
// counts a month.
type durationValue struct{ d *time.Duration }

// durationHint is what a bad duration says to write instead.
const durationHint = "use 720h or 30d (a d is 24h; also s, m, h, as in 1d12h or 90m)"

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// String is the duration as the help shows a default: "0" (none, which pflag does not show), else as Go says it.
func (v durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return "0"
	}
	return v.d.String()
}

func (durationValue) Type() string { return "duration" }

// days is a number of days at the start of a duration: "30d", "1.5d12h".
var days = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)d(.*)$`)

// parseDuration is time.ParseDuration with days ("d", 24 hours) as its largest unit, first.
func parseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	bad := errors.New("not a duration: " + durationHint)
	sign, rest := 1.0, s
	if r, ok := strings.CutPrefix(s, "-"); ok {
		sign, rest = -1, r
	} else if r, ok := strings.CutPrefix(s, "+"); ok {
		rest = r
	}
	m := days.FindStringSubmatch(rest)
	if m == nil {
		return 0, bad
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, bad
	}
	var more time.Duration
	if m[2] != "" {
		if strings.ContainsAny(m[2][:1], "+-") {
			return 0, bad
		}
		if more, err = time.ParseDuration(m[2]); err != nil {
			return 0, bad
		}
	}
	total := n*float64(24*time.Hour) + float64(more)
	if total >= math.MaxInt64 {
		return 0, errors.New("too long: a duration is at most 106751d (292 years)")
	}
	return time.Duration(sign * total), nil
}
