package vault

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/novox/mesh-provisioner/inputs/backoff"
)

// Answer is one ask's outcome as an Asker delivers it.
type Answer struct {
	Name   string
	Result Result
	At     time.Time // when the ask was made
	// Changed: the outcome is not the last one delivered for Name (or
	// there was none), so that a log says changes only.
	Changed bool
}

// Asker asks the vault for names and asks again on its own (SPEC §4.2):
// an absent, unanswered or failed ask with Backoff, a refused one after
// RefusedRetry, a sealed one never (until Fresh). Asks are numbered: an
// answer to an ask that a newer one overtook, or to a name no longer
// retained, is dropped. Answers go out on Answers one name at a time (a
// name's next ask waits for its answer to be queued there; Asking says
// yes until it is taken). Safe for concurrent use.
type Asker struct {
	ctx     context.Context
	client  *Client
	backoff backoff.Doubling
	refused time.Duration
	out     chan Answer

	mu      sync.Mutex
	gens    uint64
	asks    map[string]*askState // every name asked and retained
	pending map[string]*askState // those under way or to be asked again
	// Retain looks at every name not pending (answered for good: sealed)
	// once every forgetEvery (tests set it), or when a sample says so.
	forgetEvery time.Duration
	forgotAt    time.Time // when Retain last looked at every name
	// unanswered: an ask got no answer from the vault (silent: no reply,
	// no vault listening) and no other ask was answered since it was
	// sent: the vault is away, and its next answer says it is back
	// (vaultBack). heard is when the vault last replied to any ask.
	unanswered bool
	heard      time.Time
}

// Retain looks at every name answered for good when forgetEvery passed
// since it last did, or when one of forgetSample of them is no longer kept.
const (
	forgetEvery  = time.Second
	forgetSample = 8
)

// askState is what the Asker knows of asking for one name.
type askState struct {
	attempt    int
	credential string      // the credential form its requests carry
	inflight   bool        // an ask is under way or its answer not yet taken
	again      bool        // Fresh was called while inflight
	superseded bool        // the last answer was not delivered: again came while it was asked
	gen        uint64      // the ask under way or last made
	last       Outcome     // the last answer delivered
	answered   bool        // last holds an answer
	wasSilent  bool        // before the last answer, none or a silence
	spread     int         // asks set for a moment within a spread (askWithin) still to come
	timer      *time.Timer // the next ask, when one is due
	// written: when an assignment the vault judges the name by was last
	// written while an ask of it was under way (AskRefusedOf, AskRefused);
	// a refusal of an ask made before it is not taken.
	written time.Time
}

// NewAsker makes an Asker that asks through c until ctx ends.
func NewAsker(ctx context.Context, c *Client, b backoff.Doubling, refusedRetry time.Duration) *Asker {
	if refusedRetry <= 0 {
		refusedRetry = RefusedRetry
	}
	return &Asker{ctx: ctx, client: c, backoff: b, refused: refusedRetry, out: make(chan Answer, 64),
		asks: map[string]*askState{}, pending: map[string]*askState{}, forgetEvery: forgetEvery}
}

// Answers is where every answer goes; read it promptly.
func (a *Asker) Answers() <-chan Answer { return a.out }

// Ask asks the vault for name now, unless an ask of it is under way (then
// again once it is answered if credential moved) or the vault answered it
// and its next ask is set (its backoff, the refused retry): a file made
// anew that reads a name asked already (a module's plan moved to another
// templates archive rebuilds its files) asks nothing more, where it asked
// again at once, a second ask beside the one AskRefusedOf makes as the
// plan is written (an outside audit). credential is the form a provisions
// entry's request carries ("" for other names); every later ask of name
// (again, Fresh) carries it too, and one that moved is asked at once.
func (a *Asker) Ask(name, credential string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.asks[name]
	if st == nil {
		st = &askState{}
		a.asks[name] = st
	}
	moved := st.credential != credential
	st.credential = credential
	switch {
	case st.inflight:
		st.again = st.again || moved
	case moved || !st.answered || st.timer == nil:
		a.ask(name, st)
	}
}

