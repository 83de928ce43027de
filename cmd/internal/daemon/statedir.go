package daemon

import (
	"errors"
	"fmt"

	"github.com/novox/mesh-provisioner/outputs/dirlock"
)

// The state directory's lock file is dirlock.Name: nothing else of the
// daemon (the templates cache under templates/, removals.json,
// kept-plans.json) reads or removes it.

// StartError is an error of Run before it connects to anything: the state
// directory cannot be used, or another client holds it. The command exits
// 2 on it, as on a bad flag.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// lockStateDir takes dir (dirlock: made 0700, an exclusive flock of
// dir/lock), held until unlock. Two clients on one state directory (one
// --node started twice, or two nodes given one --state-dir) would share
// its cache and removals and both write the node's reports on the bus, the
// one that lost the race saying failed where the other said applied: the
// second is refused at once, before it connects. Taking it is also the
// start's check that dir is usable (not under a file, not read-only).
func lockStateDir(dir, node string) (*dirlock.Held, error) {
	held, err := dirlock.Hold(dir, "mesh-provisioner-client", "node "+node)
	if inUse := (*dirlock.InUseError)(nil); errors.As(err, &inUse) {
		return nil, &StartError{fmt.Errorf("%w: stop that one, or give this one another --state-dir", err)}
	}
	if err != nil {
		return nil, &StartError{fmt.Errorf("state dir %s cannot be used: %w", dir, err)}
	}
	return held, nil
}

// stateDirAgain takes the state directory again at the refill tick when it
// was removed while the client ran, saying so: its lock went with it, and
// a second client started on the path took it unsaid (an outside audit).
// What the client writes there (removals.json, kept-plans.json, the
// templates cache) is written again as it next changes.
func (d *Daemon) stateDirAgain() {
	remade, err := d.stateDir.Again()
	switch {
	case err != nil:
		d.log.Error().Err(err).Str("state_dir", d.cfg.StateDir).Msg("state dir gone while the client ran, and not taken again")
	case remade:
		d.log.Warn().Str("state_dir", d.cfg.StateDir).Msg("state dir gone while the client ran: made again and taken")
	}
}
