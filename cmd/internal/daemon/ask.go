package daemon

import (
	"context"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/ask"
)

// lookupConfig is prov.ask's look-up (outputs/ask): in the loop, where the
// graph may be read. Until the assignments and config buckets are first
// read, a "not assigned" or "not resolved" is ask.ErrNotLoaded (asked
// again by outputs/ask).
func (d *Daemon) lookupConfig(ctx context.Context, module, key string) (v []byte, assigned, found bool, err error) {
	var loaded, noPlan bool
	var unread, neverRead string
	err = d.Do(ctx, func(m *nodes.NodeGraph) {
		loaded, neverRead = d.baseLoaded(), d.assignmentsNeverRead
		if assigned = m.HasModule(module); assigned {
			v, found = m.ConfigValue(module, key)
		}
		noPlan = m.AssignedWithoutPlan(module)
		unread = m.ConfigUnreadable()
	})
	switch {
	case err != nil:
		return nil, false, false, err
	case noPlan:
		return nil, assigned, false, nodes.ErrNoPlan // assigned, not the provisioner's: said so (outputs/ask)
	case !loaded && neverRead != "":
		return nil, false, false, &ask.AssignmentsUnreadable{Why: neverRead} // not "starting": it may never be read (outputs/ask)
	case !found && !loaded:
		return nil, false, false, ask.ErrNotLoaded
	case assigned && !found && unread != "":
		return nil, assigned, false, &ask.Unreadable{Why: unread} // not "not resolved" (outputs/ask)
	}
	return v, assigned, found, nil
}

// baseLoaded says the assignments, registry and config buckets were each
// read whole once (or found missing); in the loop.
func (d *Daemon) baseLoaded() bool {
	if d.ready.Load() {
		return true
	}
	for b, ws := range d.watches {
		if isBase(b) && !ws.loaded {
			return false
		}
	}
	return len(d.watches) > 0
}
