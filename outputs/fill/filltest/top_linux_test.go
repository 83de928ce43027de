//go:build linux

package filltest

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// On ext2/3/4 (magic 0xEF53), the one file system whose allocator reads
// the flag, Dir's directory has it.
func TestDirIsMarkedTopOnExt4(t *testing.T) {
	parent := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(parent, &st); err != nil || st.Type != unix.EXT4_SUPER_MAGIC {
		t.Skipf("%s is not on ext2/3/4", parent)
	}
	dir := Dir(t, parent, "bench")
	defer RemoveAll()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Fatal(err)
	}
	if flags&topDirFlag == 0 {
		t.Fatalf("flags %#x: no top-of-tree flag (%#x)", flags, topDirFlag)
	}
}
