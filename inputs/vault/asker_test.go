package vault

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// scriptedVault answers each ask for a name with the next status of its
// script (the last one repeated), sealing "v-<name>" to the asker's key;
// it records when each name was asked.
type scriptedVault struct {
	mu     sync.Mutex
	script map[string][]string
	asked  map[string][]time.Time
	gate   chan struct{}   // when set, no ask is answered before it is closed
	silent bool            // asks are recorded and not answered (the vault down)
	mute   map[string]bool // names whose asks are recorded and never answered
}

func (v *scriptedVault) setSilent(silent bool) {
	v.mu.Lock()
	v.silent = silent
	v.mu.Unlock()
}

// holdAnswers keeps every answer back until the function it returns is
// called.
func (v *scriptedVault) holdAnswers() (release func()) {
	gate := make(chan struct{})
	v.mu.Lock()
	v.gate = gate
	v.mu.Unlock()
	return func() { close(gate) }
}

func (v *scriptedVault) times(name string) []time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]time.Time(nil), v.asked[name]...)
}

// startAsker runs a nats-server, the scripted vault on it and an Asker.
func startAsker(t *testing.T, script map[string][]string, refused time.Duration) (*Asker, *scriptedVault) {
	t.Helper()
	nc := bustest.Connect(t, bustest.Start(t))
	v := &scriptedVault{script: script, asked: map[string][]time.Time{}}
	keys, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	_, err = nc.Subscribe(spec.VaultGetSubject("ace"), func(m *nats.Msg) {
		var q Request
		json.Unmarshal(m.Data, &q)
		v.mu.Lock()
		n := len(v.asked[q.Secret])
		v.asked[q.Secret] = append(v.asked[q.Secret], time.Now())
		steps := v.script[q.Secret]
		gate, silent := v.gate, v.silent || v.mute[q.Secret]
		v.mu.Unlock()
		if silent {
			return
		}
		if gate != nil {
			<-gate
		}
		r := Reply{Status: steps[min(n, len(steps)-1)], Reason: "scripted"}
		if r.Status == StatusSealed {
			r.Box = seal(t, keys, []byte("v-"+q.Secret))
		}
		b, _ := json.Marshal(r)
		m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// The scripted vault answers one ask at a time, sealing each: a
	// hundred asked at once under -race on a loaded machine wait their
	// turn well past a second, and an ask timed out is answered silent and
	// asked again (an answer more than the test counts). A test of a silent
	// vault sets its own short timeout.
	c := &Client{NC: nc, Node: "ace", Keys: keys, Timeout: 30 * time.Second}
	return NewAsker(ctx, c, backoff.Doubling{Min: 50 * time.Millisecond, Max: 200 * time.Millisecond}, refused), v
}

func nextAnswer(t *testing.T, a *Asker) Answer {
	t.Helper()
	select {
	case an := <-a.Answers():
		return an
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5s")
	}
	return Answer{}
}

func TestAskerAsksAgainWithBackoffUntilSealedThenStops(t *testing.T) {
	name := "own/app/api-key"
	a, v := startAsker(t, map[string][]string{name: {StatusAbsent, StatusAbsent, StatusAbsent, StatusSealed}}, time.Hour)
	release := v.holdAnswers() // the first ask stays under way while asked again
	a.Ask(name, "")
	a.Ask(name, "") // under way: not asked twice
	release()
	for i, want := range []struct {
		o       Outcome
		changed bool
	}{{Absent, true}, {Absent, false}, {Absent, false}, {Sealed, true}} {
		an := nextAnswer(t, a)
		if an.Name != name || an.Result.Outcome != want.o || an.Changed != want.changed {
			t.Fatalf("answer %d: %s %v changed=%v, want %v changed=%v", i, an.Name, an.Result, an.Changed, want.o, want.changed)
		}
		if want.o == Sealed && string(an.Result.Value) != "v-"+name {
			t.Fatal("the sealed value did not open")
		}
	}
	at := v.times(name)
	if len(at) != 4 {
		t.Fatalf("asked %d times, want 4", len(at))
	}
	for i, min := range []time.Duration{50, 100, 200} {
		if gap := at[i+1].Sub(at[i]); gap < min*time.Millisecond {
			t.Errorf("ask %d came %v after the one before, want at least %v", i+2, gap, min*time.Millisecond)
		}
	}
	time.Sleep(400 * time.Millisecond)
	if n := len(v.times(name)); n != 4 {
		t.Fatalf("asked %d times after it was sealed, want 4", n)
	}
}

func TestAskerAsksARefusedNameAgainAfterTheRefusedRetry(t *testing.T) {
	name := "own/app/api-key"
	a, v := startAsker(t, map[string][]string{name: {StatusRefused}}, 300*time.Millisecond)
	a.Ask(name, "")
	for i := 0; i < 2; i++ {
		if an := nextAnswer(t, a); an.Result.Outcome != Refused || an.Result.Reason != "scripted" {
			t.Fatalf("answer %d: %v", i, an.Result)
		}
	}
	if at := v.times(name); at[1].Sub(at[0]) < 300*time.Millisecond {
		t.Fatalf("refused asked again after %v, want the refused retry 300ms, not the backoff", at[1].Sub(at[0]))
	}
}

func TestAskerFreshAsksASealedNameAgainAndRetainDropsAName(t *testing.T) {
	sealed, absent := "own/app/a", "own/app/b"
	a, v := startAsker(t, map[string][]string{sealed: {StatusSealed}, absent: {StatusAbsent}}, time.Hour)
	a.Ask(sealed, "")
	if an := nextAnswer(t, a); an.Result.Outcome != Sealed {
		t.Fatalf("%v", an.Result)
	}
	a.Fresh(sealed, "")
	if an := nextAnswer(t, a); an.Result.Outcome != Sealed || an.Changed {
		t.Fatalf("after Fresh: %v changed=%v", an.Result, an.Changed)
	}
	if n := len(v.times(sealed)); n != 2 {
		t.Fatalf("%s asked %d times, want 2", sealed, n)
	}

	a.Ask(absent, "")
	if an := nextAnswer(t, a); an.Result.Outcome != Absent {
		t.Fatalf("%v", an.Result)
	}
	a.Retain(func(name string) bool { return name != absent })
	time.Sleep(300 * time.Millisecond)
	if n := len(v.times(absent)); n != 1 {
		t.Fatalf("%s asked %d times after it was dropped, want once", absent, n)
	}
	select {
	case an := <-a.Answers():
		t.Fatalf("an answer after the drop: %s %v", an.Name, an.Result)
	default:
	}
}

// Reask asks again, within the spread, for each name held that is still
// read, and not for one no longer read.
func TestAskerReaskAsksHeldNamesAgainWithinTheSpread(t *testing.T) {
	held, dropped := "own/app/api-key", "own/app/old"
	a, v := startAsker(t, map[string][]string{held: {StatusSealed}, dropped: {StatusSealed}}, time.Hour)
	a.Ask(held, "")
	a.Ask(dropped, "")
	nextAnswer(t, a)
	nextAnswer(t, a)
	const spread = 300 * time.Millisecond
	at := time.Now()
	a.Reask(spread, func(name string) bool { return name == held })
	if an := nextAnswer(t, a); an.Name != held || an.Result.Outcome != Sealed {
		t.Fatalf("answer %+v, want %s sealed", an, held)
	}
	times := v.times(held)
	if len(times) != 2 || times[1].Sub(at) > spread+100*time.Millisecond {
		t.Fatalf("%s asked at %v after Reask at %v, want once more within %v", held, times, at, spread)
	}
	time.Sleep(2 * spread)
	if n := len(v.times(dropped)); n != 1 {
		t.Fatalf("%s, no longer read, asked %d times", dropped, n)
	}
}

// asksLen is how many names a remembers, and how many of them are pending.
func asksLen(a *Asker) (asks, pending int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asks), len(a.pending)
}

// settled waits until no name of a is pending (every answer taken).
func settled(t *testing.T, a *Asker) {
	t.Helper()
	bustest.Eventually(t, 5*time.Second, func() error {
		if _, p := asksLen(a); p != 0 {
			return fmt.Errorf("%d names pending", p)
		}
		return nil
	})
}

// F5: a name answered sealed and no longer kept is forgotten (both maps),
// not only one under way; a kept one is still asked again by Reask and
// Fresh, and one forgotten is asked as a new name when read again.
func TestAskerRetainForgetsSealedNamesNoLongerKept(t *testing.T) {
	const n = 50
	script := map[string][]string{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("own/m-%d/s", i)
		names = append(names, name)
		script[name] = []string{StatusSealed}
	}
	kept := names[0]
	a, v := startAsker(t, script, time.Hour)
	a.forgetEvery = 0
	for _, name := range names {
		a.Ask(name, "")
	}
	for range names {
		nextAnswer(t, a)
	}
	settled(t, a)
	if asks, _ := asksLen(a); asks != n {
		t.Fatalf("%d names remembered before Retain, want %d", asks, n)
	}
	a.Retain(func(name string) bool { return name == kept })
	if asks, pending := asksLen(a); asks != 1 || pending != 0 {
		t.Fatalf("after Retain: %d names remembered, %d pending; want the kept one alone", asks, pending)
	}

	// The kept name is still asked again when the bus comes back, and when
	// the vault says it changed.
	a.Reask(10*time.Millisecond, func(name string) bool { return name == kept || name == names[1] })
	if an := nextAnswer(t, a); an.Name != kept || an.Result.Outcome != Sealed {
		t.Fatalf("Reask: %+v", an)
	}
	a.Fresh(kept, "")
	if an := nextAnswer(t, a); an.Name != kept || an.Result.Outcome != Sealed {
		t.Fatalf("Fresh: %+v", an)
	}
	if got := len(v.times(kept)); got != 3 {
		t.Fatalf("%s asked %d times, want 3 (Ask, Reask, Fresh)", kept, got)
	}
	time.Sleep(100 * time.Millisecond)
	if got := len(v.times(names[1])); got != 1 {
		t.Fatalf("%s, forgotten, asked again by Reask: %d asks", names[1], got)
	}
	// A name forgotten and read again is asked as a new one.
	a.Ask(names[1], "")
	if an := nextAnswer(t, a); an.Name != names[1] || an.Result.Outcome != Sealed || !an.Changed {
		t.Fatalf("asked again after it was forgotten: %+v, want sealed and changed (a new name)", an)
	}
	a.Fresh(names[2], "")
	if an := nextAnswer(t, a); an.Name != names[2] || an.Result.Outcome != Sealed {
		t.Fatalf("Fresh of a forgotten name: %+v", an)
	}
	settled(t, a)
	if asks, _ := asksLen(a); asks != 3 {
		t.Fatalf("%d names remembered, want 3", asks)
	}
}

// Retain runs after every batch: when nothing moved, it asks keep of a few
// names answered for good, not of every one; it looks at every one once
// some of them are no longer kept, or once forgetEvery passed; a name
// under way or due is dropped at every call.
func TestAskerRetainLooksAtSealedNamesWhenSomeLeft(t *testing.T) {
	const n = 100
	script := map[string][]string{"own/app/absent": {StatusAbsent}}
	var names []string
	for i := range n {
		name := fmt.Sprintf("own/m-%d/s", i)
		names = append(names, name)
		script[name] = []string{StatusSealed}
	}
	a, _ := startAsker(t, script, time.Hour)
	a.forgetEvery = time.Hour
	for _, name := range names {
		a.Ask(name, "")
	}
	for range names {
		nextAnswer(t, a)
	}
	settled(t, a)
	calls := 0
	counting := func(keep func(string) bool) func(string) bool {
		return func(name string) bool { calls++; return keep(name) }
	}
	all := func(string) bool { return true }
	a.Retain(counting(all)) // the first look is at once
	if calls != n {
		t.Fatalf("the first Retain asked keep %d times, want %d", calls, n)
	}
	calls = 0
	a.Retain(counting(all))
	if calls > forgetSample {
		t.Fatalf("a Retain with nothing moved asked keep %d times, want at most %d", calls, forgetSample)
	}

	// A name under way is dropped at once; the sealed ones, all kept, stay.
	a.Ask("own/app/absent", "")
	nextAnswer(t, a)
	a.Retain(func(name string) bool { return name != "own/app/absent" })
	if asks, pending := asksLen(a); asks != n || pending != 0 {
		t.Fatalf("%d names remembered, %d pending; want %d, 0", asks, pending, n)
	}
	// One module of a hundred left: its name is forgotten once the look
	// is due.
	one := func(name string) bool { return name != names[0] }
	a.mu.Lock()
	a.forgotAt = time.Now().Add(-time.Hour)
	a.mu.Unlock()
	a.Retain(one)
	if asks, _ := asksLen(a); asks != n-1 {
		t.Fatalf("%d names remembered once the look was due, want %d", asks, n-1)
	}
	// Every module left: a few names looked at say so, and every one goes.
	a.Retain(func(string) bool { return false })
	if asks, _ := asksLen(a); asks != 0 {
		t.Fatalf("%d names remembered once none is kept", asks)
	}
}

// Retain runs after every batch: with nothing moved it asks keep of a few
// names, however many are held.
func BenchmarkAskerRetainNothingMoved(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint("names=", n), func(b *testing.B) {
			a := NewAsker(b.Context(), nil, backoff.Doubling{}, 0)
			held := map[string]bool{}
			for i := range n {
				name := fmt.Sprintf("own/m-%d/s", i)
				a.asks[name] = &askState{answered: true, last: Sealed}
				held[name] = true
			}
			calls := 0
			keep := func(name string) bool { calls++; return held[name] }
			a.Retain(keep)
			calls = 0
			b.ReportAllocs()
			for b.Loop() {
				a.Retain(keep)
			}
			b.ReportMetric(float64(calls)/float64(b.N), "keeps/op")
		})
	}
}

