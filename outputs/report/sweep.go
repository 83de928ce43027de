package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Swept is what a Sweep did.
type Swept struct {
	// Gone: the modules not live that held a key (each told the
	// node-engine by the caller).
	Gone []string
	// Adopted: live modules with keys on the bus this process had not
	// written; their next sync deletes those no longer wanted.
	Adopted []string
	Deleted int // keys deleted (applied ones by a removed report)
	// Removed: the modules not live whose removed report was published
	// (their applied key deleted), each with the state that key said
	// ("" when it said none), so each is logged as a state change.
	Removed map[string]string
	// Files: for each live module whose report the bucket held and this
	// process had not written, that report's files, so a fill of this run
	// that finds a file unchanged can say what the last run's fill that
	// changed it said (SPEC §5.3: a restart that changes nothing puts no
	// report again).
	Files map[string][]File
	// At: for each live module whose report the bucket held and this
	// process had not written, that report's "at": when the state it says
	// was written, which a first report of this run equal to it (not put
	// again) still says.
	At map[string]string
	// Items: for each live module, the items the collect bucket holds of
	// it (collection → text; those whose value says another collection or
	// contributor than its key left out), so a module whose plan does not
	// parse at start keeps what the last run recorded in its collectors'
	// files (nodes.NodeGraph.ItemsBefore). An item is never a secret.
	Items map[string]map[string][]byte
	// Read: the buckets whose keys under this node were all read (Files
	// and Items are whole only when it names the applied and the collect
	// bucket). A bucket that does not exist holds none: it is read. So is
	// one the bus refuses (its lookup or the read of its keys: a
	// permission violation): nothing of it can be read back while the
	// rights stay so, and what waits for it would wait for nothing.
	Read []string
	// OutOfShape: the keys out of shape under this node that were deleted
	// (SPEC §2.1), each with why, the first MaxSweptOutOfShape of them;
	// OutOfShapeMore counts the others. The caller says each: a key
	// deleted is never dropped unsaid.
	OutOfShape     []KeyOutOfShape
	OutOfShapeMore int
}

// KeyOutOfShape is a key out of its bucket's shape, with why.
type KeyOutOfShape struct {
	Bucket, Key string
	Why         error
}

// MaxSweptOutOfShape bounds Swept.OutOfShape: only this node's client may
// write under its node, so there are few, but one Sweep says at most this
// many by key.
const MaxSweptOutOfShape = 20

// deletedOutOfShape records in out a key out of shape that was deleted.
func (out *Swept) deletedOutOfShape(bucket, key string, why error) {
	if len(out.OutOfShape) >= MaxSweptOutOfShape {
		out.OutOfShapeMore++
		return
	}
	out.OutOfShape = append(out.OutOfShape, KeyOutOfShape{Bucket: bucket, Key: key, Why: why})
}

// sweptBucket is, for each bucket swept, where a key's module is among
// its tokens.
var sweptBuckets = []struct {
	bucket        string
	tokens, owner int
}{
	{spec.NeedsBucket, 4, 1},   // <node>.<module>.<kind>.<name>
	{spec.CollectBucket, 3, 2}, // <node>.<collection>.<module>
	{spec.AppliedBucket, 2, 1}, // <node>.<module>
}

