package bus

import (
	"sync"
	"time"
)

// WarnLimit lets Burst warnings through every Every, and counts those it
// holds back: for warnings about what another party put on the bus (keys
// out of shape in its bucket), which it may do a thousand times over, and
// again at every read of the bucket. Unbounded, the party filled the
// node's log, and journald, once its rate limit was reached, dropped the
// client's own lines with them. The zero value lets every warning
// through; safe for concurrent use.
type WarnLimit struct {
	Burst int
	Every time.Duration
	Now   func() time.Time // time.Now when nil

	mu      sync.Mutex
	start   time.Time // the current period began
	n       int       // warnings let through in it
	dropped int       // held back since the last let through
}

// Allow says whether a warning may be logged now and, when it may, how
// many were held back before it (to be said with it).
func (l *WarnLimit) Allow() (ok bool, heldBack int) {
	if l.Burst <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	if t := now(); l.start.IsZero() || t.Sub(l.start) >= l.Every {
		l.start, l.n = t, 0
	}
	if l.n >= l.Burst {
		l.dropped++
		return false, 0
	}
	l.n++
	heldBack, l.dropped = l.dropped, 0
	return true, heldBack
}

// WarnLimits is a WarnLimit of Burst a Every for each name (a bucket):
// one name's flood of warnings hides no other's. Not safe for goroutines.
type WarnLimits struct {
	Burst int
	Every time.Duration
	by    map[string]*WarnLimit
}

// Allow is name's WarnLimit.Allow.
func (ls *WarnLimits) Allow(name string) (ok bool, heldBack int) {
	l := ls.by[name]
	if l == nil {
		if ls.by == nil {
			ls.by = map[string]*WarnLimit{}
		}
		l = &WarnLimit{Burst: ls.Burst, Every: ls.Every}
		ls.by[name] = l
	}
	return l.Allow()
}

// TakeHeld returns how many warnings were held back since the last one let
// through, and forgets them (the next one let through says only those held
// after): for saying the count when no next warning may come (the end of
// a bucket's read).
func (l *WarnLimit) TakeHeld() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.dropped
	l.dropped = 0
	return n
}

// TakeHeld is name's WarnLimit.TakeHeld (0 for a name never warned of).
func (ls *WarnLimits) TakeHeld(name string) int {
	if l := ls.by[name]; l != nil {
		return l.TakeHeld()
	}
	return 0
}