// Fresh asks again now, as for a new name (the vault said it changed); an
// ask under way is followed by another once answered. credential is the
// form the name's requests carry, as for Ask: a name the Asker does not
// know yet (the vault said it changed in the batch whose plan named it,
// before that batch's Ask) is asked with its form from the first, not
// without one. It says whether an ask was started or newly set to follow
// (false when one already was: a storm of events for a name costs one
// ask at a time, and its caller need not log each).
func (a *Asker) Fresh(name, credential string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.asks[name]
	if st == nil {
		st = &askState{}
		a.asks[name] = st
	}
	st.credential = credential
	if st.inflight {
		was := st.again
		st.again = true
		return !was
	}
	st.attempt = 0
	a.ask(name, st)
	return true
}

// Reask asks again for every name asked and retained that keep says is
// still read, each at a random moment within spread, as Fresh does: the
// bus came back, and a secret-changed published while it was away is lost
// (SPEC §4.2 r2). The jitter keeps a mesh of clients reconnecting at once
// from asking the vault all at once. A name dropped or asked anew before
// its moment is not asked again by it.
func (a *Asker) Reask(spread time.Duration, keep func(name string) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Every name is asked again within spread: a reply to the first is not
	// the vault back for the others (vaultBack would ask them all at once,
	// the storm the spread is for).
	a.unanswered = false
	for name, st := range a.asks {
		if keep(name) {
			a.askWithin(name, st, spread)
		}
	}
}

// askWithin asks name again at a random moment within spread, as Fresh
// does, unless it is dropped or asked anew before then; a.mu is held.
// Until then vaultBack leaves it to its moment.
func (a *Asker) askWithin(name string, st *askState, spread time.Duration) {
	var after time.Duration
	if spread > 0 {
		after = rand.N(spread)
	}
	gen := st.gen
	st.spread++
	time.AfterFunc(after, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		st.spread--
		if a.ctx.Err() != nil || a.asks[name] != st || st.gen != gen {
			return // dropped, or asked anew meanwhile
		}
		if st.inflight {
			st.again = true
			return
		}
		st.attempt = 0
		a.ask(name, st)
	})
}

// Retain forgets every name keep refuses: no more asks, an answer still to
// come is dropped, and nothing of it is remembered (a name kept again later
// is asked as a new one). Names under way or due are looked at on every
// call. Names answered for good (sealed: most of those held) are all looked
// at only when keep refuses one of a few of them taken at random, or when
// a second passed since they last were (the first call looks at once):
// Retain runs after every batch, and costs little when nothing moved.
//
// keep must say yes to every name the caller will read again without
// asking for it: one whose value it holds while no file reads it for the
// moment (a module between two templates archives). A name forgotten is not
// asked again by Reask, and the value held would then miss a rotation the
// vault announced while the bus was away.
func (a *Asker) Retain(keep func(name string) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, st := range a.pending {
		if !keep(name) {
			a.forget(name, st)
		}
	}
	now := time.Now()
	due := now.Sub(a.forgotAt) >= a.forgetEvery
	if !due {
		// A few names, at random (where a map's range starts): when
		// modules left, some of theirs are likely among them.
		n := 0
		for name := range a.asks {
			if n++; n > forgetSample {
				break
			}
			if !keep(name) {
				due = true
				break
			}
		}
	}
	if !due {
		return
	}
	a.forgotAt = now
	for name, st := range a.asks {
		if !keep(name) {
			a.forget(name, st)
		}
	}
}

// forget drops name; a.mu is held.
func (a *Asker) forget(name string, st *askState) {
	if st.timer != nil {
		st.timer.Stop()
	}
	delete(a.pending, name)
	delete(a.asks, name)
}

