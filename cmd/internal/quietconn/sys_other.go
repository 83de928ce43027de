//go:build !linux || race

package quietconn

import "syscall"

// Raw is whether reads and writes are raw system calls in this build: under
// the race detector (and off Linux, where the raw calls were not measured)
// they are syscall.Read and syscall.Write, whose race annotations tell the
// detector of the ordering a socket makes.
const Raw = false

func read(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return n, errno(err)
}

func write(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	return n, errno(err)
}

func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return err.(syscall.Errno)
}
