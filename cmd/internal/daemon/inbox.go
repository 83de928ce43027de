package daemon

import (
	"errors"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus"
)

// checkInbox asks the bus whether this client's user may hear the node's
// replies (bus.HearsInbox), at start and each time the bus comes back: a
// user of another node (--node n9 with --user provisioner-n1) connects
// fine and has every request go unanswered. While it may not, /healthz
// and `status` say so as the reason it is not ready, and an error line
// said it once. Not a start error as a creds file's is: the bus's rights
// may be made right under a running client (a reload), and it then goes
// on by itself.
func (d *Daemon) checkInbox() {
	err := bus.HearsInbox(d.nc, d.cfg.Bus.User, bus.InboxPrefix(BusName(d.cfg.Node)), inboxCheckWait)
	var refused *bus.InboxRefusedError
	if !errors.As(err, &refused) {
		if d.inboxRefused.Swap(nil) != nil {
			d.log.Info().Msg("the bus lets this client hear the node's replies now")
		}
		return
	}
	why := refused.Error() + ": every request of this client goes unanswered"
	if d.inboxRefused.Swap(&why) == nil {
		d.log.Error().Str("node", d.cfg.Node).Msg(why)
	}
}

// inboxCheckWait bounds checkInbox's wait for the bus's answer.
const inboxCheckWait = 5 * time.Second
