package bus

import (
	"encoding/binary"
	"slices"
	"strings"
)

// keySet is the keys a Watch's updates said exist, kept only so that the
// next snapshot, Missing or NotPermitted can name those gone. It is kept
// compact (issue 20, heap per file): a map[string]bool of ~53k keys, with
// the key strings it alone kept alive, was ~340 B a file of a 10k-file
// node. The bulk is the sorted keys front-coded in one string (each key as
// the length it shares with the key before it and the rest; every
// keyBlock-th key whole, at an offset in starts, so that a lookup is a
// binary search over those and a scan of one block): keys under one node
// and module share most of their bytes, and a key costs ~5 bytes instead
// of ~60. A live change does not rewrite the bulk: a key put that the bulk
// lacks goes into added, a bulk key deleted gets its bit in deleted; once
// those outgrow a fraction of the bulk they are merged into a new one, so a
// change costs O(log n) and, amortised, O(1) more.
type keySet struct {
	bulk    string              // front-coded sorted keys, in blocks of keyBlock
	starts  []uint32            // where each block (its first key whole) starts in bulk
	n       int                 // keys in bulk, deleted ones included
	deleted []uint64            // bit i: the bulk's i-th key was deleted since (nil if none)
	ndel    int                 // bits set in deleted
	added   map[string]struct{} // keys not in bulk added since (nil if none)
}

// keyBlock is how many keys a block of the bulk holds: a lookup scans up to
// this many after its binary search, and each block's first key is stored
// whole (~1.5 bytes a key at 16).
const keyBlock = 16

// newKeySet makes the set of sorted (strictly increasing) keys.
func newKeySet(n int, key func(i int) string) *keySet {
	var b keyBuilder
	for i := range n {
		appendKey(&b, key(i))
	}
	return b.set()
}

// has says whether k is in the set.
func (s *keySet) has(k string) bool {
	if i := s.index(k); i >= 0 {
		return !s.isDeleted(i)
	}
	_, ok := s.added[k]
	return ok
}

// add puts k in the set. A key the bulk holds costs nothing; one it does not
// is cloned (k may be a piece of something larger the set must not keep).
func (s *keySet) add(k string) {
	if i := s.index(k); i >= 0 {
		if s.isDeleted(i) {
			s.deleted[i/64] &^= 1 << (i % 64)
			s.ndel--
		}
		return
	}
	if _, ok := s.added[k]; ok {
		return
	}
	if s.added == nil {
		s.added = map[string]struct{}{}
	}
	s.added[strings.Clone(k)] = struct{}{}
	s.maybeMerge()
}

// delete takes k out of the set.
func (s *keySet) delete(k string) {
	if _, ok := s.added[k]; ok {
		delete(s.added, k)
		return
	}
	i := s.index(k)
	if i < 0 || s.isDeleted(i) {
		return
	}
	if s.deleted == nil {
		s.deleted = make([]uint64, (s.n+63)/64)
	}
	s.deleted[i/64] |= 1 << (i % 64)
	s.ndel++
	s.maybeMerge()
}

// len is how many keys the set holds.
func (s *keySet) len() int { return s.n - s.ndel + len(s.added) }