// ask starts an ask of name numbered anew; a.mu is held.
func (a *Asker) ask(name string, st *askState) {
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
	a.gens++
	st.gen, st.inflight = a.gens, true
	a.pending[name] = st
	go a.run(name, st, st.gen)
}

// current says whether st is still name's state and gen its latest ask;
// a.mu is held.
func (a *Asker) current(name string, st *askState, gen uint64) bool {
	return a.asks[name] == st && st.gen == gen
}

// run makes ask gen, delivers its answer, then schedules the next ask.
//
// The answer is queued and the ask let go in one hold of a.mu when
// Answers has room, so Asking, which looks at both under a.mu, never
// finds it neither under way nor queued. When Answers is full the ask
// stays under way until its answer is queued (the send waits outside
// a.mu: Asking and the rest must not wait for the daemon to take one).
func (a *Asker) run(name string, st *askState, gen uint64) {
	at := time.Now()
	a.mu.Lock()
	credential := st.credential
	a.mu.Unlock()
	res := a.client.AskCredential(a.ctx, name, moduleOf(name), credential)
	a.mu.Lock()
	if !a.current(name, st, gen) {
		a.mu.Unlock()
		return
	}
	if res.Outcome == Refused && at.Before(st.written) {
		// Asked before the module's assignment was written again: the
		// vault may have judged it by the assignments before that write.
		// Not taken; asked again now.
		st.again, st.attempt = false, 0
		a.ask(name, st)
		a.mu.Unlock()
		return
	}
	if st.again && res.Replied && !st.superseded {
		// The vault said the name changed (Fresh), or its credential moved
		// (Ask), while this ask was under way: the answer may say the value
		// before the change. Not delivered: asked again now, so that a
		// change writes its files once (an outside audit: the superseded
		// answer was applied first, its files written and their program
		// restarted, then again 20 ms later). Once in a row, so that a name
		// changing faster than the vault answers still gets a value.
		st.again, st.attempt, st.superseded = false, 0, true
		a.ask(name, st)
		a.mu.Unlock()
		return
	}
	st.superseded = false
	changed := !st.answered || st.last != res.Outcome
	st.wasSilent = !st.answered || st.last == Silent
	st.last, st.answered = res.Outcome, true
	an := Answer{Name: name, Result: res, At: at, Changed: changed}
	select {
	case a.out <- an:
		defer a.mu.Unlock()
		a.delivered(name, st, gen, res, at)
		return
	default:
	}
	a.mu.Unlock()
	select {
	case a.out <- an:
	case <-a.ctx.Done():
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.current(name, st, gen) {
		return // retained no more while its answer was on the way
	}
	a.delivered(name, st, gen, res, at)
}

// delivered lets go of ask gen (sent at), its answer res queued, and
// schedules the next ask of name; a.mu is held.
//
// Only a vault that answered nothing since an ask was sent is taken for
// away, and only a reply to a name it had left silent (or a new one) says
// it is back:
// one that answers other names and leaves this one silent, or replies
// with what cannot be read (a short box, an unknown status), is there,
// and the name follows its own backoff. Before, any answer after such a
// name re-asked it at once with its backoff reset: 60 asks in 7 minutes
// where SPEC §4.2's 1 s doubling to 1 min makes 12 (an outside audit);
// and on a quiet node, where the silent name's 5 s went by with no other
// ask under way, the next answer to another name (asked once a minute)
// did the same, 5-6 asks a minute where the backoff makes one (a second
// audit).
func (a *Asker) delivered(name string, st *askState, gen uint64, res Result, at time.Time) {
	st.inflight = false
	o := res.Outcome
	switch {
	case !res.Replied:
		if o == Silent && !a.heard.After(at) {
			a.unanswered = true
		}
	default:
		a.heard = time.Now()
		if a.unanswered && st.wasSilent {
			a.vaultBack(name)
		}
		a.unanswered = false
	}
	var after time.Duration
	switch o {
	case Sealed:
		st.attempt = 0
	case Refused:
		after = a.refused
	default:
		after = a.backoff.Next(st.attempt)
		st.attempt++
	}
	switch {
	case st.again:
		st.again, st.attempt = false, 0
		a.ask(name, st)
	case after > 0:
		st.timer = time.AfterFunc(after, func() { a.retry(name, st, gen) })
	default:
		delete(a.pending, name)
	}
}

// vaultBack asks again at once every name but name (whose answer is the
// vault's first since asks went unanswered) that waits on its backoff
// after an ask the vault did not answer; a.mu is held. The vault is back:
// without it, each such name waited out its own backoff (up to a minute,
// each at its own moment), and a provider's consumers list, which waits
// FirstConsumersWait from the vault's first answer for the others, was
// filled without those whose next ask came later, then again for each.
// Each client asks once the vault answers its own first retry, so a mesh
// of clients is spread by their backoffs' jitter, as at a cold start.
func (a *Asker) vaultBack(name string) {
	for n, st := range a.pending {
		if n == name || st.inflight || st.spread > 0 || st.timer == nil || !st.answered || (st.last != Silent && st.last != Error) {
			continue
		}
		st.attempt = 0
		a.ask(n, st)
	}
}

// AskRefusedOf asks again each name the vault refused that is asked in
// module's name (moduleOf), at once or, with spread, at a random moment
// within it, and says how many: module's assignment was written (again),
// and the vault judges an ask by the assignments, so its refusal may no
// longer stand. The store lost and made again, a client asking in the gap
// between the buckets made and the assignments written back was refused,
// and held it for the refused retry (10 minutes) with everything back.
// Only the names awaiting an ask are looked at (a.pending); a refusal of
// an ask under way is not taken but asked again (refusedAgain). A spread
// is for the assignments read again as the bus comes back: every client
// of a mesh reads them at once (SPEC §4.2 r2's jitter).
func (a *Asker) AskRefusedOf(module string, spread time.Duration) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	now, n := time.Now(), 0
	for name, st := range a.pending {
		if moduleOf(name) == module && a.refusedAgain(name, st, now, spread) {
			n++
		}
	}
	return n
}

