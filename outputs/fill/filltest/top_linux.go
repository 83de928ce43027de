//go:build linux

package filltest

import (
	"os"

	"golang.org/x/sys/unix"
)

// topDirFlag is FS_TOPDIR_FL of linux/fs.h (chattr's T), which x/sys/unix
// does not name.
const topDirFlag = 0x00020000

// markTop sets dir's top-of-tree flag where the file system has it (ext2/3/4);
// elsewhere (tmpfs) nothing changes and the benchmark runs as it would.
func markTop(dir string) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return
	}
	_ = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|topDirFlag))
}
