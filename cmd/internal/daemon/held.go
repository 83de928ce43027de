package daemon

import (
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The assignments bucket missing, or refused to this client, says nothing
// of what is assigned. SPEC §2.2 has a missing bucket waited for, and a
// bucket deleted by mistake (or a right taken by mistake) must not take
// every module off the node: the client would tell the node-engine to
// remove every file and publish every module removed. So its watch keeps
// what the bucket held (bus.Watch.KeepWhileUnread) until it is read again,
// whose snapshot then says which keys are gone. Until the bucket is first
// read the client is not ready (healthz says why), and the start-time
// clean-up of §4.7 waits for it: with no assignments read, every key the
// node wrote would look like a module's that left.

// assignmentsUnread says whether u says the assignments bucket cannot be
// read: missing, or refused.
func assignmentsUnread(u bus.Update) bool {
	return u.Bucket == spec.AssignmentsBucket && (u.Missing || u.NotPermitted)
}

// hold says why the assignments bucket cannot be read (healthz, status)
// and, when it was read before (wasRead), that its modules are kept.
func (d *Daemon) hold(u bus.Update, wasRead bool) {
	why := "the assignments bucket is not there"
	if u.NotPermitted {
		why = "the bus refuses this client the assignments bucket"
	}
	d.unread.Store(&why)
	if !wasRead {
		// prov.ask's why (ask.go), in the words of SPEC §4.6 and of
		// explain for any other bucket.
		d.assignmentsNeverRead = "bucket " + spec.AssignmentsBucket + " does not exist yet"
		if u.NotPermitted {
			d.assignmentsNeverRead = nodes.NotPermittedWhy(spec.AssignmentsBucket)
		}
	}
	if wasRead {
		d.log.Warn().Str("why", why).
			Msg("every module is kept as it is until the assignments bucket can be read again")
	}
}
