package fill

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// A seed file there is kept as it is (SPEC §4.3: written only when
// absent); the request's answer says its digest. It is not read to merge
// into, so it is not bounded by what a request may read (dirs.take): a
// seed grown past MaxBody (a log, a database its program keeps at that
// path) was refused at every fill, and the module's other files with it.
// Its digest is read in chunks, never the file whole, and kept by where
// it leads with what identifies its bytes (device, inode, size, modify
// and change times), so a refill does not read it again.

// readDigest is resolve's read argument for a seed's digest alone.
const readDigest = -3

// maxCachedDigests bounds the digests kept (one per seed path).
const maxCachedDigests = 10000

type digestCache struct {
	mu     sync.Mutex
	byPath map[string]cachedDigest
}

type cachedDigest struct {
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
	digest       string
}

// of is the digest of f (at, with fi its FileInfo), from the cache when
// its identity and times are those the cached digest was read with.
func (c *digestCache) of(at string, f *os.File, fi fs.FileInfo) (string, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if c == nil || !ok {
		return streamDigest(f, fi.Size())
	}
	key := cachedDigest{dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mtime: st.Mtim, ctime: st.Ctim}
	c.mu.Lock()
	if d, ok := c.byPath[at]; ok && d.digest != "" {
		key.digest = d.digest
		if d == key {
			c.mu.Unlock()
			return d.digest, nil
		}
		key.digest = ""
	}
	c.mu.Unlock()
	sum, err := streamDigest(f, fi.Size())
	if err != nil {
		return "", err
	}
	key.digest = sum
	c.mu.Lock()
	if c.byPath == nil || len(c.byPath) >= maxCachedDigests {
		c.byPath = map[string]cachedDigest{}
	}
	c.byPath[at] = key
	c.mu.Unlock()
	return sum, nil
}

// streamDigest is the digest of f's first size bytes, read in chunks.
func streamDigest(f *os.File, size int64) (string, error) {
	h := sha256.New()
	if _, err := io.CopyBuffer(h, io.LimitReader(f, size), make([]byte, 64<<10)); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