// When the vault answers again after asks it left unanswered, every name
// waiting on its backoff after such an ask is asked again at once, not
// each at the end of its own backoff (up to a minute): a provider's
// consumers list that waited for the vault is then filled with every
// consumer in one go.
func TestTheVaultAnsweringAgainAsksAtOnceTheNamesItLeftUnanswered(t *testing.T) {
	a, v := startAsker(t, map[string][]string{"x": {StatusSealed}, "y": {StatusSealed}, "z": {StatusRefused}}, time.Hour)
	a.backoff = backoff.Doubling{Min: time.Hour, Max: time.Hour}
	a.client.Timeout = 200 * time.Millisecond
	v.setSilent(true)
	a.Ask("x", "")
	a.Ask("y", "")
	for range 2 {
		if an := <-a.Answers(); an.Result.Outcome != Silent {
			t.Fatalf("%s: %s with the vault silent", an.Name, an.Result)
		}
	}
	v.setSilent(false)
	a.Ask("z", "") // answered (refused): the vault is back
	got := map[string]Outcome{}
	timeout := time.After(20 * time.Second)
	for len(got) < 3 {
		select {
		case an := <-a.Answers():
			got[an.Name] = an.Result.Outcome
		case <-timeout:
			t.Fatalf("answers %v: the names left unanswered were not asked again once the vault answered", got)
		}
	}
	if got["x"] != Sealed || got["y"] != Sealed || got["z"] != Refused {
		t.Fatalf("answers %v", got)
	}
}

