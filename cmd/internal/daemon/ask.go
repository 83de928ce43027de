package daemon

import (
	"context"

	"github.com/novox/mesh-provisioner/nodes"
)

// lookupConfig is prov.ask's look-up (outputs/ask): in the loop, where the
// graph may be read.
func (d *Daemon) lookupConfig(ctx context.Context, module, key string) (v []byte, assigned, found bool, err error) {
	err = d.Do(ctx, func(m *nodes.NodeGraph) {
		if assigned = m.HasModule(module); assigned {
			v, found = m.ConfigValue(module, key)
		}
	})
	return v, assigned, found, err
}
