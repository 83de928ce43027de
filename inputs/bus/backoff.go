package bus

import (
	"math/rand/v2"
	"time"
)

// backoff is a delay doubling from min up to max.
type backoff struct {
	min, max time.Duration
	attempt  int
}

// next is the wait before the next try; each call doubles it up to max.
func (b *backoff) next() time.Duration {
	d := doubling(b.min, b.max, b.attempt)
	b.attempt++
	return d
}

// reset starts again from min.
func (b *backoff) reset() { b.attempt = 0 }

// doubling is min·2^attempt capped at max.
func doubling(min, max time.Duration, attempt int) time.Duration {
	d := min
	for i := 0; i < attempt; i++ {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	if d > max {
		return max
	}
	return d
}

// jitter spreads d over [0.8·d, 1.2·d) so that nodes do not retry in step.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d*4/5 + rand.N(d*2/5+1)
}
