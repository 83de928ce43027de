package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// pagesKeptFor is how long the sweep a page 0 answered serves the pages
// after it, so that every page of one answer is of one sweep.
const pagesKeptFor = time.Minute

// sweepsKept bounds how many paged sweeps the cache keeps for the pages
// after the first: the params are the requester's to choose (node, module,
// stood_after), and a sweep of a large mesh is tens of MB.
const sweepsKept = 8

// sweepCache keeps sweeps: the metrics' latest (get), and, for the pages
// after the first, the latest sweep of each params whose reply has more
// than one page (page), at most sweepsKept of them and none older than
// pagesKeptFor. One sweep is made at a time: a sweep of a large mesh reads
// every key of four buckets.
type sweepCache struct {
	js  jetstream.JetStream
	now func() time.Time
	mu  sync.Mutex
	// metrics is the latest sweep get made, of metricsP; it is kept apart
	// from the paged ones, so that no run of requests evicts it (the
	// metrics would sweep again at every scrape).
	metrics  *sweepResult
	metricsP SweepParams
	paged    map[SweepParams]*sweepResult
	// started counts the sweeps page has begun (read without the lock);
	// last is the latest, of lastP, the lastSeq'th: a first page asked
	// before it began is answered from it (page).
	started atomic.Uint64
	waiting atomic.Int32 // requests in page
	last    *sweepResult
	lastP   SweepParams
	lastSeq uint64
}

func newSweepCache(js jetstream.JetStream) *sweepCache {
	return &sweepCache{js: js, now: time.Now, paged: map[SweepParams]*sweepResult{}}
}

// errBusAway is why no sweep is made while the server's connection is
// not connected (the bus away, or being reconnected to).
var errBusAway = errors.New("the bus is not connected")

// get returns a sweep of p no older than maxAge, made now when there is
// none (maxAge 0: always made now). It keeps one sweep, the latest it
// made: the metrics ask it for one params only.
func (c *sweepCache) get(ctx context.Context, p SweepParams, maxAge time.Duration) (*sweepResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.prune(now)
	if r := c.metrics; r != nil && c.metricsP == p && maxAge > 0 && now.Sub(r.at) <= maxAge {
		return r, nil
	}
	if nc := c.js.Conn(); nc != nil && !nc.IsConnected() {
		// Its reads would each wait out readTimeout for a bus that is
		// away: a scrape would outlast Prometheus's scrape timeout.
		return nil, errBusAway
	}
	r, err := sweep(ctx, c.js, p, now)
	if err != nil {
		return nil, err
	}
	c.metrics, c.metricsP = r, p
	return r, nil
}

// page returns page k of a sweep of p cut at limit bytes: page 0 of a
// sweep made now, a later page of the sweep that answered page 0 while it
// is kept (else of a sweep made now). A sweep is kept for the pages after
// the first only when its reply has more than one page.
//
// Requests of one params that come together share a sweep: a first page
// is answered from the latest sweep of its params when that sweep began
// after the request came (made "now" for it), as each request waiting
// while another's sweep ran finds the next one begun after it. Fifty at
// once were answered one sweep each, the last after 22 s (an outside
// audit); now in two sweeps.
func (c *sweepCache) page(ctx context.Context, p SweepParams, k, limit int) ([]byte, error) {
	asked := c.started.Load()
	c.waiting.Add(1)
	c.mu.Lock()
	defer func() {
		if c.waiting.Add(-1) == 0 {
			c.last = nil // it answers only requests that came before it began: none is left
		}
		c.mu.Unlock()
	}()
	now := c.now()
	c.prune(now)
	if r, ok := c.paged[p]; ok && k > 0 {
		b, _ := sweepPage(r.reply, k, limit)
		return b, nil
	}
	if r := c.last; k == 0 && r != nil && c.lastP == p && c.lastSeq > asked {
		b, _ := sweepPage(r.reply, k, limit)
		return b, nil
	}
	seq := c.started.Add(1)
	r, err := sweep(ctx, c.js, p, now)
	if err != nil {
		return nil, err
	}
	c.last, c.lastP, c.lastSeq = &sweepResult{reply: r.reply, at: r.at}, p, seq
	b, pages := sweepPage(r.reply, k, limit)
	if pages > 1 {
		c.keep(p, r)
	} else {
		delete(c.paged, p) // an older sweep of p must not answer its later pages
	}
	return b, nil
}

// keep keeps r, of p, for the pages after the first: only its reply (the
// metrics' counts are not needed), in place of any older sweep of p, the
// oldest other dropped while there are sweepsKept already.
func (c *sweepCache) keep(p SweepParams, r *sweepResult) {
	delete(c.paged, p)
	dropOldest(c.paged, sweepsKept-1, func(o *sweepResult) time.Time { return o.at })
	c.paged[p] = &sweepResult{reply: r.reply, at: r.at}
}

// prune drops the paged sweeps older than pagesKeptFor at now.
func (c *sweepCache) prune(now time.Time) {
	dropOlder(c.paged, now, func(r *sweepResult) time.Time { return r.at })
}

// answerSweep answers what sweep: page 0 from a sweep made now, the pages
// after it from the same sweep while it is kept (else from a new one).
func (v *verb) answerSweep(ctx context.Context, req Request, limit int) ([]byte, error) {
	if req.Collection != "" || req.Contributor != "" {
		return nil, fmt.Errorf("sweep is narrowed by node and module only")
	}
	p := SweepParams{Node: req.Node, Module: req.Module}
	var err error
	if p.StoodAfter, err = ParseStoodAfter(req.StoodAfter); err != nil {
		return nil, err
	}
	return v.sweeps.page(ctx, p, req.Page, limit)
}

