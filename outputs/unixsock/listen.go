// Package unixsock binds a unix socket that is never reachable with a
// wider mode than the one asked for: the control socket (0600) and
// mesh-fill's fill socket (0660, served as root) both bind with it.
package unixsock

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// MaxPath is the longest path a unix socket can be bound or dialled at
// (sun_path less its terminating NUL).
const MaxPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// Listen binds a unix socket at path with mode: bound under a temporary
// name beside path, given mode, only then renamed into place, so no
// connection can be made while the umask's mode is on it (a connect is
// checked against the socket's mode when it is made, and a connection
// made then would be served after). Whatever is at path is replaced; the
// caller checks first that nothing live is there. Closing the listener
// leaves path.
//
// The temporary name is in a directory of its own (mode 0700, made beside
// path), so no other user can connect to the socket, or put something else
// in its place, before its mode is set: a connect needs search permission
// on every directory of the name. Only when path is too long for that
// directory's name to fit a socket's is it bound beside path, where a
// connection could be made in the moment before the chmod.
//
// The listener's address, and its Accept's errors, name path.
//
// A path longer than MaxPath is refused, naming it and the limit.
func Listen(path string, mode os.FileMode) (net.Listener, error) {
	if len(path) > MaxPath {
		return nil, fmt.Errorf("%s: the path is %d bytes, longer than a unix socket's limit of %d (%d with the terminating NUL)", path, len(path), MaxPath, MaxPath+1)
	}
	ln, tmp, private, err := listenPrivately(path)
	if err != nil {
		return nil, err
	}
	if private == "" {
		if ln, tmp, err = listenBeside(path); err != nil {
			return nil, err
		}
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	beforeChmod(tmp)
	if err = os.Chmod(tmp, mode); err == nil {
		err = os.Rename(tmp, path)
	}
	if private != "" {
		_ = os.Remove(private) // empty once renamed; left for the removal below else
	}
	if err != nil {
		ln.Close()
		_ = os.Remove(tmp)
		if private != "" {
			_ = os.Remove(private)
		}
		return nil, err
	}
	return named{ln.(*net.UnixListener), &net.UnixAddr{Name: path, Net: "unix"}}, nil
}

// named is a listener bound under a temporary name and renamed to addr:
// its address and its Accept's errors name addr, the path it is reached
// by, not the temporary name, which is gone (an accept error of a daemon
// out of file descriptors named ".sock-2333176946/s" beside the socket).
type named struct {
	*net.UnixListener
	addr *net.UnixAddr
}

func (l named) Addr() net.Addr { return l.addr }

func (l named) Accept() (net.Conn, error) {
	c, err := l.UnixListener.Accept()
	if op, ok := err.(*net.OpError); ok {
		o := *op
		o.Addr = l.addr
		err = &o
	}
	return c, err
}

// beforeChmod is a test's look at the temporary name before its mode is set.
var beforeChmod = func(tmp string) {}

// listenPrivately binds a unix socket at "s" in a new 0700 directory
// beside path; private is that directory, "" (and no error) when its name
// would be too long for a socket.
func listenPrivately(path string) (ln net.Listener, tmp, private string, err error) {
	dir := filepath.Dir(path)
	// MkdirTemp adds up to 20 digits to the pattern
	if len(dir)+len("/.sock-")+20+len("/s") > MaxPath {
		return nil, "", "", nil
	}
	private, err = os.MkdirTemp(dir, ".sock-")
	if err != nil {
		return nil, "", "", err
	}
	tmp = filepath.Join(private, "s")
	if ln, err = net.Listen("unix", tmp); err != nil {
		_ = os.Remove(private)
		return nil, "", "", err
	}
	return ln, tmp, private, nil
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
	room := MaxPath - len(dir)
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
