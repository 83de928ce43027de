// Package filltest has what the benchmarks of mesh-fill's writes share: a
// directory to write thousands of files into whose inodes come from parts
// of the disk nothing was deleted from lately, as on a node's first start.
package filltest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// dirs are the directories made by Dir, removed by RemoveAll.
var dirs struct {
	sync.Mutex
	list []string
}

// Dir makes a new directory under parent (os.TempDir() when empty) for a
// benchmark's files, that lasts until RemoveAll (call it from TestMain,
// after m.Run). It is marked as the top of a directory tree (chattr +T,
// where the file system knows the flag) so that each directory made in it
// is placed, like one made at the file system's root, in a part of the
// disk with more free inodes than most (ext4's Orlov allocator), not beside
// the directories an earlier benchmark just deleted.
//
// Both matter on an ext4 without a journal: to make a file there, the
// kernel reads past every inode of the group deleted in the last minute or
// more (recently_deleted() in its inode allocator), one by one, for each
// file made. 10,000 files made right after 10,000 were deleted nearby took
// 1.5–3 s more on the machine these benchmarks were written on, and a
// cold start measured that rather than the provisioner or its fsyncs.
func Dir(tb testing.TB, parent, pattern string) string {
	tb.Helper()
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		tb.Fatal(err)
	}
	markTop(dir)
	dirs.Lock()
	dirs.list = append(dirs.list, dir)
	dirs.Unlock()
	return dir
}

// RemoveAll removes every directory Dir made. With BENCH_KEEP set it
// keeps those under os.TempDir() (for benchmark runs back to back, none
// timing the deletions of the one before: `make bench` removes its temp
// dir once every benchmark has run) and removes the others, which nothing
// else would: a tmpfs run's (`/dev/shm`) stayed behind in memory.
func RemoveAll() {
	keep := os.Getenv("BENCH_KEEP") != ""
	tmp := filepath.Clean(os.TempDir()) + string(filepath.Separator)
	dirs.Lock()
	defer dirs.Unlock()
	var kept []string
	for _, dir := range dirs.list {
		if keep && strings.HasPrefix(filepath.Clean(dir), tmp) {
			kept = append(kept, dir)
			continue
		}
		os.RemoveAll(dir)
	}
	dirs.list = kept
}
