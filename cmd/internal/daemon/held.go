package daemon

import (
	"slices"
	"strings"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The assignments bucket missing, or refused to this client, says nothing
// of what is assigned. SPEC §2.2 has a missing bucket waited for, and a
// bucket deleted by mistake (or a right taken by mistake) must not take
// every module off the node: the client would tell the node-engine to
// remove every file and publish every module removed. So what the bucket
// held is kept as it was until it is read again; the snapshot of it read
// then says which of the kept keys are gone. Until the bucket is first
// read the client is not ready (healthz says why), and the start-time
// clean-up of §4.7 waits for it: with no assignments read, every key the
// node wrote would look like a module's that left.

// heldAssignments is the assignments keys kept while the bucket could not
// be read (a set; nil when none is held).
type heldAssignments map[string]struct{}

// assignmentsUnread says whether u says the assignments bucket cannot be
// read: missing, or refused.
func assignmentsUnread(u bus.Update) bool {
	return u.Bucket == spec.AssignmentsBucket && (u.Missing || u.NotPermitted)
}

// hold keeps the assignments keys u says are gone, instead of taking their
// modules off the node.
func (d *Daemon) hold(u bus.Update) {
	why := "the assignments bucket is not there"
	if u.NotPermitted {
		why = "the bus refuses this client the assignments bucket"
	}
	d.unread.Store(&why)
	if len(u.Gone) == 0 {
		return
	}
	if d.held == nil {
		d.held = heldAssignments{}
	}
	for _, k := range u.Gone {
		d.held[k] = struct{}{}
	}
	d.log.Warn().Str("why", why).Int("assignments", len(d.held)).
		Msg("every module is kept as it is until the assignments bucket can be read again")
}

// released is what a snapshot of the assignments bucket says is gone: its
// own Gone, and each key held while it could not be read that it does not
// hold (its Entries are sorted by key).
func (d *Daemon) released(u bus.Update) []string {
	d.unread.Store(nil)
	if len(d.held) == 0 {
		return u.Gone
	}
	gone := slices.Clone(u.Gone)
	for k := range d.held {
		if _, found := slices.BinarySearchFunc(u.Entries, k, func(e bus.Entry, k string) int {
			return strings.Compare(e.Key, k)
		}); !found {
			gone = append(gone, k)
		}
	}
	d.held = nil
	slices.Sort(gone)
	return slices.Compact(gone)
}
