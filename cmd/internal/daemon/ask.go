package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
)

// lookupConfig is prov.ask's look-up (outputs/ask): in the loop, where the
// graph may be read. Until the assignments and config buckets are first
// read (a client just started, or started again), "not assigned" or "not
// resolved" may only mean not read yet: such an answer is looked for again
// until they are, within the ask's time, and said as the start's when it
// runs out. A tool runner that asks as the client starts is not told a
// module on the node is not assigned to it.
func (d *Daemon) lookupConfig(ctx context.Context, module, key string) (v []byte, assigned, found bool, err error) {
	for {
		var loaded, noPlan bool
		err = d.Do(ctx, func(m *nodes.NodeGraph) {
			loaded = d.baseLoaded()
			if assigned = m.HasModule(module); assigned {
				v, found = m.ConfigValue(module, key)
			}
			noPlan = m.AssignedWithoutPlan(module)
		})
		if err == nil && noPlan {
			err = nodes.ErrNoPlan // assigned, not the provisioner's: said so (outputs/ask)
		}
		if err != nil || found || loaded {
			return v, assigned, found, err
		}
		select {
		case <-ctx.Done():
			return nil, false, false, errors.New("it is starting: its first read of the assignments and config is not done yet; ask again")
		case <-time.After(20 * time.Millisecond):
		}
	}
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
