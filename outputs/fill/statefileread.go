package fill

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readStateFile reads p, a state or pending file found in the state dir
// at start: opened without following a symbolic link (O_NOFOLLOW: a link
// would have its target, anywhere, read as the state of root's files) and
// without waiting for a writer (O_NONBLOCK: a named pipe put there hung
// mesh-fill's start for ever, its socket never made), and read only when
// it is a regular file.
func readStateFile(p string) ([]byte, error) {
	fd, err := openat(unix.AT_FDCWD, p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, errors.New("it is a symbolic link, not a regular file")
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("it is not a regular file (%s)", fileKind(fi.Mode()))
	}
	return io.ReadAll(io.LimitReader(f, fi.Size()))
}

// fileKind names what a file that is not a regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}
