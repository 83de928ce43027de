package vault

import "time"

// Backoff spaces the asks for a secret that is absent or unanswered:
// Min doubling up to Max (defaults 1 s and 1 min, SPEC §4.2).
type Backoff struct {
	Min, Max time.Duration
}

// Next is the wait before ask number attempt+1 (attempt 0 waits Min).
func (b Backoff) Next(attempt int) time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = time.Second
	}
	if hi <= 0 {
		hi = time.Minute
	}
	if hi < lo {
		hi = lo
	}
	d := lo
	for i := 0; i < attempt; i++ {
		if d > hi/2 {
			return hi
		}
		d *= 2
	}
	return d
}
