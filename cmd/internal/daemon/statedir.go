package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockFile is the file of the state directory whose flock says a client
// runs on it. Nothing else of the daemon (the templates cache under
// templates/, removals.json) reads or removes it.
const lockFile = "lock"

// StartError is an error of Run before it connects to anything: the state
// directory cannot be used, or another client holds it. The command exits
// 2 on it, as on a bad flag.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// lockOwner is what the lock file says, for the message a second client
// gives only: the flock is the lock.
type lockOwner struct {
	PID  int    `json:"pid"`
	Node string `json:"node"`
}

// lockStateDir makes dir (0700) and takes the exclusive flock of its
// lockFile, held until unlock. Two clients on one state directory (one
// --node started twice, or two nodes given one --state-dir) would share
// its cache and removals and both write the node's reports on the bus, the
// one that lost the race saying failed where the other said applied: the
// second is refused at once, before it connects. The kernel lets the flock
// go when the process ends however it ends, so a file left by a kill -9
// blocks nothing. Creating and writing the file is also the start's check
// that dir is usable (not under a file, not read-only).
func lockStateDir(dir, node string) (unlock func(), err error) {
	unusable := func(err error) error {
		return &StartError{fmt.Errorf("state dir %s cannot be used: %w", dir, err)}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, unusable(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, unusable(err)
	}
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	for errors.Is(err, unix.EINTR) {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &StartError{fmt.Errorf("state dir %s is in use by another mesh-provisioner-client%s: "+
				"stop that one, or give this one another --state-dir", dir, ownerOf(f))}
		}
		return nil, unusable(fmt.Errorf("locking %s: %w", f.Name(), err))
	}
	b, _ := json.Marshal(lockOwner{PID: os.Getpid(), Node: node})
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	if err != nil {
		f.Close()
		return nil, unusable(err)
	}
	return func() { f.Close() }, nil // closing lets the flock go
}

// ownerOf says " (pid N, node X)" from the lock file f, or nothing when it
// holds no owner (its holder has not written it yet).
func ownerOf(f *os.File) string {
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	var o lockOwner
	if json.Unmarshal(b[:n], &o) != nil || o.PID == 0 {
		return ""
	}
	return fmt.Sprintf(" (pid %d, node %s)", o.PID, o.Node)
}
