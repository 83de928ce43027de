package daemon

import (
	"context"
	"time"
)

// firstLookWait bounds how long the first fill waits, once the base
// inputs are in, for the first answers of what they name (firstLooks): a
// vault that does not answer (its own timeout is 5 s by default), or an
// archive whose cached copy is damaged and is fetched again from its
// ref, holds up the node's first fill no longer than this.
const firstLookWait = 5 * time.Second

// firstLooks runs while the first load is not done, once the base
// buckets (assignments, registry, config) are read: it asks the vault for
// every secret the plans name and watches every provider bucket they
// read, as a batch after the load would, and says whether the first fill
// should still wait for their first answers, or for an archive read from
// memory or the state dir's cache (Fetcher.FetchingLocal).
//
// Without it the first fill of a client started again came before any of
// those answers: every module that reads a secret, a binding or an
// archive being read back was reported waiting ("vault …: not asked
// yet", "<provider>_bound …: not written yet" though it was) and its
// needs put as waiting, then, a moment later, applied and met again:
// two reports, two events and two writes of each need of modules that
// never moved (SPEC §5.2, §5.3), and the needs' entry times, by which
// the server's sweep judges "stood asked" (§6.2), reset. Each answer
// wakes the loop; the retry tick ends the wait after firstLookWait.
func (d *Daemon) firstLooks(ctx context.Context) bool {
	if d.baseLoadedAt.IsZero() {
		d.baseLoadedAt = time.Now()
	}
	for _, name := range d.mesh.TakeNewSecrets() {
		if d.mesh.WantsSecret(name) {
			d.asker.Ask(name, d.mesh.CredentialOf(name))
		}
	}
	d.syncBoundWatches(ctx)
	if time.Since(d.baseLoadedAt) >= firstLookWait {
		return false
	}
	// Asking counts an answer queued and not taken in yet.
	if d.fetcher.FetchingLocal() || d.asker.Asking() {
		return true
	}
	for b, ws := range d.watches {
		if !isBase(b) && !ws.loaded {
			return true
		}
	}
	return false
}
