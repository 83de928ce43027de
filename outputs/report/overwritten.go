package report

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// A node's report key is this client's alone to write. A put of a report
// whose last put this client saw acknowledged carries that put's
// sequence (Nats-Expected-Last-Subject-Sequence): when the stream refuses
// it, someone else wrote or deleted the key since, most likely a second
// client started for the same node (another host given the same --node,
// a cloned machine, a second unit with a state dir of its own), whose
// fills and reports go on beside this one's, each overwriting the other,
// with nothing else saying so (an outside audit). It is said (Overwritten)
// and the put is lost, so the report is put again, unconditionally, at the
// next retry tick. A sequence is known only after a put acknowledged with
// no other put of the key in flight, and is forgotten when the client
// deletes the key or forgets what it wrote (the bus back, a bucket lost).

// wrongLastSequence is the JetStream error code of a put whose expected
// last subject sequence is not the subject's.
const wrongLastSequence = 10071

// expectedHeader is the header a conditional put carries.
const expectedHeader = "Nats-Expected-Last-Subject-Sequence"

// overwriteSaid is how long a report overwritten keeps the client
// unhealthy (Overwritten.Why), and how often it is logged at most.
const overwriteSaid = 10 * time.Minute

// Overwritten hears of this node's reports written by someone else.
type Overwritten struct {
	Node string
	Log  zerolog.Logger

	mu     sync.Mutex
	last   time.Time // when the last was heard
	module string    // whose report it was
	logged time.Time
	held   int // heard since the last line
}

// heard says module's report was overwritten: an error line, at most one
// each overwriteSaid (counting those not logged).
func (o *Overwritten) heard(module string) {
	if o == nil {
		return
	}
	now := time.Now()
	o.mu.Lock()
	o.last, o.module = now, module
	log := o.logged.IsZero() || now.Sub(o.logged) >= overwriteSaid
	held := o.held
	if log {
		o.logged, o.held = now, 0
	} else {
		o.held++
	}
	o.mu.Unlock()
	if log {
		ev := o.Log.Error().Str("module", module)
		if held > 0 {
			ev = ev.Int("more_not_logged", held)
		}
		ev.Msg("this node's report was written or deleted by someone else since this client put it: is a second client running for node " +
			strconv.Quote(o.Node) + " (another host given the same --node, a cloned machine)? Each overwrites the other's reports and sends every fill again")
	}
}

// Recent says whether a report was overwritten within overwriteSaid.
func (o *Overwritten) Recent() bool { return o.Why() != "" }

// Why is what /healthz says while a report was overwritten within the
// last overwriteSaid ("" otherwise).
func (o *Overwritten) Why() string {
	if o == nil {
		return ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last.IsZero() || time.Since(o.last) >= overwriteSaid {
		return ""
	}
	return "the report of module " + strconv.Quote(o.module) + " was written by someone else " +
		time.Since(o.last).Round(time.Second).String() + " ago: a second client for node " + strconv.Quote(o.Node) + "?"
}

// ForgetReports makes every report be put again at the next call,
// unconditionally, while a report of this node's was overwritten within
// overwriteSaid (the refill tick calls it): a second client's reports
// stood over this one's for good once it stopped when this one had
// nothing new to put (an outside audit).
func (p *Publisher) ForgetReports() {
	if !p.Overwritten.Recent() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	p.reports = map[string]sum{}
	p.acks.forgetSeqs()
}

// ackSeq is the stream sequence a put's ack gives (0: none found).
func ackSeq(data []byte) uint64 {
	i := bytes.Index(data, []byte(`"seq":`))
	if i < 0 {
		return 0
	}
	var n uint64
	for _, c := range data[i+len(`"seq":`):] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}

// conditional is a put of b to subject, replying to reply, that the
// stream refuses unless the subject's last sequence is seq.
func conditional(subject, reply string, b []byte, seq uint64) *nats.Msg {
	m := &nats.Msg{Subject: subject, Reply: reply, Data: b, Header: nats.Header{}}
	m.Header.Set(expectedHeader, strconv.FormatUint(seq, 10))
	return m
}