// refusedAgain asks name again (now, or within spread) when the vault
// refused it, and says so; an ask of it under way is marked so its
// refusal is not taken (run). An assignment the vault judges name by was
// written at now. a.mu is held.
func (a *Asker) refusedAgain(name string, st *askState, now time.Time, spread time.Duration) bool {
	switch {
	case st.inflight:
		st.written = now
	case st.answered && st.last == Refused && a.pending[name] == st:
		if spread > 0 {
			a.askWithin(name, st, spread)
			return true
		}
		st.attempt = 0
		a.ask(name, st)
		return true
	}
	return false
}

// retry makes the ask scheduled after ask gen, unless another overtook it.
func (a *Asker) retry(name string, st *askState, gen uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx.Err() == nil && a.current(name, st, gen) && !st.inflight {
		a.ask(name, st)
	}
}

// moduleOf is the module in whose name a vault name is asked: the owner of
// an own/ or provision/ secret, the provider for a pair/.
func moduleOf(name string) string {
	parts := strings.Split(name, "/")
	switch {
	case parts[0] == "own" && len(parts) >= 2:
		return parts[1]
	case parts[0] == "provision" && len(parts) >= 5:
		return parts[4]
	case parts[0] == "pair" && len(parts) >= 2:
		return parts[1]
	}
	return ""
}

// Asking says an ask is under way or its answer not yet taken from
// Answers (a retry waiting for its backoff is not). It may say yes a
// moment after the last answer was taken, when Answers was full as that
// answer was made (its ask is let go once it is queued); never no while
// one is to come.
func (a *Asker) Asking() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.out) > 0 {
		return true
	}
	for _, st := range a.pending {
		if st.inflight {
			return true
		}
	}
	return false
}
