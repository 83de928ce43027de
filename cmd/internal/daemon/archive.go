package daemon

import (
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
		d.mesh.ArchiveFailed(w.Module, w.Digest, r.Err.Error(), r.Tried)
	default:
		d.mesh.ArchiveWaiting(w.Module, w.Digest, r.Err.Error(), r.Tried)
	}
}
