package server

import (
	"sync"
	"time"
)

// answersKept bounds how many paged bucket answers are kept for the pages
// after the first: a needs answer of a large mesh is tens of MB.
const answersKept = 4

// keptAnswers keeps what page 0 of a paged bucket answer read (its entries
// and out_of_shape, already JSON), so that every page of one answer is of
// one read of the bucket, as a sweep's pages are of one sweep: a key
// deleted or written between two page requests no longer moves the others
// from one page to the next (a key there all along was seen twice or not
// at all). Kept at most pagesKeptFor, answersKept of them, keyed by the
// request (its page aside) and the page size.
type keptAnswers struct {
	mu   sync.Mutex
	now  func() time.Time
	kept map[answerKey]*keptAnswer
}

type answerKey struct {
	req   Request // Page zero
	limit int
}

type keptAnswer struct {
	entries, outOfShape [][]byte
	at                  time.Time
}

func newKeptAnswers() *keptAnswers {
	return &keptAnswers{now: time.Now, kept: map[answerKey]*keptAnswer{}}
}

// get is the answer page 0 of req read, while it is kept.
func (k *keptAnswers) get(req Request, limit int) (*keptAnswer, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.prune()
	req.Page = 0
	a, ok := k.kept[answerKey{req, limit}]
	return a, ok
}

// keep keeps a, read for page 0 of req, when it has more than one page
// (pages); else it forgets an older answer of req, which must not answer
// a later page of this one.
func (k *keptAnswers) keep(req Request, limit int, a *keptAnswer, pages int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.prune()
	req.Page = 0
	key := answerKey{req, limit}
	delete(k.kept, key)
	if pages <= 1 {
		return
	}
	dropOldest(k.kept, answersKept-1, func(o *keptAnswer) time.Time { return o.at })
	a.at = k.now()
	k.kept[key] = a
}

// prune drops the answers older than pagesKeptFor.
func (k *keptAnswers) prune() {
	dropOlder(k.kept, k.now(), func(a *keptAnswer) time.Time { return a.at })
}

// dropOlder drops the entries of kept older than pagesKeptFor at now.
func dropOlder[K comparable, V any](kept map[K]V, now time.Time, at func(V) time.Time) {
	for q, o := range kept {
		if now.Sub(at(o)) > pagesKeptFor {
			delete(kept, q)
		}
	}
}

// dropOldest drops the oldest entries of kept (by at) until it holds at
// most n: the pages kept, of answers and of sweeps, are bounded so, as
// dropOlder bounds their age.
func dropOldest[K comparable, V any](kept map[K]V, n int, at func(V) time.Time) {
	for len(kept) > n {
		var oldest K
		var t time.Time
		for q, o := range kept {
			if t.IsZero() || at(o).Before(t) {
				oldest, t = q, at(o)
			}
		}
		delete(kept, oldest)
	}
}