// A refused name is asked again at once when its module's assignment is
// written again (AskRefusedOf), not after the refused retry; another
// module's refused name is not.
func TestARefusedNameIsAskedAgainWhenItsModulesAssignmentIsWritten(t *testing.T) {
	mine, other := "own/app/api-key", "own/web/api-key"
	a, v := startAsker(t, map[string][]string{mine: {StatusRefused, StatusSealed}, other: {StatusRefused}}, time.Hour)
	a.Ask(mine, "")
	a.Ask(other, "")
	for range 2 {
		if an := nextAnswer(t, a); an.Result.Outcome != Refused {
			t.Fatalf("%s: %v, want refused", an.Name, an.Result)
		}
	}
	if n := a.AskRefusedOf("app", 0); n != 1 {
		t.Fatalf("AskRefusedOf(app) asked %d names again, want 1", n)
	}
	if an := nextAnswer(t, a); an.Name != mine || an.Result.Outcome != Sealed {
		t.Fatalf("%s: %v, want %s sealed", an.Name, an.Result, mine)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(v.times(other)); n != 1 {
		t.Fatalf("%s asked %d times, want once: its module's assignment was not written", other, n)
	}
	if n := a.AskRefusedOf("app", 0); n != 0 {
		t.Fatalf("AskRefusedOf(app) asked %d names again once sealed, want 0", n)
	}
}

// A refusal answering an ask made before an assignment the vault judges
// the name by was written again (its module's: AskRefusedOf; a consumer's,
// for its pair/ credential: AskRefused) is not taken: the name is asked
// again at once.
func TestARefusalOfAnAskMadeBeforeTheAssignmentWasWrittenAgainIsNotTaken(t *testing.T) {
	for _, c := range []struct {
		name    string
		written func(a *Asker)
	}{
		{"own/app/api-key", func(a *Asker) { a.AskRefusedOf("app", 0) }},
		{"pair/gitea/gitea-read/g14/cc", func(a *Asker) { a.AskRefused([]string{"pair/gitea/gitea-read/g14/cc"}, 0) }},
	} {
		a, v := startAsker(t, map[string][]string{c.name: {StatusRefused, StatusSealed}}, time.Hour)
		release := v.holdAnswers()
		a.Ask(c.name, "")
		bustest.Eventually(t, 5*time.Second, func() error {
			if len(v.times(c.name)) == 0 {
				return fmt.Errorf("not asked yet")
			}
			return nil
		})
		c.written(a) // while the ask is under way
		release()
		if an := nextAnswer(t, a); an.Result.Outcome != Sealed {
			t.Fatalf("%s: first answer taken: %v, want the refusal of the ask made before the write dropped and sealed", c.name, an.Result)
		}
		if n := len(v.times(c.name)); n != 2 {
			t.Fatalf("%s asked %d times, want 2", c.name, n)
		}
	}
}

// A vault that answers other names and leaves one silent is there: the
// silent name is asked again on its own backoff (SPEC §4.2: 1 s doubling
// to 1 min), not at once after every answer to another name. Before, each
// answer re-asked it with its backoff reset (an outside audit: 60 asks in
// 7 minutes where the backoff makes 12).
func TestANameTheVaultLeavesSilentWhileAnsweringOthersKeepsItsBackoff(t *testing.T) {
	a, v := startAsker(t, map[string][]string{"busy": {StatusSealed}}, time.Hour)
	a.backoff = backoff.Doubling{Min: 200 * time.Millisecond, Max: time.Second}
	a.client.Timeout = 100 * time.Millisecond
	v.mu.Lock()
	v.mute = map[string]bool{"quiet": true}
	v.mu.Unlock()
	a.Ask("quiet", "")
	a.Ask("busy", "")
	stop := time.After(3 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-a.Answers():
		case <-tick.C:
			a.Fresh("busy", "") // the vault answers another name every 50 ms
		case <-stop:
			done = true
		}
	}
	// backoff 200 ms, 400 ms, 800 ms, 1 s … after each 100 ms timeout:
	// about 6 asks in 3 s; reset at each other answer, one every 50 ms.
	if n := len(v.times("quiet")); n < 2 || n > 8 {
		t.Errorf("quiet asked %d times in 3 s while the vault answered busy every 50 ms; want its backoff's 2–8", n)
	}
	if n := len(v.times("busy")); n < 20 {
		t.Errorf("busy asked %d times: the vault was not answering it", n)
	}
}

