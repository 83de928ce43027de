package control

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// Listen binds the control socket at path so that it is never reachable
// with a wider mode than 0600: bound under a temporary name beside path,
// made 0600, only then renamed into place. It refuses when another client
// answers at path. Closing the listener leaves path; the server removes it.
func Listen(path string) (net.Listener, error) {
	if err := CheckSocketPath(path); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, errors.New("control socket " + path + ": another client answers on it")
	}
	ln, tmp, err := listenBeside(path)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err = os.Chmod(tmp, 0o600); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		ln.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return ln, nil
}

// listenBeside binds a unix socket under a temporary name in path's
// directory, no longer than path, which fits a unix socket: ".new-" and 8
// random characters where that fits, else a random name as short as need
// be (down to one byte, for a path at the limit ending in one). bind
// refuses a name that is taken, so another is tried; nothing of someone
// else's is removed, not even a socket of another daemon of this process
// (the lab, tests) binding in the same directory at the same moment.
func listenBeside(path string) (net.Listener, string, error) {
	dir, base := filepath.Split(path)
	room := MaxSocketPath - len(dir)
	prefix := ""
	if room >= len(".new-")+8 {
		prefix, room = ".new-", room-len(".new-")
	}
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, min(room, 8))
	err := errors.New("no temporary name free in " + dir)
	for try := 0; try < 100; try++ {
		for i := range b {
			b[i] = chars[rand.IntN(len(chars))]
		}
		if len(b) > 1 && prefix == "" {
			b[0] = '.'
		}
		name := prefix + string(b)
		if name == base {
			continue
		}
		var ln net.Listener
		if ln, err = net.Listen("unix", dir+name); err == nil {
			return ln, dir + name, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, "", err
}
