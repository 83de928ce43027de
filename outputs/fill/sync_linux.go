//go:build linux

package fill

import (
	"os"

	"golang.org/x/sys/unix"
)

// onFd runs fn on f's descriptor and returns fn's error (or the runtime's,
// when the descriptor cannot be had).
func onFd(f *os.File, fn func(fd int) error) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// startWriteback asks the kernel to start writing f's dirty pages now (as
// dpkg does), so the fsync that follows waits less. Only a hint: an error
// is ignored and the fsync still decides.
func startWriteback(f *os.File) {
	_ = onFd(f, func(fd int) error { return unix.SyncFileRange(fd, 0, 0, unix.SYNC_FILE_RANGE_WRITE) })
}

// canSyncFS says syncfs(2) is there: Linux, which since 5.8 also reports
// a writeback error on the filesystem since the fd it is given was opened.
const canSyncFS = true

// syncFS writes out everything dirty on the filesystem f is on, and waits
// (a variable for a test to make it fail).
var syncFS = func(f *os.File) error {
	if err := onFd(f, unix.Syncfs); err != nil {
		return os.NewSyscallError("syncfs", err)
	}
	return nil
}
