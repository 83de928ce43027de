package fill

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockName is the state dir's lock file; the ledger reads module-*.json
// files alone, so it is never taken for a state file.
const lockName = "lock"

// lockStateDir takes dir (made 0700 when missing) for this process until
// unlock: an exclusive flock of its lock file, not waited for. Two
// mesh-fills on one state dir would each keep a ledger of its own: both
// would take one path, and a DELETE of a module through one would remove
// a file the other's module holds. The lock is the flock, which the
// kernel lets go when the process ends however it ends, not the file's
// being there: a lock file left by a crash blocks nothing. The holder
// writes its pid in the file, for the message of the next to try.
func lockStateDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	p := filepath.Join(dir, lockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state dir %s: opening its lock file: %w", dir, err)
	}
	err = ignoringEINTR(func() error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) })
	if errors.Is(err, unix.EWOULDBLOCK) {
		defer f.Close()
		return nil, fmt.Errorf("state dir %s is in use by another mesh-fill (%s): two on one state dir would take each other's files; "+
			"stop that one, or give this one another --state-dir", dir, holder(f))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("state dir %s: locking %s: %w", dir, p, err)
	}
	if err := f.Truncate(0); err == nil { // the pid is for messages: no failure to write it stops a start
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// holder says which process holds the lock, from the pid in its file.
func holder(f *os.File) string {
	var b [32]byte
	n, _ := f.ReadAt(b[:], 0)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n]))); err == nil && pid > 0 {
		return "pid " + strconv.Itoa(pid)
	}
	return "pid not written yet"
}