// On a quiet node, a name the vault leaves silent keeps its backoff when
// the vault answers another name now and then: the silence went by with
// no other ask under way (nothing heard since it was sent), which alone
// looked like the vault away, so each answer to the other name took the
// vault for back and re-asked the silent name at once, its backoff reset
// (an outside audit: 5-6 asks a minute where the backoff makes one). A
// reply to a name the vault answered before says nothing of its return.
func TestANameTheVaultLeavesSilentOnAQuietNodeKeepsItsBackoff(t *testing.T) {
	a, v := startAsker(t, map[string][]string{"busy": {StatusAbsent}}, time.Hour)
	a.backoff = backoff.Doubling{Min: 400 * time.Millisecond, Max: 2 * time.Second}
	a.client.Timeout = 100 * time.Millisecond
	v.mu.Lock()
	v.mute = map[string]bool{"quiet": true}
	v.mu.Unlock()
	a.Ask("busy", "")
	<-a.Answers()
	a.Ask("quiet", "")
	stop := time.After(3 * time.Second)
	tick := time.NewTicker(600 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-a.Answers():
		case <-tick.C:
			a.Fresh("busy", "") // answered (absent) every 600 ms, after quiet's silence
		case <-stop:
			done = true
		}
	}
	// 100 ms timeouts, then 400 ms, 800 ms, 1.6 s: asks at about 0, 0.5,
	// 1.4 and 3.1 s.
	if n := len(v.times("quiet")); n < 2 || n > 4 {
		t.Errorf("quiet asked %d times in 3 s while the vault answered busy every 600 ms; want its backoff's 2–4", n)
	}
}

