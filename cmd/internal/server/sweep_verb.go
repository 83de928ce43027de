package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// pagesKeptFor is how long the sweep a page 0 answered serves the pages
// after it, so that every page of one answer is of one sweep.
const pagesKeptFor = time.Minute

// sweepCache keeps the latest sweep of each params, for the pages after
// the first and for the metrics. One sweep is made at a time: a sweep of a
// large mesh reads every key of four buckets.
type sweepCache struct {
	js   jetstream.JetStream
	now  func() time.Time
	mu   sync.Mutex
	last map[SweepParams]*sweepResult
}

func newSweepCache(js jetstream.JetStream) *sweepCache {
	return &sweepCache{js: js, now: time.Now, last: map[SweepParams]*sweepResult{}}
}

// get returns a sweep of p no older than maxAge, made now when there is
// none (maxAge 0: always made now).
func (c *sweepCache) get(ctx context.Context, p SweepParams, maxAge time.Duration) (*sweepResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, r := range c.last {
		if now.Sub(r.at) > max(pagesKeptFor, maxAge) {
			delete(c.last, k)
		}
	}
	if r, ok := c.last[p]; ok && maxAge > 0 && now.Sub(r.at) <= maxAge {
		return r, nil
	}
	r, err := sweep(ctx, c.js, p, now)
	if err != nil {
		return nil, err
	}
	c.last[p] = r
	return r, nil
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
	maxAge := time.Duration(0)
	if req.Page > 0 {
		maxAge = pagesKeptFor
	}
	r, err := v.sweeps.get(ctx, p, maxAge)
	if err != nil {
		return nil, err
	}
	return sweepPage(r.reply, req.Page, limit), nil
}

// ParseStoodAfter reads a stood_after (empty: DefaultStoodAfter); it must
// be a positive Go duration.
func ParseStoodAfter(s string) (time.Duration, error) {
	if s == "" {
		s = DefaultStoodAfter
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("stood_after %q is not a duration (e.g. 10m)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("stood_after %q is not positive", s)
	}
	return d, nil
}

// sweepPage is one page of the reply: the head (what, at, stood_after,
// summary, missing_buckets) on every page, findings then orphans paged as
// the other answers are.
func sweepPage(r SweepReply, page, limit int) []byte {
	head := plainJSON(struct {
		What           string   `json:"what"`
		At             string   `json:"at"`
		StoodAfter     string   `json:"stood_after"`
		Summary        Summary  `json:"summary"`
		MissingBuckets []string `json:"missing_buckets,omitempty"`
	}{r.What, r.At, r.StoodAfter, r.Summary, r.MissingBuckets})
	head = head[1 : len(head)-1]
	lists := []itemList{{"findings", nil}, {"orphans", nil}}
	room := limit - listsOverhead(head, lists)
	for _, f := range r.Findings {
		lists[0].items = append(lists[0].items, findingJSON(f, room))
	}
	for _, o := range r.Orphans {
		lists[1].items = append(lists[1].items, plainJSON(o))
	}
	return pageLists(head, page, lists, limit)
}

// findingJSON is f as JSON in at most room bytes: a finding whose needs
// would not fit lists as many as fit and says how many it left out.
func findingJSON(f Finding, room int) []byte {
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
	return b
}