// ParseStoodAfter reads a stood_after (empty: DefaultStoodAfter); it must
// be a positive Go duration.
func ParseStoodAfter(s string) (time.Duration, error) {
	if s == "" {
		s = DefaultStoodAfter
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("stood_after %s is not a duration%s", quoted(s), durationHint(s))
	}
	if d <= 0 {
		return 0, fmt.Errorf("stood_after %s is not positive", quoted(s))
	}
	return d, nil
}

// sweepPage is one page of the reply, and how many pages it has: the head
// (what, at, stood_after, summary, missing_buckets, unreadable_buckets,
// nothing_named, no_plan) on every page,
// findings, orphans, no_report then failed_modules paged as the other answers are.
func sweepPage(r SweepReply, page, limit int) ([]byte, int) {
	head := plainJSON(struct {
		What              string   `json:"what"`
		At                string   `json:"at"`
		StoodAfter        string   `json:"stood_after"`
		Summary           Summary  `json:"summary"`
		MissingBuckets    []string `json:"missing_buckets,omitempty"`
		UnreadableBuckets []string `json:"unreadable_buckets,omitempty"`
		NothingNamed      string   `json:"nothing_named,omitempty"`
		NoPlan            string   `json:"no_plan,omitempty"`
	}{r.What, r.At, r.StoodAfter, r.Summary, r.MissingBuckets, r.UnreadableBuckets, r.NothingNamed, r.NoPlan})
	head = head[1 : len(head)-1]
	lists := []itemList{{"findings", nil}, {"orphans", nil}, {"no_report", nil}, {"failed_modules", nil}}
	room := limit - listsOverhead(head, lists)
	for _, f := range r.Findings {
		lists[0].items = append(lists[0].items, findingParts(f, room)...)
	}
	for _, o := range r.Orphans {
		lists[1].items = append(lists[1].items, plainJSON(o))
	}
	for _, m := range r.NoReport {
		lists[2].items = append(lists[2].items, plainJSON(m))
	}
	for _, m := range r.FailedModules {
		m.Reason = spec.Cut(m.Reason, room/4) // a client's long reason never leaves the mesh without a sweep
		lists[3].items = append(lists[3].items, plainJSON(m))
	}
	return pageListsOf(head, page, lists, limit)
}

// findingParts is f as JSON items of at most room bytes each: one, or,
// when its needs do not fit in one, as many parts as they take, each after
// the first Continued (paged as a list's items are: no need is left out).
func findingParts(f Finding, room int) [][]byte {
	whole := f
	for _, s := range []*string{&f.Why, &f.Name, &f.Key} {
		*s = spec.Cut(*s, room/4) // as findingJSON cuts them, before the parts are measured
	}
	if b := plainJSON(f); len(b) <= room || len(f.Needs) <= 1 {
		return [][]byte{findingJSON(whole, room)}
	}
	var parts [][]byte
	rest := f.Needs
	for len(rest) > 0 {
		p := f
		p.Continued = len(parts) > 0
		p.Needs = rest
		b := plainJSON(p)
		n := len(rest)
		for len(b) > room && n > 1 {
			n = max(min(n-1, n*room/len(b)*9/10), 1)
			p.Needs = rest[:n]
			b = plainJSON(p)
		}
		if len(b) > room { // not even one need fits beside the text: as findingJSON says it
			b = findingJSON(p, room)
		}
		parts = append(parts, b)
		rest = rest[n:]
	}
	return parts
}

// findingJSON is f as JSON in at most room bytes: a finding whose needs
// would not fit lists as many as fit and says how many it left out.
func findingJSON(f Finding, room int) []byte {
	// A why, name or key from the bus longer than a quarter of a page is
	// cut first, so that one client's long why neither leaves the mesh
	// without a sweep nor pushes the needs it holds out of the finding.
	for _, s := range []*string{&f.Why, &f.Name, &f.Key} {
		*s = spec.Cut(*s, room/4)
	}
	b := plainJSON(f)
	for len(b) > room && len(f.Needs) > 0 {
		keep := len(f.Needs) * room / len(b) * 9 / 10
		if keep >= len(f.Needs) {
			keep = len(f.Needs) - 1
		}
		f.NeedsLeftOut += len(f.Needs) - keep
		f.Needs = f.Needs[:keep]
		b = plainJSON(f)
	}
	// Still too large with no need listed (text escaped into many more
	// bytes): cut again, so that no reply exceeds the bus's payload.
	for _, s := range []*string{&f.Why, &f.Name, &f.Key} {
		if over := len(b) - room; over > 0 {
			*s = spec.Cut(*s, max(len(*s)-over-len("… (cut: 0000000000 bytes in all)"), 0))
			b = plainJSON(f)
		}
	}
	return b
}

var (
	// goDuration is the syntax time.ParseDuration reads: a duration of it
	// that does not parse is out of range.
	goDuration = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)
	// withDays is a duration written with days, which Go's have not.
	withDays   = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h|d))+$`)
	bareNumber = regexp.MustCompile(`^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)
)

// durationHint says what is wrong with s, which time.ParseDuration refused,
// when it is one of the usual slips.
func durationHint(s string) string {
	switch {
	case goDuration.MatchString(s):
		return ": too long (at most 2562047h)"
	case withDays.MatchString(s):
		return ": Go durations have no unit d, write a day as 24h (e.g. 48h for 2d)"
	case bareNumber.MatchString(s):
		return ": it has no unit (e.g. 10m, 90s, 2h)"
	}
	return " (e.g. 10m, 90s, 2h)"
}
