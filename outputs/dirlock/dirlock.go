// Package dirlock takes a state directory for one process: an exclusive
// flock of its lock file, not waited for, so a second daemon started on
// the same directory (mesh-fill's --state-dir, the client's) is refused at
// once, told who holds it.
package dirlock

import (
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

// InUseError says another process holds the directory; Note is what it
// wrote in the lock file (empty when it had not written it yet).
type InUseError struct {
	Dir  string
	Note []byte
}

func (e *InUseError) Error() string { return fmt.Sprintf("%s is in use by another process", e.Dir) }

// Take makes dir (0700) when missing and takes the exclusive flock of its
// lock file, held until release, writing note in the file for the next
// one to try (the file is for messages only: the flock is the lock, and
// the kernel lets it go when the process ends however it ends, so a file
// left by a kill -9 blocks nothing). Another holder is an *InUseError;
// any other error (a dir it cannot make, a file it cannot open or write)
// says the directory cannot be used, which makes Take a start's check
// that it is writable too.
func Take(dir string, note []byte) (release func(), err error) {
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
			return nil, &InUseError{Dir: dir, Note: b[:n]}
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
