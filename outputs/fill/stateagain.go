package fill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/novox/mesh-provisioner/outputs/dirlock"
)

// The state dir deleted while mesh-fill runs (an operator's rm -rf, a
// cleanup of /var/lib) made every request a 500 until a restart: no state
// file could be written. What the files said is still in memory, so each
// write to the state dir first looks at it (ensureDir), and one gone, or
// another directory at its path, is made again as at start (0700, trusted,
// locked: another mesh-fill that took the path meanwhile keeps it, and
// the request is a 500 naming it), every module's state and pending file
// written there from memory, and said at warn level.

// ensureDir makes sure the state dir is the one taken, making it again
// when it is not (l.mu held). Without a dir taken (Serve's), nothing.
func (l *ledger) ensureDir() error {
	if l.dir == "" || l.taken == nil {
		return nil
	}
	fi, err := os.Stat(l.dir)
	if err == nil && os.SameFile(fi, l.taken) {
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state dir %s: %w", l.dir, err)
	}
	return l.remake()
}

// remake makes the state dir again, takes it, and writes there what the
// ledger holds (l.mu held).
func (l *ledger) remake() error {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("state dir %s gone; making it again: %w", l.dir, err)
	}
	if err := trustedStateDir(l.dir); err != nil {
		return err
	}
	fi, err := os.Stat(l.dir)
	if err != nil {
		return fmt.Errorf("state dir %s: %w", l.dir, err)
	}
	unlock, err := lockStateDir(l.dir)
	if inUse := (*dirlock.InUseError)(nil); errors.As(err, &inUse) && inUse.Holder != nil && inUse.Holder.PID == os.Getpid() {
		// this process holds its lock: it is the dir taken, though its
		// identity looked another (a filesystem whose inode numbers
		// change); were it taken again, every request would fail on
		// the process's own lock
		l.taken = fi
		return nil
	}
	if err != nil {
		return err
	}
	for module, files := range l.modules {
		if err == nil {
			err = l.writeState(module, files)
		}
	}
	for module, progs := range l.pending {
		if err == nil {
			err = l.writePending(module, progs)
		}
	}
	if err != nil {
		unlock()
		return fmt.Errorf("state dir %s gone and made again, but %w", l.dir, err)
	}
	if l.unlock != nil {
		l.unlock() // the lock file of the directory gone
	}
	l.unlock, l.taken = unlock, fi
	l.log.Warn().Str("state_dir", l.dir).Int("modules", len(l.modules)).Int("modules_with_programs_pending", len(l.pending)).
		Msg("state dir gone while mesh-fill ran: made again (0700) and what mesh-fill holds written there from memory")
	return nil
}

// take holds the state dir's lock (lockStateDir's unlock) until letGo; the
// dir taken is the one load reads (Serve).
func (l *ledger) take(unlock func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unlock = unlock
}

// letGo lets the state dir's lock go.
func (l *ledger) letGo() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unlock != nil {
		l.unlock()
		l.unlock = nil
	}
}

// takenID is the state dir taken, by device and inode; nil without one.
func (l *ledger) takenID() *stateID {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dir == "" || l.taken == nil {
		return nil
	}
	st, ok := l.taken.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &stateID{dev: uint64(st.Dev), ino: uint64(st.Ino), path: l.dir}
}
