package model

import (
	"math"
	"strconv"
	"strings"
)

// MaxTokenCount is the largest token count ink accepts for a context
// window or a budget: far above any model's window or any run's spend,
// and far below where an int64 of tokens could overflow when summed.
const MaxTokenCount int64 = 1_000_000_000_000

// ParseTokens reads a token count as people write it: a whole number
// (1500), or a number with a k or M suffix (200k, 1.5M), in any case and
// with surrounding space. It reports false for anything else, and for a
// count below 1 or above MaxTokenCount; the caller says what was wrong in
// its own words (a flag, a profile field).
func ParseTokens(s string) (int64, bool) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return TokenCount(f * mult)
}

// TokenCount checks a count already read as a number (a YAML integer, a
// parsed string): it reports the count, rounded down, when it is at least
// 1 and at most MaxTokenCount.
func TokenCount(n float64) (int64, bool) {
	if !(n >= 1) || n > float64(MaxTokenCount) {
		return 0, false
	}
	return int64(n), true
}
