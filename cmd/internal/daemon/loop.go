package daemon

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes"
)

// maxBatch bounds how many events one stabilization takes in, so a flood
// of changes still gets filled now and then.
const maxBatch = 20000

// loop owns the mesh: it takes every event waiting as one batch, then
// stabilizes once and acts on what changed.
//
// The retry tick (every Recheck) sleeps while the daemon is at rest
// (atRest): a tick that finds nothing to do stops it, and the next batch
// arms it again, so that what that batch leaves to retry is retried a
// Recheck later, as before. Each tick woke an idle client, and on a guest
// where a wake-up costs ~0.5 ms of CPU (the runtime's sysmon wakes with
// it, twice) it was a fifth of an idle 100k-file node's CPU (issue 20).
// Nothing at rest can need the tick until a batch, or a report put's ack
// (awaited, it keeps the daemon from being at rest), changes that.
func (d *Daemon) loop(ctx context.Context) error {
	refill := time.NewTicker(d.cfg.Refill)
	defer refill.Stop()
	retry := time.NewTicker(d.cfg.Recheck)
	defer retry.Stop()
	d.ticking = true
	for {
		full, retrying := false, false
		select {
		case <-ctx.Done():
			return nil
		case err := <-d.closed:
			return busClosed(ctx, err)
		case u := <-d.updates:
			full = d.update(ctx, u)
			full = d.drain(ctx) || full
		case ev := <-d.events:
			d.handle(ev)
			full = d.drain(ctx)
		case a := <-d.asker.Answers():
			d.onVault(a)
			full = d.drain(ctx)
		case r := <-d.fetcher.Fetched():
			d.onArchive(r)
			full = d.drain(ctx)
		case dn := <-d.out.Back():
			d.out.Land(dn) // reported (and sent again when touched meanwhile) by afterBatch's Send
			full = d.drain(ctx)
		case <-refill.C:
			full = true
			d.out.CheckOutputs(ctx) // an output bucket deleted or purged: this full send writes it again
			d.saidHeldAll()         // keys out of shape held back: counted (watch.go)
			d.stateDirAgain()       // removed while the client ran: taken again (statedir.go)
		case <-retry.C:
			retrying = true
		case <-d.out.HoldC():
			d.out.Woke() // held modules now due: afterBatch takes them
		}
		d.afterBatch(ctx, full, retrying)
		d.runCalls()
		switch {
		case retrying && d.atRest():
			retry.Stop()
			d.ticking = false
		case !retrying && !d.ticking:
			retry.Reset(d.cfg.Recheck)
			d.ticking = true
		}
	}
}

// atRest says the retry tick has nothing to do: the first load is settled,
// no watch is resyncing, and the output stage is at rest (stage.AtRest).
func (d *Daemon) atRest() bool {
	return d.settled && !d.resyncPending() && d.out.AtRest() && !d.mesh.ConsumersHeld() && !d.mesh.UnreadHeld()
}

// busClosed is what Run returns when the connection closed for good: nil
// when the daemon is stopping, else an error, so the process exits non-zero
// and its supervisor starts it again (nothing reconnects a closed
// connection; sitting idle would leave the node cut off for ever).
func busClosed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	reason := "closed with no error"
	if err != nil {
		reason = err.Error()
	}
	return fmt.Errorf("bus connection closed: %s", reason)
}

// drain takes in what else is waiting, up to maxBatch in all; it says
// whether every file must be sent again.
func (d *Daemon) drain(ctx context.Context) (full bool) {
	for n := 1; n < maxBatch; n++ {
		select {
		case u := <-d.updates:
			full = d.update(ctx, u) || full
		case ev := <-d.events:
			d.handle(ev)
		case a := <-d.asker.Answers():
			d.onVault(a)
		case r := <-d.fetcher.Fetched():
			d.onArchive(r)
		case dn := <-d.out.Back():
			d.out.Land(dn)
		default:
			return full
		}
	}
	return full
}

// update applies one watch's update; it says whether every file must be
// sent again.
func (d *Daemon) update(ctx context.Context, u bus.Update) bool {
	d.apply(ctx, u)
	if ws := d.watches[u.Bucket]; ws != nil && ws.resyncing && (u.Snapshot || u.Missing || u.NotPermitted) {
		ws.resyncing = false
		return !d.resyncPending() // one full refill once every watch has answered
	}
	return u.Snapshot && d.ready.Load() && !d.resyncPending()
}

// handle applies one event.
func (d *Daemon) handle(ev event) {
	switch e := ev.(type) {
	case secretChanged:
		if d.mesh.WantsSecret(e.name) {
			if d.asker.Fresh(e.name, d.mesh.CredentialOf(e.name)) { // one line per ask, not per event: a storm of them is not a log's
				d.log.Info().Str("secret", e.name).Msg("the vault says a secret changed: asking again")
			}
		} else {
			d.mesh.ForgetSecret(e.name) // held for a module between archives: ask anew when read again
		}
	case reconnected:
		d.log.Info().Msg("the bus is back: reading every input again")
		go d.inbox.Check(d.nc)
		d.out.Forget()
		d.sweepAgain = !d.ready.Load() // the first fill may wait for a Sweep (stage.ReadingBack)
		for _, ws := range d.watches {
			ws.w.Resync()
			ws.resyncing = d.ready.Load()
		}
		// A secret-changed published while the bus was away is lost: ask
		// again for every name read (a value that did not move is cut off),
		// and forget those held that no file reads (between two archives),
		// so that the next file reading one asks again.
		d.asker.Reask(d.cfg.ReaskSpread, d.mesh.WantsSecret)
		// Consumers lists keep their value until their credentials are
		// answered again: one fill for what moved while away.
		d.mesh.ReaskRound(time.Now().Add(d.cfg.ReaskSpread + nodes.FirstConsumersWait))
		d.mesh.ForgetUnreadSecrets()
	case call:
		d.calls = append(d.calls, e) // run after the batch: they read a stabilized graph
	}
}

