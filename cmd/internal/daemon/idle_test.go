package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
)

// idle says, from the loop goroutine (so it reads the loop's own state
// without a race), whether d has nothing to do: no event queued, no vault
// ask under way and no answer or archive waiting, no output pending (a
// module held by the fill gap, needs not written yet). The fills of a
// batch are done before Do's call runs.
func (d *Daemon) idle(ctx context.Context) bool {
	var idle bool
	err := d.Do(ctx, func(*nodes.NodeGraph) {
		idle = len(d.updates) == 0 && len(d.events) == 0 && len(d.asker.Answers()) == 0 && len(d.fetcher.Fetched()) == 0 &&
			!d.asker.Asking() && !d.out.Pending() && !d.mesh.UnreadHeld()
	})
	return err == nil && idle
}

// started is a client the test started, and what is closed once it has
// stopped.
type started struct {
	d    *Daemon
	done <-chan struct{}
}

// settleChecks is how many times in a row a daemon must be seen idle, Poll
// apart: a write of its own (an item, a report) comes back to it through
// the bus as a watch update a moment after it was idle.
const settleChecks = 3

// settle waits until every client of the test is idle: what a test waits
// for before saying that something did NOT happen (no further fill, no
// further ask, no write).
func (m *mesh) settle() {
	m.t.Helper()
	for _, c := range m.daemons {
		select {
		case <-c.done:
			continue // stopped
		default:
		}
		d, seen := c.d, 0
		bustest.Eventually(m.t, 10*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if !d.idle(ctx) {
				seen = 0
				return errors.New("the client is still busy")
			}
			if seen++; seen < settleChecks {
				return fmt.Errorf("idle %d times in a row, want %d", seen, settleChecks)
			}
			return nil
		})
	}
}
