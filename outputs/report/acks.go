package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Reports put by PutReports are not waited for: the daemon's loop goes back
// to its inputs as soon as a report's put is sent, and the report's
// prov.applied event is published by the goroutine its put's ack arrives
// on (the subscription's, below), so a change no longer wakes the loop a
// third time only to publish it (issue 20). A subscriber still never
// hears of a state the bucket lacks: the event follows the ack.
//
// A put whose ack says an error, or that has none after ackWait (an ack
// lost with a connection, or a stream without a leader), is lost: the
// report is forgotten, so the same report is put again at the next call,
// and TakeLost hands its module to the caller, to try again at its retry
// tick. All puts in flight wait the one ackWait from when they were sent,
// swept by one timer: nothing holds the loop meanwhile (chaos seed
// 342810).

// reportAcks is the report puts in flight and what became of them.
type reportAcks struct {
	mu      sync.Mutex
	sub     *nats.Subscription
	prefix  string // reply subjects: prefix + a sequence number
	seq     uint64
	pending map[string]*reportPut // reply token → put
	landing int                   // acks taken out of pending whose event and acked state are not yet in
	lost    []LostReport
	forget  []LostReport      // lost, not yet forgotten by the publisher (under its own lock)
	acked   map[string]string // module → the state of its last report acknowledged
	stored  uint64            // report puts acknowledged (lost.go)
	sweep   *time.Timer       // armed while puts may be pending
	// seqs: key → the sequence of its last put acknowledged with no other
	// in flight, the condition of its next (overwritten.go); inflight:
	// key → its puts awaiting their acks.
	seqs     map[string]uint64
	inflight map[string]int
}

// reportPut is one report's put awaiting its ack.
type reportPut struct {
	key           string
	module, state string
	event         string // prov.applied.<node>.<module>
	b             []byte
	sig           sum
	sent          time.Time
}

// LostReport is a report whose put was not acknowledged.
type LostReport struct {
	Module string
	State  string // what the report said
	Err    error
	sig    sum
}

// put sends a report's put with a reply subject of its own; the ack is
// taken by onAck.
func (p *Publisher) put(key, module, state string, b []byte, sig sum) error {
	a := &p.acks
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sub == nil {
		// The connection's own inbox prefix: its permissions allow replies
		// there alone (inputs/bus/auth: _INBOX.provisioner.<node>).
		a.prefix = p.NC.NewInbox() + "."
		sub, err := p.NC.Subscribe(a.prefix+"*", p.onAck)
		if err != nil {
			return fmt.Errorf("%s: subscribing to acks: %w", spec.AppliedBucket, err)
		}
		a.sub, a.pending = sub, map[string]*reportPut{}
		a.seqs, a.inflight = map[string]uint64{}, map[string]int{}
	}
	a.seq++
	id := strconv.FormatUint(a.seq, 36)
	subject, reply := "$KV."+spec.AppliedBucket+"."+key, a.prefix+id
	var err error
	if seq, ok := a.seqs[key]; ok && a.inflight[key] == 0 {
		err = p.NC.PublishMsg(conditional(subject, reply, b, seq)) // overwritten.go
	} else {
		err = p.NC.PublishRequest(subject, reply, b)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", spec.AppliedBucket, key, err)
	}
	a.inflight[key]++
	now := time.Now()
	a.pending[id] = &reportPut{key: key, module: module, state: state, event: spec.AppliedSubject(p.Node, module), b: b, sig: sig, sent: now}
	if a.sweep == nil {
		a.sweep = time.AfterFunc(ackWait, p.sweepAcks)
	}
	return nil
}

// onAck takes a report put's ack (on the subscription's goroutine): the
// event goes out, or the put is lost.
func (p *Publisher) onAck(m *nats.Msg) {
	a := &p.acks
	err := ackError(m)
	a.mu.Lock()
	if err == nil {
		a.stored++ // even when it comes late or its event cannot go out
	}
	id := m.Subject[min(len(a.prefix), len(m.Subject)):]
	rp := a.pending[id]
	if rp == nil {
		a.mu.Unlock()
		return // lost already (swept)
	}
	delete(a.pending, id)
	a.landing++ // Settle and Quiet wait for it: it is not done until acked or lost is set
	overwritten := a.landedLocked(rp.key, m.Data, err)
	a.mu.Unlock()
	if overwritten {
		p.Overwritten.heard(rp.module)
	}
	if ackLanding != nil {
		ackLanding()
	}
	if err == nil {
		err = p.NC.Publish(rp.event, rp.b) // copies rp.b
		putReportBuf(rp.b)
		rp.b = nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.landing--
	if err != nil {
		a.loseLocked(rp, err)
		return
	}
	if a.acked == nil {
		a.acked = map[string]string{}
	}
	a.acked[rp.module] = rp.state
}

// ackLanding, when set (by tests), runs between an ack taken out of
// pending and its event published: the gap Settle and Quiet must see.
var ackLanding func()

// ackPrefix is how a JetStream publish ack that succeeded begins (the
// server encodes an error first, a stream name otherwise).
var ackPrefix = []byte(`{"stream":"`)

// ackError is what a publish ack says went wrong; nil when it succeeded.
func ackError(m *nats.Msg) error {
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return errors.New("no stream answered the put (no responders)")
	}
	if bytes.HasPrefix(m.Data, ackPrefix) {
		return nil
	}
	var r struct {
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"` // JetStream's own (wrongLastSequence)
			Description string `json:"description"`
		} `json:"error"`
		Stream string `json:"stream"`
	}
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return fmt.Errorf("invalid put ack %q: %w", m.Data, err)
	}
	if r.Error != nil {
		return &putRefused{code: r.Error.Code, errCode: r.Error.ErrCode, description: r.Error.Description}
	}
	if r.Stream == "" {
		return fmt.Errorf("invalid put ack %q", m.Data)
	}
	return nil
}