// Sweep reads every key under this node in the needs, collect and applied
// buckets (SPEC §4.7 r2: nothing the client wrote outlives its module). A
// key of a module not live is deleted; an applied one by a removed report,
// published. A key of a live module this process did not write is
// remembered as written, with its bytes, so that the module's next sync
// deletes it unless it is still wanted (a placeholder dropped or an item
// no longer contributed while the client was down) and does not put the
// same bytes again; a live module's report, so that the same report ("at"
// aside) is not put again. A key out of shape under this node is deleted
// too: it belongs to no module, and no one else may write it.
// What failed is said in the error; a later Sweep does the rest.
func (p *Publisher) Sweep(ctx context.Context, live func(module string) bool) (Swept, error) {
	var out Swept
	if !p.NC.IsConnected() {
		return out, errors.New("the bus is away")
	}
	ctx, cancel := context.WithTimeout(ctx, sweepWait)
	defer cancel()
	gone, adopted := map[string]bool{}, map[string]bool{}
	var removed []string       // modules whose applied key goes by a removed report
	was := map[string]string{} // the state each of removed's applied key said
	var errs []error
	p.mu.Lock()
	p.init()
	for _, sb := range sweptBuckets {
		entries, err := p.nodeEntries(ctx, sb.bucket)
		if err != nil {
			if errors.Is(err, errNoBucket) || errors.Is(err, nats.ErrPermissionViolation) {
				out.Read = append(out.Read, sb.bucket)
			}
			errs = append(errs, err)
			continue
		}
		out.Read = append(out.Read, sb.bucket)
		// What is remembered changes once per module, after the bucket's
		// keys are all read (a table is made again for each change).
		add, drop := map[string][]entry{}, map[string][]string{}
		for k, v := range entries {
			toks, err := spec.DecodeKey(k, sb.tokens)
			if err != nil {
				// Under this node and out of shape (SPEC §2.1): it belongs
				// to no module, and only this node's client may write
				// here, so it goes (§4.7 r2) rather than stand in the
				// server's sweep as the client's for ever.
				if err := p.deleteKey(ctx, sb.bucket, k); err != nil {
					errs = append(errs, fmt.Errorf("%s %s: delete: %w", sb.bucket, k, err))
					continue
				}
				out.Deleted++
				out.deletedOutOfShape(sb.bucket, k, err)
				continue
			}
			module := toks[sb.owner]
			switch {
			case live(module) && sb.bucket != spec.AppliedBucket:
				name, ok := p.nameOf(sb.bucket, module, k)
				if !ok {
					continue // not a key this process would write
				}
				if sb.bucket == spec.CollectBucket {
					out.keepItem(module, toks[1], v)
				}
				if _, ok := p.written[sb.bucket][module].find(name); !ok {
					// Its fields not known: encoded again, put only if its bytes differ.
					add[module] = append(add[module], entry{name: name, bytes: p.keySum(v)})
					adopted[module] = true
					delete(p.needsSynced, module) // its next NeedsAll looks at each key
				}
			case live(module):
				// Its report: the next one is put only if it differs ("at"
				// aside) from the one the bucket holds (SPEC §5.3).
				if _, ok := p.reports[module]; !ok {
					p.reports[module] = p.reportSig(v)
					var r Report
					if json.Unmarshal(v, &r) == nil && len(r.Files) > 0 {
						if out.Files == nil {
							out.Files = map[string][]File{}
						}
						out.Files[module] = r.Files
					}
					if r.At != "" {
						if out.At == nil {
							out.At = map[string]string{}
						}
						out.At[module] = r.At
					}
				}
			case sb.bucket == spec.AppliedBucket:
				gone[module] = true
				removed = append(removed, module)
				var r struct{ State string }
				if json.Unmarshal(v, &r) == nil {
					was[module] = r.State
				}
			default:
				gone[module] = true
				delete(p.needsSynced, module) // its needs, back, are written again
				if err := p.deleteKey(ctx, sb.bucket, k); err != nil {
					errs = append(errs, fmt.Errorf("%s %s: delete: %w", sb.bucket, k, err))
					continue
				}
				if name, ok := p.nameOf(sb.bucket, module, k); ok {
					drop[module] = append(drop[module], name)
				}
				out.Deleted++
			}
		}
		needs := sb.bucket == spec.NeedsBucket
		for module, a := range add { // live modules
			slices.SortFunc(a, func(x, y entry) int { return strings.Compare(x.name, y.name) })
			p.setTable(sb.bucket, module, p.written[sb.bucket][module].with(a, nil, needs))
		}
		for module, d := range drop { // modules not live
			slices.Sort(d)
			p.setTable(sb.bucket, module, p.written[sb.bucket][module].with(nil, d, needs))
		}
	}
	p.mu.Unlock()
	rs := make([]Report, len(removed))
	for i, m := range removed {
		rs[i] = Report{Module: m, State: "removed"}
	}
	for i, w := range p.Reports(ctx, rs) {
		if w.Err != nil {
			errs = append(errs, fmt.Errorf("removed report of %s: %w", removed[i], w.Err))
		} else {
			out.Deleted++
			if out.Removed == nil {
				out.Removed = map[string]string{}
			}
			out.Removed[removed[i]] = was[removed[i]]
		}
	}
	out.Gone = sortedKeys(gone)
	out.Adopted = sortedKeys(adopted)
	return out, errors.Join(errs...)
}

// keepItem records in Items the collect bucket's value v of module's item
// in collection, when it is one.
func (out *Swept) keepItem(module, collection string, v []byte) {
	var it Item
	if json.Unmarshal(v, &it) != nil || it.Collection != collection || it.Contributor != module {
		return
	}
	if out.Items == nil {
		out.Items = map[string]map[string][]byte{}
	}
	if out.Items[module] == nil {
		out.Items[module] = map[string][]byte{}
	}
	out.Items[module][collection] = []byte(it.Item)
}

// sweepWait bounds one Sweep (it runs in the daemon's loop).
const sweepWait = 10 * time.Second

