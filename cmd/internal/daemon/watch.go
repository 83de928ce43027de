package daemon

import (
	"context"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// watchState is one bucket watched.
type watchState struct {
	w      *bus.Watch
	cancel context.CancelFunc
	loaded bool      // its first snapshot (or news of its absence) arrived
	since  time.Time // when it was made (holdUnread)
	// resyncing: the bus came back and this watch's fresh snapshot has not
	// arrived yet; the one full refill waits for every watch's.
	resyncing bool
}

func (d *Daemon) watch(ctx context.Context, bucket, filter string) {
	if d.watches[bucket] != nil {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	// Every watch delivers to the loop's one channel of updates, each
	// naming its bucket: no goroutine hands them on (issue 20). An update
	// of a watch stopped meanwhile is dropped by apply.
	w := bus.NewWatch(d.js, bucket, filter, d.updates, d.log)
	w.Recheck = d.cfg.Recheck
	w.KeepWhileUnread = bucket == spec.AssignmentsBucket // held.go
	if bucket == spec.AssignmentsBucket {
		// Of another node's plan only what binds and offers is read:
		// the first snapshot keeps that much of each (nodes/shrinkplans.go).
		w.Shrink = nodes.ShrinkOthersPlans(d.cfg.Node)
	}
	d.watches[bucket] = &watchState{w: w, cancel: cancel, since: time.Now()}
	go w.Run(wctx)
}

// syncBoundWatches watches each provider bucket the plans read, for this
// node's keys, and stops watching those no plan reads any more.
func (d *Daemon) syncBoundWatches(ctx context.Context) {
	want := map[string]bool{}
	for _, b := range d.mesh.BoundBuckets() {
		want[b] = true
		d.watch(ctx, b, spec.EncodeToken(d.cfg.Node)+".>")
	}
	for b, ws := range d.watches {
		if isBase(b) || want[b] {
			continue
		}
		ws.cancel()
		delete(d.watches, b)
		d.mesh.ForgetBound(b) // a later watch starts from its own snapshot
	}
}

func isBase(bucket string) bool {
	return bucket == spec.AssignmentsBucket || bucket == spec.RegistryBucket || bucket == spec.ConfigBucket
}

// apply hands one watch update to the mesh, key by key, and acts on what
// each changed. A snapshot or a missing bucket says which keys are gone.
func (d *Daemon) apply(ctx context.Context, u bus.Update) {
	ws := d.watches[u.Bucket]
	if ws == nil {
		return // a watch stopped meanwhile
	}
	if assignmentsUnread(u) {
		d.hold(u, ws.loaded) // nothing taken off the node, and not loaded: held.go
		d.mesh.BucketNotPermitted(u.Bucket, u.NotPermitted)
		return
	}
	first := !ws.loaded
	ws.loaded = true
	if u.Bucket == spec.AssignmentsBucket && u.Snapshot {
		d.unread.Store(nil) // read: its Gone says what went meanwhile
		d.assignmentsNeverRead = ""
	}
	if u.Snapshot || u.Missing {
		d.mesh.BucketNotPermitted(u.Bucket, false) // it was read, or looked up
	}
	if u.Snapshot {
		d.mesh.BucketMissing(u.Bucket, false) // a live update comes only after a snapshot
	}
	removed := 0
	for _, k := range u.Gone {
		c := d.mesh.Delete(u.Bucket, k)
		if c.Removed != "" {
			removed++
		}
		d.act(ctx, u.Bucket, k, c, false)
	}
	if removed > 1 {
		// Each module removed is logged at info; modules going together
		// when the bucket is read again (made again empty, purged) are
		// worth an operator's eye, once.
		d.log.Warn().Str("bucket", u.Bucket).Int("modules", removed).
			Msg("several modules taken off this node at once: the bucket, read again, no longer names them")
	}
	switch {
	case u.Missing:
		d.mesh.BucketMissing(u.Bucket, true)
	case u.NotPermitted:
		d.mesh.BucketNotPermitted(u.Bucket, true)
	case u.Snapshot:
		for _, e := range u.Entries {
			d.act(ctx, u.Bucket, e.Key, d.mesh.Put(u.Bucket, e.Key, e.Value), false)
		}
	case len(u.Entries) != 1:
	case u.Deleted:
		d.act(ctx, u.Bucket, u.Entries[0].Key, d.mesh.Delete(u.Bucket, u.Entries[0].Key), true)
	default:
		d.act(ctx, u.Bucket, u.Entries[0].Key, d.mesh.Put(u.Bucket, u.Entries[0].Key, u.Entries[0].Value), true)
	}
	if first && !isBase(u.Bucket) {
		d.mesh.BucketRead(u.Bucket) // what it holds is known now (nodes/boundread.go)
	}
	if u.Snapshot {
		d.saidHeld(u.Bucket)
	}
}

// act does what a change of the mesh asks of the daemon: a key ignored or
// a plan refused is logged, a config value that moved after the initial
// load is announced, as is a module assigned or taken off after it; a
// module taken off the node is cleaned up after. live: the change came
// as it was made, not in a (re-)read of the bucket.
func (d *Daemon) act(ctx context.Context, bucket, key string, c nodes.Change, live bool) {
	switch {
	case c.OutOfShape != nil && c.OtherNode:
		// Another node's assignments key: every client of the mesh reads
		// it, so it is its own node's client's to warn of.
		d.log.Debug().Str("bucket", bucket).Str("key", key).AnErr("why", c.OutOfShape).Msg("key out of shape, another node's: ignored")
	case c.OutOfShape != nil || c.Foreign:
		d.outOfShape(bucket, key, c.OutOfShape)
	case c.Refused != nil:
		// A plan's reason may quote its fields (an answered_by, a placement
		// kind): cut, as in the report. This node's module says it as its
		// state changes (outputs/stage, a warning: SPEC §5.1, one event per
		// state change, where this said it again at each re-read); another
		// node's is its client's to say (a warning on every node of the
		// fleet otherwise): debug here.
		d.log.Debug().Str("bucket", bucket).Str("key", key).Str("error", report.Bound(c.Refused.Error())).Msg("assignment refused")
	case c.NoPlan:
		d.log.Debug().Str("bucket", bucket).Str("key", key).Msg(`assignment without "provisioning": not the provisioner's, ignored`)
	}
	if c.ConfigModule != "" && d.ready.Load() {
		d.changed(c.ConfigModule, c.ConfigKey)
	}
	if c.Added != "" && d.ready.Load() {
		d.changed(c.Added, "") // a tool runner told "not assigned" asks again (SPEC §5.4 r2)
	}
	if (c.Assigned != "" || len(c.Pairs) > 0) && d.asker != nil {
		// A re-read (the bus back) wrote nothing: asked again all the same
		// (it may have been put meanwhile), within the reconnect's spread
		// (every client of a mesh reads at once: SPEC §4.2 r2), said at
		// debug level, where it was an info line per module at every
		// reconnect (SPEC §5.1).
		ev, spread := d.log.Info, time.Duration(0)
		if !live {
			ev, spread = d.log.Debug, d.cfg.ReaskSpread
		}
		own, paired := d.asker.AssignmentWritten(c.Assigned, c.Pairs, spread)
		if own > 0 {
			ev().Str("module", c.Assigned).Int("names", own).Msg("assignment written: the vault asked again for what it refused")
		}
		if paired > 0 {
			ev().Str("bucket", bucket).Str("key", key).Int("names", paired).
				Msg("consumer's assignment written: the vault asked again for the consumer credentials it refused")
		}
	}
	if c.Removed != "" {
		d.out.Removed(ctx, c.Removed)
		// Said before the first fill too: one taken off while the first
		// fill waits for the vault or a provider bucket (firstlooks.go, up
		// to seconds) has its report and keys deleted now, so the start's
		// Sweep finds nothing of it to say gone, and a tool runner told it
		// was assigned before the restart would never hear it left.
		if err := d.out.Gone(c.Removed); err != nil {
			d.log.Warn().Err(err).Str("module", c.Removed).Msg("prov.changed not published")
		}
	}
}

// outOfShape warns of a key ignored, at most ten a minute for each bucket:
// whoever writes the bucket may write thousands (bus.WarnLimit), and one
// bucket's flood hides no other's. In the loop.
func (d *Daemon) outOfShape(bucket, key string, err error) {
	ok, held := d.shapeWarns.Allow(bucket)
	if !ok {
		return
	}
	msg := "key out of shape: ignored for filling"
	if err == nil {
		msg = "key for another node: ignored"
	}
	ev := d.log.Warn().Str("bucket", bucket).Str("key", key).AnErr("why", err)
	if held > 0 {
		ev = ev.Int("not_logged_before", held)
	}
	ev.Msg(msg)
}

// saidHeld says how many warnings of keys out of shape in bucket were held
// back and not said yet: at the end of a bucket's read, after which no
// next warning may come to carry the count.
func (d *Daemon) saidHeld(bucket string) {
	if n := d.shapeWarns.TakeHeld(bucket); n > 0 {
		d.log.Warn().Str("bucket", bucket).Int("keys", n).Msg("more keys out of shape: ignored for filling, not logged one by one")
	}
}

// saidHeldAll is saidHeld for every bucket watched: at the refill tick, so
// a flood of keys out of shape written while the client runs is counted
// within a tick of it.
func (d *Daemon) saidHeldAll() {
	for b := range d.watches {
		d.saidHeld(b)
	}
}

func (d *Daemon) changed(module, key string) {
	if err := d.out.Changed(module, "config", key); err != nil {
		d.log.Warn().Err(err).Str("module", module).Msg("prov.changed not published")
	}
}
