package proctest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Files sees, from outside the process that writes them, when files in
// the directories it watches get new bytes: the kernel tells it (inotify)
// as a file is renamed into place or closed after writing, and it notes
// the time then, so a benchmark measures a change to the file on disk
// without polling for it (which would take the CPU the processes it
// measures share) or trusting the writer's word.
type Files struct {
	f      *os.File
	mu     sync.Mutex
	dirs   map[int32]string // watch descriptor → directory
	events chan fileEvent
}

type fileEvent struct {
	path string
	at   time.Time
	data []byte // the file's bytes, read as the event was
}

// WatchFiles starts a watcher, closed when the benchmark ends.
func WatchFiles(b testing.TB) *Files {
	b.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		b.Skip("no inotify: ", err)
	}
	w := &Files{f: os.NewFile(uintptr(fd), "inotify"), dirs: map[int32]string{}, events: make(chan fileEvent, 1<<14)}
	go w.read()
	b.Cleanup(func() { w.f.Close() })
	return w
}

// Add watches dir (again: a no-op).
func (w *Files) Add(dir string) error {
	sc, err := w.f.SyscallConn()
	if err != nil {
		return err
	}
	var wd int
	var addErr error
	if err := sc.Control(func(fd uintptr) {
		wd, addErr = unix.InotifyAddWatch(int(fd), dir, unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE)
	}); err != nil {
		return err
	}
	if addErr != nil {
		return fmt.Errorf("watching %s: %w", dir, addErr)
	}
	w.mu.Lock()
	w.dirs[int32(wd)] = dir
	w.mu.Unlock()
	return nil
}

// read notes every event with the time it was read, until the watcher is
// closed. When events come faster than Wait takes them, the oldest wait
// in the kernel's queue (it drops what overflows: a Wait then times out).
func (w *Files) read() {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			close(w.events)
			return
		}
		at := time.Now()
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+nameLen], "\x00"))
			off += unix.SizeofInotifyEvent + nameLen
			w.mu.Lock()
			dir, ok := w.dirs[wd]
			w.mu.Unlock()
			if ok && name != "" {
				path := filepath.Join(dir, name)
				data, _ := os.ReadFile(path) // a temp file renamed away since: no bytes
				w.events <- fileEvent{path, at, data}
			}
		}
	}
}

// Wait waits up to timeout for path (in a watched directory) to be
// written or renamed into place holding want (its bytes are read as the
// event is), and returns when the kernel said so. Events for other files,
// or for path without want (an older write), are passed over: call it for
// one change at a time, each waited for before the next is made.
func (w *Files) Wait(path string, want []byte, timeout time.Duration) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				return time.Time{}, fmt.Errorf("watcher closed waiting for %s", path)
			}
			if ev.path != path {
				continue
			}
			if bytes.Contains(ev.data, want) {
				return ev.at, nil
			}
		case <-t.C:
			got, _ := os.ReadFile(path)
			return time.Time{}, fmt.Errorf("%s did not get %q within %v (it holds %q)", path, want, timeout, got)
		}
	}
}