// nodeEntries reads this node's keys in bucket, with their bytes, in one
// pass (a watch of their last values, deletes left out), once no replica
// of its stream lags (caughtUp). A read the bus
// refuses (Publisher.Hear heard it) is an error that is a
// nats.ErrPermissionViolation, saying "not permitted to read".
func (p *Publisher) nodeEntries(ctx context.Context, bucket string) (map[string][]byte, error) {
	kv, err := p.kv(ctx, bucket)
	if err != nil {
		return nil, err
	}
	var out map[string][]byte
	read := func(ctx context.Context) (err error) {
		if err := p.caughtUp(ctx, bucket, kv); err != nil {
			return err
		}
		out, err = readNode(ctx, kv, spec.EncodeToken(p.Node)+".>")
		return err
	}
	if p.Hear != nil {
		err = p.Hear(ctx, bucket, read)
	} else {
		err = read(ctx)
	}
	if errors.Is(err, nats.ErrPermissionViolation) {
		return nil, fmt.Errorf("not permitted to read %s: %w", bucket, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading this node's keys: %w", bucket, err)
	}
	return out, nil
}

// caughtUp returns once no replica of bucket's stream lags its leader
// (Caught), or an error saying which does: the bucket is not read this
// time, and the stage sweeps again at its next try. A replica that keeps
// lagging for lagPatience is read through all the same (its error was
// said at each try before): a member that never catches up would
// otherwise hold every sweep, and the daemon's loop a second at each try.
func (p *Publisher) caughtUp(ctx context.Context, bucket string, kv jetstream.KeyValue) error {
	if p.Caught == nil {
		return nil
	}
	err := p.Caught(ctx, kv, caughtWait)
	if err == nil {
		delete(p.lagSince, bucket)
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	if p.lagSince == nil {
		p.lagSince = map[string]time.Time{}
	}
	since, ok := p.lagSince[bucket]
	if !ok {
		p.lagSince[bucket] = time.Now()
	} else if time.Since(since) >= lagPatience {
		return nil
	}
	return err
}

// caughtWait is how long a sweep waits for one bucket's replicas (it runs
// in the daemon's loop): a bucket not caught up by then, or whose stream
// info did not come, is read at the next try (a bus just back whose API
// answered late held the loop a second a bucket, and a change waited).
const caughtWait = 300 * time.Millisecond

// lagPatience is how long a sweep leaves a bucket whose replica lags
// unread before it reads it all the same (caughtUp).
const lagPatience = 30 * time.Second

// readNode reads the last values of kv's keys under filter.
//
// Its watcher is made again when the bus does not answer its making
// within a try (watchTry, doubling to watchTryMax, within ctx): nats-server
// may place the watcher's consumer on a member that crashed and that the
// cluster still takes for online and caught up (for about 3 s after the
// crash), which never answers. Waited out whole, that held the reconnect's
// Sweep, and the fills after it, for its 10 s bound; a consumer made
// again goes to a live member.
func readNode(ctx context.Context, kv jetstream.KeyValue, filter string) (map[string][]byte, error) {
	var w jetstream.KeyWatcher
	var stop func()
	var err error
	for try := watchTry; ; try = min(2*try, watchTryMax) {
		w, stop, err = watchWithin(ctx, kv, filter, try)
		if !errors.Is(err, errWatchLate) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer stop()
	out := map[string][]byte{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("the watch ended")
			}
			if e == nil {
				return out, nil // every current key read
			}
			out[e.Key()] = e.Value()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// watchTry is how long readNode's first try waits for its watcher to be
// made (a few milliseconds on a healthy bus); the next tries wait twice as
// long, up to watchTryMax each (doubling further left a try sent just
// before a new leader came unanswered for seconds), within the sweep's
// bound. As inputs/bus's tries.
const (
	watchTry    = 250 * time.Millisecond
	watchTryMax = time.Second
)

// errWatchLate: the bus did not answer the making of a watcher in time.
var errWatchLate = errors.New("the watcher was not made in time")

// watchWithin makes a watcher of kv's keys under filter, or says
// errWatchLate when the bus did not answer within within. stop stops it.
func watchWithin(ctx context.Context, kv jetstream.KeyValue, filter string, within time.Duration) (jetstream.KeyWatcher, func(), error) {
	wctx, cancel := context.WithCancel(ctx)
	late := time.AfterFunc(within, cancel)
	w, err := kv.Watch(wctx, filter, jetstream.IgnoreDeletes())
	if !late.Stop() && ctx.Err() == nil {
		if err == nil {
			_ = w.Stop()
		}
		cancel()
		return nil, nil, errWatchLate
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return w, func() { _ = w.Stop(); cancel() }, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
