// Package dirlock takes a state directory for one process: an exclusive
// flock of its lock file, not waited for, so a second daemon started on
// the same directory (mesh-fill's --state-dir, the client's) is refused at
// once, told who holds it.
package dirlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Name is the lock file's name in the directory; the directory's other
// readers must leave it alone.
const Name = "lock"

// maxNote bounds what is read back of a holder's note.
const maxNote = 512

// Holder is what the lock file says of the process holding it, for the
// next one's message only.
type Holder struct {
	PID    int    `json:"pid"`
	What   string `json:"what"`             // the program, e.g. "mesh-fill"
	Detail string `json:"detail,omitempty"` // e.g. "node ace"
}

// InUseError says another process holds the directory: Holder is what it
// wrote in the lock file (nil when it had not written it yet), What the
// program that tried.
type InUseError struct {
	Dir    string
	What   string
	Holder *Holder
}

func (e *InUseError) Error() string {
	who := "pid not written yet"
	if h := e.Holder; h != nil {
		who = fmt.Sprintf("pid %d", h.PID)
		if h.Detail != "" {
			who += ", " + h.Detail
		}
	}
	return fmt.Sprintf("state dir %s is in use by another %s (%s)", e.Dir, e.What, who)
}

// Take makes dir (0700) when missing and takes the exclusive flock of its
// lock file for what (a program; detail says more, or nothing), held until
// release, writing them and this process's pid in the file for the next
// one to try (the file is for messages only: the flock is the lock, and
// the kernel lets it go when the process ends however it ends, so a file
// left by a kill -9 blocks nothing). Another holder is an *InUseError;
// any other error (a dir it cannot make, a file it cannot open or write)
// says the directory cannot be used, which makes Take a start's check
// that it is writable too.
func Take(dir, what, detail string) (release func(), err error) {
	note, _ := json.Marshal(Holder{PID: os.Getpid(), What: what, Detail: detail})
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, Name), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	for errors.Is(err, unix.EINTR) {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			b := make([]byte, maxNote)
			n, _ := f.ReadAt(b, 0)
			e := &InUseError{Dir: dir, What: what}
			if h := new(Holder); json.Unmarshal(b[:n], h) == nil && h.PID > 0 {
				e.Holder = h
			}
			return nil, e
		}
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(note, 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil // closing lets the flock go
}
