package daemon

import (
	"context"
	"fmt"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes"
)

// watchState is one bucket watched, and the keys it last said exist.
type watchState struct {
	w      *bus.Watch
	cancel context.CancelFunc
	known  map[string]bool
	loaded bool // its first snapshot (or news of its absence) arrived
	// resyncing: the bus came back and this watch's fresh snapshot has not
	// arrived yet; the one full refill waits for every watch's.
	resyncing bool
}

func (d *Daemon) watch(ctx context.Context, bucket, filter string) {
	if d.watches[bucket] != nil {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	out := make(chan bus.Update, 64)
	w := bus.NewWatch(d.js, bucket, filter, out, d.log)
	w.Recheck = d.cfg.Recheck
	d.watches[bucket] = &watchState{w: w, cancel: cancel, known: map[string]bool{}}
	go w.Run(wctx)
	go func() {
		for {
			select {
			case u := <-out:
				d.send(wctx, busUpdate{u})
			case <-wctx.Done():
				return
			}
		}
	}()
}

// syncBoundWatches watches each provider bucket the plans read, for this
// node's keys, and stops watching those no plan reads any more.
func (d *Daemon) syncBoundWatches(ctx context.Context) {
	want := map[string]bool{}
	for _, b := range d.mesh.BoundBuckets() {
		want[b] = true
		d.watch(ctx, b, nodes.EncodeToken(d.cfg.Node)+".>")
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
	return bucket == nodes.AssignmentsBucket || bucket == nodes.RegistryBucket || bucket == nodes.ConfigBucket
}

// apply turns one watch update into changes of the mesh. A snapshot deletes
// what it no longer holds.
func (d *Daemon) apply(ctx context.Context, u bus.Update) {
	ws := d.watches[u.Bucket]
	if ws == nil {
		return // a watch stopped meanwhile
	}
	ws.loaded = true
	if u.Missing {
		for k := range ws.known {
			d.del(ctx, u.Bucket, k)
		}
		ws.known = map[string]bool{}
		d.missing(u.Bucket, true)
		return
	}
	if u.Snapshot {
		d.missing(u.Bucket, false) // a live update comes only after a snapshot
	}
	if u.Snapshot {
		now := map[string]bool{}
		for _, e := range u.Entries {
			now[e.Key] = true
		}
		for k := range ws.known {
			if !now[k] {
				d.del(ctx, u.Bucket, k)
			}
		}
		ws.known = now
		for _, e := range u.Entries {
			d.put(ctx, u.Bucket, e.Key, e.Value)
		}
		return
	}
	if len(u.Entries) != 1 {
		return
	}
	k := u.Entries[0].Key
	if u.Deleted {
		delete(ws.known, k)
		d.del(ctx, u.Bucket, k)
		return
	}
	ws.known[k] = true
	d.put(ctx, u.Bucket, k, u.Entries[0].Value)
}

func (d *Daemon) missing(bucket string, missing bool) {
	switch bucket {
	case nodes.RegistryBucket:
		d.mesh.RegistryBucketMissing(missing)
	case nodes.ConfigBucket:
		d.mesh.ConfigBucketMissing(missing)
	case nodes.AssignmentsBucket:
	default:
		d.mesh.BoundBucketMissing(bucket, missing)
	}
}

func (d *Daemon) put(ctx context.Context, bucket, key string, value []byte) {
	switch bucket {
	case nodes.AssignmentsBucket:
		if _, err := nodes.DecodeKey(key, 2); err != nil {
			d.outOfShape(bucket, key, err)
			return
		}
		if err := d.mesh.PutAssignment(key, value); err != nil {
			d.log.Warn().Str("bucket", bucket).Str("key", key).Err(err).Msg("assignment refused")
		}
	case nodes.RegistryBucket:
		kind, err := nodes.DecodeToken(key)
		if err != nil {
			d.outOfShape(bucket, key, err)
			return
		}
		d.mesh.PutRegistry(kind, value)
	case nodes.ConfigBucket:
		toks, err := nodes.DecodeKey(key, 3)
		if err != nil || toks[0] != d.cfg.Node {
			d.outOfShape(bucket, key, err)
			return
		}
		old, had := d.mesh.ConfigValue(toks[1], toks[2])
		d.mesh.PutConfig(key, value)
		if d.loaded && d.mesh.HasModule(toks[1]) && (!had || string(old) != string(value)) {
			d.changed(toks[1], toks[2])
		}
	default:
		toks, err := nodes.DecodeKey(key, -1)
		if err == nil && (len(toks) < 3 || len(toks) > 4) {
			err = fmt.Errorf("key %q has %d tokens, want 3 or 4 (node.module.provision[.local])", key, len(toks))
		}
		if err != nil {
			d.outOfShape(bucket, key, err)
			return
		}
		d.mesh.PutBound(bucket, key, value)
	}
}

func (d *Daemon) del(ctx context.Context, bucket, key string) {
	switch bucket {
	case nodes.AssignmentsBucket:
		had := false
		if toks, err := nodes.DecodeKey(key, 2); err == nil && toks[0] == d.cfg.Node {
			had = d.mesh.HasModule(toks[1])
			defer func() {
				if had && !d.mesh.HasModule(toks[1]) {
					d.out.Removed(ctx, toks[1])
				}
			}()
		}
		if err := d.mesh.DeleteAssignment(key); err != nil {
			d.outOfShape(bucket, key, err)
		}
	case nodes.RegistryBucket:
		if kind, err := nodes.DecodeToken(key); err == nil {
			d.mesh.DeleteRegistry(kind)
		}
	case nodes.ConfigBucket:
		toks, err := nodes.DecodeKey(key, 3)
		if err != nil || toks[0] != d.cfg.Node {
			return
		}
		d.mesh.DeleteConfig(key)
		if d.loaded && d.mesh.HasModule(toks[1]) {
			d.changed(toks[1], toks[2])
		}
	default:
		d.mesh.DeleteBound(bucket, key)
	}
}

func (d *Daemon) outOfShape(bucket, key string, err error) {
	msg := "key out of shape: ignored for filling"
	if err == nil {
		msg = "key for another node: ignored"
	}
	d.log.Warn().Str("bucket", bucket).Str("key", key).AnErr("why", err).Msg(msg)
}

func (d *Daemon) changed(module, key string) {
	if err := d.out.Changed(module, "config", key); err != nil {
		d.log.Warn().Err(err).Str("module", module).Msg("prov.changed not published")
	}
}
