package archive

import (
	"fmt"
	"os"
)

// damaged says that the cache file p, read for ref, cannot be used (why),
// to CacheDamaged, and removes it: an archive kept under its digest is
// fetched again from its ref and kept anew, and until then no start takes
// the file for the archive (holds asks the cache by name). f is the file
// as opened (nil if it could not be): the file is removed only while p
// still names it, so that the good archive another ref's read of the same
// digest just renamed into place is not removed for the damage of the
// one it replaced.
func (s *Store) damaged(ref, p string, f *os.File, why error) {
	if s.CacheDamaged != nil {
		s.CacheDamaged(fmt.Errorf("templates archive %s: the cache file %s cannot be used: %w; removed, fetching it again", ref, p, why))
	}
	if f != nil {
		read, err1 := f.Stat()
		now, err2 := os.Lstat(p)
		if err1 != nil || err2 != nil || !os.SameFile(read, now) {
			return
		}
	}
	_ = os.Remove(p)
}