// errNoAck is a put whose ack did not come.
var errNoAck = errors.New("no ack")

// putRefused is a put the stream refused.
type putRefused struct {
	code, errCode int
	description   string
}

func (e *putRefused) Error() string {
	return fmt.Sprintf("put refused: %s (%d)", e.description, e.code)
}

// landedLocked takes in what became of a put of key: the sequence its ack
// gives is the condition of the next put when no other is in flight; a put
// refused for its condition says the key was overwritten (true), and any
// other outcome leaves the key's sequence unknown.
func (a *reportAcks) landedLocked(key string, ack []byte, err error) (overwritten bool) {
	if a.inflight[key]--; a.inflight[key] <= 0 {
		delete(a.inflight, key)
	}
	var pr *putRefused
	switch {
	case err == nil && a.inflight[key] == 0:
		if seq := ackSeq(ack); seq > 0 {
			a.seqs[key] = seq
			return false
		}
	case errors.As(err, &pr) && pr.errCode == wrongLastSequence:
		// "wrong last sequence: 0": the key holds nothing, its stream or
		// the key purged (an operator's purge of the bucket, noticed at
		// the next refill tick: LostBuckets), which no client wrote (an
		// outside audit: every node said a second client for 10 minutes
		// after a purge). The put goes again, unconditionally.
		overwritten = !strings.HasSuffix(pr.description, ": 0")
	}
	delete(a.seqs, key)
	return overwritten
}

// forgetSeqs drops the known sequences of keys (all of them with none
// given): deleted by this client, or what it wrote forgotten.
func (a *reportAcks) forgetSeqs(keys ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(keys) == 0 {
		clear(a.seqs)
	}
	for _, k := range keys {
		delete(a.seqs, k)
	}
}

func (a *reportAcks) loseLocked(rp *reportPut, err error) {
	l := LostReport{Module: rp.module, State: rp.state, Err: err, sig: rp.sig}
	a.lost = append(a.lost, l)
	a.forget = append(a.forget, l)
}

// sweepAcks loses the puts that have waited ackWait, and is armed again
// while any are pending.
func (p *Publisher) sweepAcks() {
	a := &p.acks
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	var next time.Time
	for id, rp := range a.pending {
		if due := rp.sent.Add(ackWait); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		delete(a.pending, id)
		a.landedLocked(rp.key, nil, errNoAck)
		a.loseLocked(rp, fmt.Errorf("%s %s: no ack within %v", spec.AppliedBucket, spec.EncodeKey(p.Node, rp.module), ackWait))
	}
	if next.IsZero() {
		a.sweep = nil
		return
	}
	a.sweep = time.AfterFunc(time.Until(next), p.sweepAcks)
}

// forgetLost makes the reports lost since the last call be put again
// (their sums forgotten unless a later report replaced them). Under p.mu.
func (p *Publisher) forgetLost() {
	a := &p.acks
	a.mu.Lock()
	lost := a.forget
	a.forget = nil
	a.mu.Unlock()
	for _, l := range lost {
		if s, ok := p.reports[l.Module]; ok && s == l.sig {
			delete(p.reports, l.Module)
		}
	}
}

// TakeLost returns the reports PutReports sent whose puts were lost since
// the last call (Acked says what the bucket holds instead); they are put
// again at the next call that gives them.
func (p *Publisher) TakeLost() []LostReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgetLost()
	a := &p.acks
	a.mu.Lock()
	defer a.mu.Unlock()
	lost := a.lost
	a.lost = nil
	return lost
}

// countStored counts a report put acknowledged.
func (a *reportAcks) countStored() {
	a.mu.Lock()
	a.stored++
	a.mu.Unlock()
}

// Acked is the state of module's last report whose put was acknowledged
// ("" when none was, in this process).
func (p *Publisher) Acked(module string) string {
	a := &p.acks
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acked[module]
}

// Quiet says no report put awaits its ack and no lost one waits to be
// taken (TakeLost): nothing the publisher holds will need the caller's
// retry tick unless another put is made.
func (p *Publisher) Quiet() bool {
	a := &p.acks
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) == 0 && a.landing == 0 && len(a.lost) == 0
}

// Settle waits, up to timeout, until no report put is awaiting its ack;
// it says whether none is.
func (p *Publisher) Settle(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		p.acks.mu.Lock()
		n := len(p.acks.pending) + p.acks.landing
		p.acks.mu.Unlock()
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}
