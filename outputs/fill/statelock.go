package fill

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/novox/mesh-provisioner/outputs/dirlock"
)

// lockStateDir takes dir (made 0700 when missing) for this process until
// unlock (dirlock: an exclusive flock of dir/lock, not waited for). Two
// mesh-fills on one state dir would each keep a ledger of its own: both
// would take one path, and a DELETE of a module through one would remove
// a file the other's module holds. The holder writes its pid in the lock
// file, for the message of the next to try. The ledger reads
// module-*.json and pending-*.json files alone, so the lock file is never
// taken for a state file.
func lockStateDir(dir string) (unlock func(), err error) {
	unlock, err = dirlock.Take(dir, []byte(strconv.Itoa(os.Getpid())+"\n"))
	var inUse *dirlock.InUseError
	if errors.As(err, &inUse) {
		return nil, fmt.Errorf("state dir %s is in use by another mesh-fill (%s): two on one state dir would take each other's files; "+
			"stop that one, or give this one another --state-dir", dir, holder(inUse.Note))
	}
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	return unlock, nil
}

// holder says which process holds the lock, from the pid in its note.
func holder(note []byte) string {
	if pid, err := strconv.Atoi(strings.TrimSpace(string(note))); err == nil && pid > 0 {
		return "pid " + strconv.Itoa(pid)
	}
	return "pid not written yet"
}