// gone is the keys of the set not in now (sorted).
func (s *keySet) gone(now map[string]Entry) []string {
	var gone []string
	s.each(func(k []byte) {
		if _, ok := now[string(k)]; !ok {
			gone = append(gone, string(k))
		}
	})
	if len(s.added) == 0 {
		return gone // the bulk's order
	}
	for k := range s.added {
		if _, ok := now[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	return gone
}

// each calls fn with each key of the bulk not deleted, in order. k is valid
// only during the call.
func (s *keySet) each(fn func(k []byte)) {
	var k []byte
	for i, p := 0, 0; i < s.n; i++ {
		k, p = s.decode(i, p, k)
		if !s.isDeleted(i) {
			fn(k)
		}
	}
}

// maybeMerge makes a new bulk of the set once the changes since the last
// outgrow an eighth of it (and 16): each change then pays for ~8 keys of a
// merge, and what the changes take beside the bulk stays a fraction of it.
func (s *keySet) maybeMerge() {
	if len(s.added)+s.ndel <= 16+s.n/8 {
		return
	}
	added := make([]string, 0, len(s.added))
	for k := range s.added {
		added = append(added, k)
	}
	slices.Sort(added)
	var b keyBuilder
	s.each(func(k []byte) {
		for len(added) > 0 && added[0] < string(k) {
			appendKey(&b, added[0])
			added = added[1:]
		}
		appendKey(&b, k)
	})
	for _, k := range added {
		appendKey(&b, k)
	}
	*s = *b.set()
}

// index is the position of k in the bulk (deleted or not), or -1.
func (s *keySet) index(k string) int {
	// The last block whose first key is at most k.
	lo, hi := 0, len(s.starts) // the blocks before lo start below k, those from hi above
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		first, _ := s.whole(int(s.starts[mid]))
		switch c := strings.Compare(first, k); {
		case c == 0:
			return mid * keyBlock
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	if lo == 0 {
		return -1
	}
	// Scan the block after its first key without decoding a key: m is how
	// much of k the key before shares, which sorts below k. A key that
	// shares more than m with the one before differs from k where that one
	// does, so it is below k too; one that shares less is above k (it is
	// above the one before where that one still matched k); only one that
	// shares exactly m has its rest to compare with k's.
	blk := lo - 1
	first, p := s.whole(int(s.starts[blk]))
	m := commonPrefix(first, k)
	for i := blk*keyBlock + 1; i < s.n && i < (blk+1)*keyBlock; i++ {
		shared, w := uvarintAt(s.bulk, p)
		p += w
		n, w := uvarintAt(s.bulk, p)
		p += w
		rest := s.bulk[p : p+n]
		p += n
		switch {
		case shared > m:
			continue
		case shared < m:
			return -1
		}
		j := commonPrefix(rest, k[m:])
		switch {
		case j == len(rest) && m+j == len(k):
			return i
		case j == len(rest) || j < len(k)-m && rest[j] < k[m+j]: // still below k
			m += j
		default:
			return -1
		}
	}
	return -1
}

// whole is the key stored whole at p (a block's first) and where the next
// key starts.
func (s *keySet) whole(p int) (string, int) {
	n, w := uvarintAt(s.bulk, p)
	p += w
	return s.bulk[p : p+n], p + n
}

// decode reads the i-th key of the bulk, stored at p, into prev (which holds
// the (i-1)-th unless i starts a block), and says where the next starts.
func (s *keySet) decode(i, p int, prev []byte) ([]byte, int) {
	if i%keyBlock == 0 {
		k, next := s.whole(p)
		return append(prev[:0], k...), next
	}
	shared, w := uvarintAt(s.bulk, p)
	p += w
	n, w := uvarintAt(s.bulk, p)
	p += w
	return append(prev[:shared], s.bulk[p:p+n]...), p + n
}

func (s *keySet) isDeleted(i int) bool {
	return s.deleted != nil && s.deleted[i/64]&(1<<(i%64)) != 0
}

// uvarintAt reads the unsigned varint at p in b and its width.
func uvarintAt(b string, p int) (int, int) {
	var v uint64
	for w, shift := 0, 0; p+w < len(b); w, shift = w+1, shift+7 {
		c := b[p+w]
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int(v), w + 1
		}
	}
	return int(v), len(b) - p // not reached: the bulk is well formed
}

// keyBuilder front-codes sorted keys into a keySet's bulk.
type keyBuilder struct {
	b      []byte
	starts []uint32
	n      int
	prev   []byte
}

// appendKey front-codes k, which sorts after the keys before it, into b
// (generic so that neither a key string nor a decoded []byte is copied).
func appendKey[K ~string | ~[]byte](b *keyBuilder, k K) {
	shared := 0
	if b.n%keyBlock == 0 {
		b.starts = append(b.starts, uint32(len(b.b)))
		b.b = binary.AppendUvarint(b.b, uint64(len(k)))
	} else {
		shared = commonPrefix(b.prev, k)
		b.b = binary.AppendUvarint(b.b, uint64(shared))
		b.b = binary.AppendUvarint(b.b, uint64(len(k)-shared))
	}
	b.b = append(b.b, k[shared:]...)
	b.prev = append(b.prev[:shared], k[shared:]...)
	b.n++
}

// set is the keys added so far, in memory of their exact size.
func (b *keyBuilder) set() *keySet {
	return &keySet{bulk: string(b.b), starts: slices.Clone(b.starts), n: b.n}
}

// commonPrefix is how many bytes a and b start with alike.
func commonPrefix[A, B ~string | ~[]byte](a A, b B) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
