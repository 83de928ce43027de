package graph

import "hash/maphash"

// keyIndex finds a node by its key in 4 bytes a slot. The map from key to
// *Node it replaces held 50–80 bytes a node (the 24-byte key, the pointer,
// a control byte, the slack) and 5 MB of pointers for the collector to
// scan at 100k nodes; this table holds no pointer. The node itself holds
// its key, so a slot holds only the node's id and, in the bits the ids do
// not use, a tag from the key's hash that spares most probes a look at a
// node. A look-up reads the slot, byID and the node before the name,
// where the map read its slot and the name: at 100k nodes, the keys looked
// up in a random order, it costs about a third more (the 1k graph's, in
// the cache, no more). Slots of *Node, 8 bytes, were tried: no faster.
//
// Open addressing with linear probing. A slot is 0 when empty, the
// tombstone when its node was removed (a key that probed past it must
// still be found), else tag<<idBits | id. Ids stay below the tombstone's
// id field (all ones), so idBits grows with the ids and the tag shrinks
// (17 id bits and a 15-bit tag at 100k nodes; one bit of tag at 2^31).
// The table doubles when its nodes and tombstones would pass 3/4 of it
// (the load factor), and is rebuilt to hold its nodes within 3/8 of it, so
// it stays between 3/8 and 3/4 full: 5.3–10.7 bytes a node.
type keyIndex struct {
	slots  []uint32
	live   int // slots holding a node
	used   int // slots holding a node or a tombstone
	idBits uint
	seed   maphash.Seed
	// hash replaces the key's hash when set (tests force collisions).
	hash func(kind uint16, name string) uint64
}

const (
	minIndexSlots = 8
	minIDBits     = 16
)

func newKeyIndex() keyIndex {
	return keyIndex{slots: make([]uint32, minIndexSlots), idBits: minIDBits, seed: maphash.MakeSeed()}
}

func (ix *keyIndex) idMask() uint32    { return 1<<ix.idBits - 1 }
func (ix *keyIndex) tombstone() uint32 { return ix.idMask() }

// hashOf is the key's hash: the name's, with the kind mixed in (the
// golden-ratio multiple spreads small kind numbers over every bit).
func (ix *keyIndex) hashOf(kind uint16, name string) uint64 {
	if ix.hash != nil {
		return ix.hash(kind, name)
	}
	return maphash.String(ix.seed, name) ^ uint64(kind)*0x9e3779b97f4a7c15
}

// tagOf is the slot's bits above the id for hash h: its top bits.
func (ix *keyIndex) tagOf(h uint64) uint32 {
	return uint32(h>>(64-(32-ix.idBits))) << ix.idBits
}

// lookup is the node with the key, or nil; byID is the graph's.
func (ix *keyIndex) lookup(kind uint16, name string, byID []*Node) *Node {
	h := ix.hashOf(kind, name)
	tag, idMask := ix.tagOf(h), ix.idMask()
	mask := uint64(len(ix.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := ix.slots[i]
		if s == 0 {
			return nil
		}
		if s&^idMask == tag && s&idMask != idMask {
			if n := byID[s&idMask]; n.kind == kind && n.name == name {
				return n
			}
		}
	}
}

// insert adds n, whose key is not in the index; byID[id] is the node
// numbered id for every id in it.
func (ix *keyIndex) insert(n *Node, byID []*Node) {
	if uint32(n.id) >= ix.idMask() || (ix.used+1)*4 > len(ix.slots)*3 {
		ix.rebuild(n.id, byID)
	}
	h := ix.hashOf(n.kind, n.name)
	mask := uint64(len(ix.slots) - 1)
	tomb := ix.tombstone()
	for i := h & mask; ; i = (i + 1) & mask {
		s := ix.slots[i]
		if s == 0 || s == tomb {
			if s == 0 {
				ix.used++
			}
			ix.slots[i] = ix.tagOf(h) | uint32(n.id)
			ix.live++
			return
		}
	}
}

// remove takes n out. Its slot becomes a tombstone (a key that probed past
// it must still be found), or empty when the next slot is empty, and so do
// the tombstones just before it.
func (ix *keyIndex) remove(n *Node) {
	h := ix.hashOf(n.kind, n.name)
	mask := uint64(len(ix.slots) - 1)
	tomb := ix.tombstone()
	want := ix.tagOf(h) | uint32(n.id)
	for i := h & mask; ; i = (i + 1) & mask {
		s := ix.slots[i]
		if s == 0 {
			return // not in the index
		}
		if s != want {
			continue
		}
		ix.live--
		if ix.slots[(i+1)&mask] != 0 {
			ix.slots[i] = tomb
			return
		}
		for ix.slots[i] = 0; ; {
			ix.used--
			i = (i - 1) & mask
			if ix.slots[i] != tomb {
				return
			}
			ix.slots[i] = 0
		}
	}
}

// rebuild makes a table that holds its live nodes within 3/8 of it, with
// room for ids up to id.
func (ix *keyIndex) rebuild(id int32, byID []*Node) {
	oldMask, oldTomb := ix.idMask(), ix.tombstone()
	ids := make([]int32, 0, ix.live)
	for _, s := range ix.slots {
		if s != 0 && s != oldTomb {
			ids = append(ids, int32(s&oldMask))
		}
	}
	for uint32(id) >= ix.idMask() {
		ix.idBits++
	}
	size := minIndexSlots
	for size*3 < ix.live*8 {
		size *= 2
	}
	ix.slots, ix.live, ix.used = make([]uint32, size), 0, 0
	for _, id := range ids {
		ix.insert(byID[id], byID)
	}
}
