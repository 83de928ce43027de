package fill

import (
	"errors"
	"fmt"

	"github.com/novox/mesh-provisioner/outputs/dirlock"
)

// lockStateDir takes dir (made 0700 when missing) for this process until
// unlock (dirlock: an exclusive flock of dir/lock, not waited for). Two
// mesh-fills on one state dir would each keep a ledger of its own: both
// would take one path, and a DELETE of a module through one would remove
// a file the other's module holds. The ledger reads module-*.json and
// pending-*.json files alone, so the lock file is never taken for a state
// file.
func lockStateDir(dir string) (unlock func(), err error) {
	unlock, err = dirlock.Take(dir, "mesh-fill", "")
	if inUse := (*dirlock.InUseError)(nil); errors.As(err, &inUse) {
		return nil, fmt.Errorf("%w: two on one state dir would take each other's files; "+
			"stop that one, or give this one another --state-dir", err)
	}
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	return unlock, nil
}
