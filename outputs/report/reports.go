package report

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Report writes r to the applied bucket and publishes it on
// prov.applied.<node>.<module>, only when it differs from the last report
// written ("at" aside). It says whether it wrote.
func (p *Publisher) Report(ctx context.Context, r Report) (bool, error) {
	res := p.Reports(ctx, []Report{r})
	return res[0].Wrote, res[0].Err
}

// Written is what became of one report given to Reports.
type Written struct {
	Wrote bool  // the report differed from the last one and was written
	Err   error // it could not be written; it is tried again at the next call
}

// Reports writes several modules' reports as Report does, with all their
// puts in flight together (a cold start reports a hundred modules at
// once). A report is published on prov.applied only once its put is
// acknowledged, so a subscriber never hears of a state the bucket lacks.
func (p *Publisher) Reports(ctx context.Context, rs []Report) []Written {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	p.forgetLost()
	out := make([]Written, len(rs))
	kv, err := p.kv(ctx, spec.AppliedBucket)
	type pending struct {
		i      int
		key    string
		b      []byte
		sig    sum
		ack    jetstream.PubAckFuture
		module string
		state  string
		before uint64 // the refusal count when it was sent (refused.go)
	}
	var inFlight []pending
	settle := func() {
		wctx, cancel := context.WithTimeout(ctx, ackWait)
		defer cancel()
		for _, pp := range inFlight {
			if err := p.awaitAck(wctx, pp.ack, pp.before); err != nil {
				out[pp.i].Err = fmt.Errorf("%s %s: %w", spec.AppliedBucket, pp.key, err)
				continue
			}
			p.acks.countStored()
			out[pp.i] = p.reported(pp.module, pp.state, pp.b, &pp.sig)
		}
		inFlight = inFlight[:0]
	}
	at := p.Now().UTC().Format(time.RFC3339)
	for i := range rs {
		r := rs[i]
		b, sig, key, done := p.nextReport(ctx, kv, err, nil, &r, at, &out[i])
		if done {
			continue
		}
		before := p.refused.n.Load()
		ack, err := p.JS.PublishAsync("$KV."+spec.AppliedBucket+"."+key, b)
		if err != nil {
			out[i].Err = fmt.Errorf("%s %s: %w", spec.AppliedBucket, key, err)
			continue
		}
		inFlight = append(inFlight, pending{i: i, key: key, b: b, sig: sig, ack: ack, module: r.Module, state: r.State, before: before})
		if len(inFlight) >= maxInFlight {
			settle()
		}
	}
	settle()
	return out
}

// PutReports does what Reports does without waiting for the puts' acks
// (acks.go): Wrote says a report differed and its put was sent. Its
// prov.applied event goes out when the ack comes; a put lost is listed by
// TakeLost, and the same report is put again at the next call.
func (p *Publisher) PutReports(ctx context.Context, rs []Report) []Written {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	p.forgetLost()
	out := make([]Written, len(rs))
	kv, err := p.kv(ctx, spec.AppliedBucket)
	at := p.Now().UTC().Format(time.RFC3339)
	for i := range rs {
		r := rs[i]
		b, sig, key, done := p.nextReport(ctx, kv, err, getReportBuf(), &r, at, &out[i])
		if done {
			continue
		}
		if err := p.put(key, r.Module, r.State, b, sig); err != nil {
			out[i].Err = err
			continue
		}
		// In flight: the same report is not put again (forgotten if
		// its put is lost).
		p.reports[r.Module] = sig
		out[i].Wrote = true
	}
	return out
}

// encodeReport is r as written (its node set, its texts bounded, at
// given), fitted to the bus's limit, and the sum of those bytes without
// at's value: one encoding serves both (the signature was a second
// encoding of the whole report, issue 20).
// nextReport is what Reports and PutReports do first with each report:
// encode it (into buf), and be done with it when it cannot be encoded, is
// the report last written (buf goes back to the pool), the bucket could
// not be opened (kvErr), or it says the module was removed (its key
// deleted); each outcome but the second in *w. Otherwise its bytes, sum
// and key are to be put.
func (p *Publisher) nextReport(ctx context.Context, kv jetstream.KeyValue, kvErr error, buf []byte, r *Report, at string, w *Written) (b []byte, sig sum, key string, done bool) {
	b, sig, err := p.encodeReport(buf, r, at)
	if err != nil {
		w.Err = err
		return nil, sig, "", true
	}
	if old, ok := p.reports[r.Module]; ok && old == sig {
		putReportBuf(b)
		return nil, sig, "", true
	}
	if kvErr != nil {
		w.Err = kvErr
		return nil, sig, "", true
	}
	key = spec.EncodeKey(p.Node, r.Module)
	if r.State == "removed" {
		*w = p.removedReport(ctx, key, r.Module, b)
		return nil, sig, "", true
	}
	return b, sig, key, false
}

