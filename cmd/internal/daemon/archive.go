package daemon

import (
	"time"

	"github.com/novox/mesh-provisioner/inputs/archive"
)

// onArchive: a usable archive builds the module's files; a broken one
// (its digest not the plan's, an unsafe member, over a limit) fails the
// module with the reason; one not there yet (or a bus that did not answer)
// is waited for. Either way the fetcher fetches it again on its own, with
// backoff: the right bytes may land at the same ref later, and the module
// then proceeds with no new plan.
func (d *Daemon) onArchive(r archive.Fetched) {
	w := r.Want
	switch {
	case r.Err == nil:
		d.mesh.SetArchive(w.Module, w.Digest, r.Members)
	case archive.Broken(r.Err):
		d.mesh.ArchiveFailed(w.Module, w.Digest, r.Err.Error())
	default:
		d.mesh.ArchiveWaiting(w.Module, w.Digest, r.Err.Error())
	}
}

// firstFetchWait bounds how long the first load, once its watches have
// answered, waits for the first tries of the templates archives its plans
// name (a variable for a test to change).
var firstFetchWait = 2 * time.Second

// awaitFirstFetches says whether the first load should wait on for the
// archives' first tries. An archive the state dir's cache holds comes in
// milliseconds after its plan: filling before it would report every
// module "waiting" for it and delete its needs, then put both back a
// moment later, at every restart, though nothing moved (an event per
// module for whoever listens, and every need's entry time, which the
// server's sweep reads for "stood asked", made new: SPEC §5.2, §5.3,
// §6.2). A source that does not answer holds the load up no longer than
// firstFetchWait from when the watches had all answered.
func (d *Daemon) awaitFirstFetches() bool {
	if !d.fetcher.Fetching() {
		return false
	}
	if d.loadedAt.IsZero() {
		d.loadedAt = time.Now()
	}
	return time.Since(d.loadedAt) < firstFetchWait
}
