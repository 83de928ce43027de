//go:build !linux || race

package quietconn

import "syscall"

// read and write are syscall.Read and syscall.Write under the race detector
// (and off Linux, where the raw calls were not measured): their race
// annotations tell the detector of the ordering a socket makes.
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