// afterBatch stabilizes and acts: new secrets asked, archives fetched,
// provider buckets watched, changed modules filled and reported.
func (d *Daemon) afterBatch(ctx context.Context, full, retrying bool) {
	if !d.ready.Load() {
		// The templates archives the plans name are fetched while the
		// rest of the initial load comes in: a node's config snapshot
		// (tens of thousands of keys) is decoded after its assignments,
		// and the loop would wait for it idle before building the files
		// (issue 20).
		d.fetchArchives()
		for b, ws := range d.watches {
			if isBase(b) && !ws.loaded {
				return // no fill before the initial load is complete
			}
		}
		if d.firstLooks(ctx) {
			return // what the first fill reads beyond the base is on its way (firstlooks.go)
		}
		sweep := retrying || d.sweepAgain
		d.sweepAgain = false
		if d.out.ReadingBack(ctx, d.mesh.HasModule, sweep) {
			return // what the last run left is not all read back yet (outputs/stage/readback.go)
		}
		d.ready.Store(true)
		full = true
		d.onLoaded(ctx)
	}
	// What no plan reads any more is asked and fetched no more; a secret
	// held for a module between two templates archives is kept (forgotten
	// on a reconnect, and so asked again when a file reads it).
	d.asker.Retain(func(n string) bool { return d.mesh.WantsSecret(n) || d.mesh.HoldsSecret(n) })
	d.fetcher.Retain(d.mesh.KeepsArchive)
	for _, name := range d.mesh.TakeNewSecrets() {
		if d.mesh.WantsSecret(name) {
			d.asker.Ask(name, d.mesh.CredentialOf(name))
		}
	}
	d.fetchArchives()
	d.syncBoundWatches(ctx)
	// A path the node-engine said another module holds (its 409) is that
	// module's in the mesh's order of claims too (nodes/clash.go).
	d.mesh.Holds(d.out.Holders())
	start := time.Now()
	d.mesh.ReleaseDue(start) // consumers lists held for the vault's answers past their time
	touched := d.mesh.Stabilize()
	d.metrics.Stabilized(time.Since(start))
	if kept, moved := d.mesh.KeptPlans(); moved {
		d.out.KeepPlans(kept) // for the next start (nodes/keptplans.go)
	}
	if full {
		// After the bus came back (Forget), what the buckets hold is read
		// first, so a need or report that did not change is not put again:
		// a need's entry time is when it began to wait (the server's sweep
		// reads it), and an unchanged report is no event (SPEC §5.3, §6.2).
		d.out.Sweep(ctx, d.mesh.HasModule)
		touched = d.mesh.Modules()
	} else if retrying {
		d.out.Sweep(ctx, d.mesh.HasModule)
		d.out.RetryRemovals(ctx)
		// What this batch's stabilisation moved too: a consumers list
		// let go at the tick (ReleaseDue) is filled now, not at the next
		// change.
		touched = append(touched, d.out.Retrying()...)
		slices.Sort(touched)
		touched = slices.Compact(touched)
	}
	// A module reading a provider's bucket not read yet waits for it
	// (nodes.HoldUnread; unreadheld.go).
	touched = d.mesh.HoldUnread(touched, d.firstReadAwaited)
	// A retry sends only what was not filled yet (a fill that failed left
	// its digests unrecorded); a write to the bus that failed sends no file.
	d.out.Send(ctx, d.mesh, touched, full)
	if retrying {
		d.out.FlushNeeds(ctx, true)
	}
	if !d.settled && !d.out.Pending() && !d.asker.Asking() && !d.fetcher.Fetching() && !d.mesh.UnreadHeld() {
		d.settled = true
		if d.cfg.OnSettled != nil {
			d.cfg.OnSettled()
		}
	}
}

// fetchArchives fetches the templates archives newly named by a plan.
func (d *Daemon) fetchArchives() {
	for _, w := range d.mesh.TakeNewArchives() {
		if d.mesh.WantsArchive(w) {
			d.fetcher.Fetch(w)
		}
	}
}

// onLoaded runs once the first snapshots are in: it says every module's
// config may have moved, and deletes what this node wrote of modules no
// longer here (SPEC §4.7 r2).
func (d *Daemon) onLoaded(ctx context.Context) {
	d.log.Info().Int("modules", len(d.mesh.Modules())).Dur("after", time.Since(d.startedAt)).Msg("initial load done")
	for _, m := range d.mesh.Modules() {
		if err := d.out.Changed(m, "config", ""); err != nil {
			d.log.Warn().Err(err).Msg("prov.changed not published")
		}
	}
	d.out.Sweep(ctx, d.mesh.HasModule) // the retry tick tries again until it holds
	// Before the first stabilization: a path two modules claim stays with
	// the one that held it in the last run (nodes/clash.go). What the
	// start's Sweeps read back (stage.ReadingBack waited for it).
	d.mesh.HeldBefore(d.out.HeldBefore())
	// And a module whose plan does not parse holds the items the last run
	// recorded, so its collectors' files stay as they are (nodes/helditems.go).
	d.mesh.ItemsBefore(d.out.ItemsBefore())
}

// resyncPending says whether a watch has yet to answer the Resync asked
// when the bus came back.
func (d *Daemon) resyncPending() bool {
	for _, ws := range d.watches {
		if ws.resyncing {
			return true
		}
	}
	return false
}
