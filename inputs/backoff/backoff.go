// Package backoff is the one retry delay every input uses: a wait doubling
// from a minimum up to a cap (the bus's reconnects and watcher restarts, the
// vault's asks, templates archive fetches), with optional jitter.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Doubling is Min doubling up to Max: Next(0) is Min, each attempt after
// doubles it, and none exceeds Max. Zero fields take 1 s and 1 min (the
// vault's backoff of SPEC §4.2); a Max below Min is taken as Min.
type Doubling struct {
	Min, Max time.Duration
}

// Next is the wait before try number attempt+1 (attempt 0 waits Min).
func (b Doubling) Next(attempt int) time.Duration {
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

// Counter is a Doubling that counts its own attempts.
type Counter struct {
	Doubling
	attempt int
}

// Next is the wait before the next try; each call doubles it up to Max.
func (c *Counter) Next() time.Duration {
	d := c.Doubling.Next(c.attempt)
	c.attempt++
	return d
}

// Reset starts again from Min.
func (c *Counter) Reset() { c.attempt = 0 }

// Jitter spreads d over [0.8·d, 1.2·d) so that nodes do not retry in step.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d*4/5 + rand.N(d*2/5+1)
}
