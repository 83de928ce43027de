//go:build !linux || race

package quietconn

import "syscall"

// Raw is whether reads and writes are raw system calls in this build: under
// the race detector (and off Linux, where the raw calls were not measured)
// they are syscall.Read and syscall.Write, whose race annotations tell the
// detector of the ordering a socket makes.
const Raw = false

func read(fd uintptr, p []byte) (int, syscall.Errno) {
	return result(syscall.Read(int(fd), p))
}

func write(fd uintptr, p []byte) (int, syscall.Errno) {
	return result(syscall.Write(int(fd), p))
}

// result is a call's count and errno as the raw calls give them: no count
// (not syscall's -1) when it failed.
func result(n int, err error) (int, syscall.Errno) {
	if err != nil {
		return 0, err.(syscall.Errno)
	}
	return n, 0
}