func (p *Publisher) encodeReport(dst []byte, r *Report, at string) ([]byte, sum, error) {
	r.Node = p.Node
	if r.Files == nil {
		r.Files = []File{}
	}
	r.Reason = Bound(r.Reason)
	if r.Waiting == nil {
		r.Waiting = []Waiting{} // SPEC §5.3 lists it: [] when nothing is waited for
	} else {
		r.Waiting = slices.Clone(r.Waiting)
		for i := range r.Waiting {
			r.Waiting[i].Why = Bound(r.Waiting[i].Why)
		}
	}
	r.At = at
	b, err := fitReportTo(dst, *r, p.maxPayload())
	if err != nil {
		return nil, sum{}, err
	}
	return b, p.reportSig(b), nil
}

// atField is how a report's "at" begins once encoded: a string's quotes
// are escaped inside it, so the first is the field.
var atField = []byte(`,"at":"`)

// reportSig is the sum of an encoded report without at's value: two
// keyed 64-bit maphashes of each part, not SHA-256 (a 100-file report is
// ~13 KB, summed on every change of its module; it is compared only with
// this process's own earlier sums, so a keyed hash of 128 bits tells them
// apart as well).
func (p *Publisher) reportSig(b []byte) sum {
	head, tail := b, []byte(nil)
	if i := bytes.Index(b, atField); i >= 0 {
		j := i + len(atField)
		k := bytes.IndexByte(b[j:], '"')
		head, tail = b[:j], b[j+k:]
	}
	var s sum
	for i, seed := range p.sigSeeds {
		x := maphash.Bytes(seed, head)
		x = bits.RotateLeft64(x, 31) ^ maphash.Bytes(seed, tail) ^ uint64(len(head))
		binary.LittleEndian.PutUint64(s[8*i:], x)
	}
	return s
}

// removedReport deletes a module's report and publishes that it was
// removed.
func (p *Publisher) removedReport(ctx context.Context, key, module string, b []byte) Written {
	if err := p.deleteKey(ctx, spec.AppliedBucket, key); err != nil {
		return Written{Err: err}
	}
	return p.reported(module, "removed", b, nil)
}

// reported publishes a report that is in the bucket (or deleted from it,
// sig nil) and remembers it.
func (p *Publisher) reported(module, state string, b []byte, sig *sum) Written {
	if err := p.NC.Publish(spec.AppliedSubject(p.Node, module), b); err != nil {
		return Written{Err: err}
	}
	p.acks.mu.Lock()
	if sig == nil {
		delete(p.reports, module)
		delete(p.acks.acked, module)
	} else {
		p.reports[module] = *sig
		if p.acks.acked == nil {
			p.acks.acked = map[string]string{}
		}
		p.acks.acked[module] = state
	}
	p.acks.mu.Unlock()
	return Written{Wrote: true}
}

// Changed publishes prov.changed.<node>.<module>: {"kind","key"}, or
// {"kind"} alone (every key) when key is empty. Never a value.
func (p *Publisher) Changed(module, kind, key string) error {
	return p.NC.Publish(spec.ChangedSubject(p.Node, module), changedMsg(kind, key))
}

// changedMsg is prov.changed's {"key","kind"} (the keys in the order a
// map's encoding gave them), built without encoding a map: one is
// published per value changed (issue 20).
func changedMsg(kind, key string) []byte {
	b := make([]byte, 0, 24+len(kind)+len(key))
	b = append(b, '{')
	if key != "" {
		b = append(b, `"key":`...)
		b = appendJSONString(b, key)
		b = append(b, ',')
	}
	b = append(b, `"kind":`...)
	b = appendJSONString(b, kind)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string: as is between quotes when
// it is printable ASCII with nothing to escape, else as encode says.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return append(b, encode(s)...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Gone publishes prov.changed.<node>.<module> {"kind":"config","gone":true}:
// the module left this node (SPEC §5.4 r2).
func (p *Publisher) Gone(module string) error {
	return p.NC.Publish(spec.ChangedSubject(p.Node, module), encode(map[string]any{"kind": "config", "gone": true}))
}
