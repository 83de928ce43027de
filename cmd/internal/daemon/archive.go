package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/novox/mesh-provisioner/inputs/archive"
	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/nodes"
)

type archiveResult struct {
	want    nodes.ArchiveWant
	members map[string][]byte
	err     error
	attempt int
}

type fetchAgain struct {
	want    nodes.ArchiveWant
	attempt int
}

// fetch gets a module's templates archive in the background.
func (d *Daemon) fetch(ctx context.Context, w nodes.ArchiveWant, attempt int) {
	if !d.mesh.WantsArchive(w.Module, w.Digest) {
		return
	}
	go func() {
		members, err := d.store.Get(ctx, w.Ref, w.Digest)
		d.send(ctx, archiveResult{want: w, members: members, err: err, attempt: attempt})
	}()
}

// onArchive: a usable archive builds the module's files; a broken one
// fails the module; one not there yet (or a bus that did not answer) is
// waited for and fetched again with backoff.
func (d *Daemon) onArchive(ctx context.Context, r archiveResult) {
	w := r.want
	switch {
	case r.err == nil:
		d.mesh.SetArchive(w.Module, w.Digest, r.members)
	case errors.Is(r.err, archive.ErrDigestMismatch), errors.Is(r.err, archive.ErrUnsafeMember), errors.Is(r.err, archive.ErrLimit):
		d.mesh.ArchiveFailed(w.Module, w.Digest, r.err.Error())
	default:
		d.mesh.ArchiveWaiting(w.Module, w.Digest, r.err.Error())
		b := backoff.Doubling{Min: d.cfg.BackoffMin, Max: d.cfg.BackoffMax}
		time.AfterFunc(b.Next(r.attempt), func() { d.send(ctx, fetchAgain{want: w, attempt: r.attempt + 1}) })
	}
}
