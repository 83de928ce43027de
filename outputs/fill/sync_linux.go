//go:build linux

package fill

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's dirty pages now (as
// dpkg does), so the fsync that follows waits less. Only a hint: an error
// is ignored and the fsync still decides.
func startWriteback(f *os.File) {
	raw, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	})
}

// canSyncFS says syncfs(2) is there: Linux, which since 5.8 also reports
// a writeback error on the filesystem since the fd it is given was opened.
const canSyncFS = true

// syncFS writes out everything dirty on the filesystem f is on, and waits
// (a variable for a test to make it fail).
var syncFS = func(f *os.File) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return err
	}
	if serr != nil {
		return &os.SyscallError{Syscall: "syncfs", Err: serr}
	}
	return nil
}

// deviceOf is the id of the filesystem f is on.
func deviceOf(f *os.File) (uint64, error) {
	var st unix.Stat_t
	raw, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return 0, err
	}
	return uint64(st.Dev), serr
}