// The vault says a name changed while an ask of it is under way: the
// answer may say the value before the change. It is not delivered; the
// name is asked again, and only that answer is (an outside audit: the
// superseded answer was applied, its files written and their program
// restarted, then again for the next).
func TestAnAnswerTheVaultSaidChangedDuringItsAskIsNotDelivered(t *testing.T) {
	a, v := startAsker(t, map[string][]string{"s": {StatusSealed}}, time.Hour)
	release := v.holdAnswers()
	a.Ask("s", "")
	bustest.Eventually(t, 5*time.Second, func() error {
		if n := len(v.times("s")); n != 1 {
			return fmt.Errorf("asked %d times", n)
		}
		return nil
	})
	if !a.Fresh("s", "") { // the vault says it changed: this ask's answer is stale
		t.Fatal("Fresh during the ask set nothing to follow")
	}
	release()
	an := nextAnswer(t, a)
	if n := len(v.times("s")); an.Result.Outcome != Sealed || n != 2 {
		t.Fatalf("the answer delivered is %+v after %d asks; want the second ask's", an.Result.Outcome, n)
	}
	select {
	case an := <-a.Answers():
		t.Fatalf("a second answer was delivered: %+v", an.Result.Outcome)
	case <-time.After(300 * time.Millisecond):
	}
}
