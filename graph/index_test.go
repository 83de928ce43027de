package graph

import (
	"fmt"
	"math/rand"
	"testing"
)

// indexUnderTest is a keyIndex with its own byID, as a graph holds them.
type indexUnderTest struct {
	t    *testing.T
	ix   keyIndex
	byID []*Node
	free []int32
}

func newIndexUnderTest(t *testing.T, hash func(uint16, string) uint64) *indexUnderTest {
	u := &indexUnderTest{t: t, ix: newKeyIndex(), byID: []*Node{nil}}
	u.ix.hash = hash
	return u
}

// add numbers a node as Graph.add does (removed ids first) and indexes it.
func (u *indexUnderTest) add(kind uint16, name string) *Node {
	var id int32
	if last := len(u.free) - 1; last >= 0 {
		id, u.free = u.free[last], u.free[:last]
	} else {
		id = int32(len(u.byID))
		u.byID = append(u.byID, nil)
	}
	return u.place(&Node{kind: kind, name: name, id: id})
}

func (u *indexUnderTest) place(n *Node) *Node {
	u.byID[n.id] = n
	u.ix.insert(n, u.byID)
	return n
}

func (u *indexUnderTest) remove(n *Node) {
	u.ix.remove(n)
	u.byID[n.id] = nil
	u.free = append(u.free, n.id)
}

func (u *indexUnderTest) find(kind uint16, name string) *Node {
	return u.ix.lookup(kind, name, u.byID)
}

func (u *indexUnderTest) mustFind(n *Node) {
	u.t.Helper()
	if got := u.find(n.kind, n.name); got != n {
		u.t.Fatalf("%d:%s: found %v, want the node numbered %d", n.kind, n.name, got, n.id)
	}
}

func (u *indexUnderTest) mustMiss(kind uint16, name string) {
	u.t.Helper()
	if got := u.find(kind, name); got != nil {
		u.t.Fatalf("%d:%s: found the node numbered %d, want none", kind, name, got.id)
	}
}

// checkLoad says the table is a power of two, at most 3/4 used, and its
// counts match its slots.
func (u *indexUnderTest) checkLoad() {
	u.t.Helper()
	ix := &u.ix
	if n := len(ix.slots); n&(n-1) != 0 || ix.used*4 > n*3 {
		u.t.Fatalf("%d slots, %d used", n, ix.used)
	}
	live, used := 0, 0
	for _, s := range ix.slots {
		if s != 0 {
			used++
			if s != ix.tombstone() {
				live++
			}
		}
	}
	if live != ix.live || used != ix.used {
		u.t.Fatalf("counted %d live, %d used; the index says %d, %d", live, used, ix.live, ix.used)
	}
}

func sameHash(uint16, string) uint64 { return 42 }

// A removed key is not found; keys that probed past its slot still are.
func TestIndexRemovedKeyProbedPast(t *testing.T) {
	u := newIndexUnderTest(t, sameHash)
	a, b, c := u.add(1, "a"), u.add(1, "b"), u.add(2, "a")
	u.remove(b)
	u.mustMiss(1, "b")
	u.mustFind(a)
	u.mustFind(c)
	u.remove(a)
	u.mustMiss(1, "a")
	u.mustFind(c)
	u.checkLoad()
	// The last of the chain removed: its slot and the tombstones before it
	// are emptied.
	u.remove(c)
	u.mustMiss(2, "a")
	u.checkLoad()
	if u.ix.used != 0 || u.ix.live != 0 {
		t.Fatalf("after removing every key: %d used, %d live", u.ix.used, u.ix.live)
	}
}

// The id of a removed node is given to a new key; the old key stays gone.
func TestIndexReusedID(t *testing.T) {
	u := newIndexUnderTest(t, sameHash)
	a := u.add(1, "a")
	u.add(1, "b")
	u.remove(a)
	d := u.add(1, "d")
	if d.id != a.id {
		t.Fatalf("new node numbered %d, want the removed %d", d.id, a.id)
	}
	u.mustMiss(1, "a")
	u.mustFind(d)
	// The old key added again gets a new node.
	u.remove(d)
	a2 := u.add(1, "a")
	u.mustFind(a2)
	u.mustMiss(1, "d")
}

// Many keys in few hashes (and so few tags): insert, look up, remove half,
// add them again under reused ids, through the table's growth.
func TestIndexCollidingHashes(t *testing.T) {
	for _, hash := range []struct {
		name string
		f    func(uint16, string) uint64
	}{
		{"one hash", sameHash},
		{"eight hashes", func(k uint16, s string) uint64 { return uint64(len(s)+int(k)) % 8 * 0x9e3779b97f4a7c15 }},
		{"maphash", nil},
	} {
		t.Run(hash.name, func(t *testing.T) {
			n := 3000
			if hash.f != nil && hash.name == "one hash" {
				n = 600 // every look-up walks the whole chain
			}
			u := newIndexUnderTest(t, hash.f)
			nodes := map[Key]*Node{}
			for i := 0; i < n; i++ {
				k := Key{fmt.Sprint(i % 3), fmt.Sprintf("node-%03d.key-%04d", i/100, i)}
				nodes[k] = u.add(uint16(i%3), k.Name)
			}
			u.checkLoad()
			if len(u.ix.slots) < n*4/3 {
				t.Fatalf("%d slots for %d keys", len(u.ix.slots), n)
			}
			i := 0
			for k, nd := range nodes {
				if i++; i%2 == 0 {
					u.remove(nd)
					delete(nodes, k)
					u.mustMiss(nd.kind, nd.name)
				}
			}
			u.checkLoad()
			for _, nd := range nodes {
				u.mustFind(nd)
			}
			for i := 0; i < n; i++ {
				k := Key{fmt.Sprint(i % 3), fmt.Sprintf("node-%03d.key-%04d", i/100, i)}
				if nodes[k] == nil {
					nodes[k] = u.add(uint16(i%3), k.Name)
				}
			}
			if len(u.free) != 0 {
				t.Fatalf("%d removed ids not reused", len(u.free))
			}
			for _, nd := range nodes {
				u.mustFind(nd)
			}
			u.mustMiss(0, "no such key")
			u.checkLoad()
		})
	}
}

// Ids past the tag's room make the index give the id more bits; every key
// is still found.
func TestIndexGrowsIDBits(t *testing.T) {
	u := newIndexUnderTest(t, nil)
	bits := u.ix.idBits
	a := u.add(1, "a")
	big := int32(1 << bits)
	u.byID = make([]*Node, big*4+1)
	u.byID[a.id] = a
	b := u.place(&Node{kind: 1, name: "b", id: big})
	c := u.place(&Node{kind: 1, name: "c", id: big*4 - 1})
	if u.ix.idBits <= bits {
		t.Fatalf("id bits %d, want more than %d", u.ix.idBits, bits)
	}
	u.mustFind(a)
	u.mustFind(b)
	u.mustFind(c)
	u.remove(b)
	u.mustMiss(1, "b")
	u.mustFind(c)
	u.checkLoad()
}

// The table doubles as keys come, staying between 3/8 and 3/4 full; every
// key is found after each growth.
func TestIndexGrowth(t *testing.T) {
	u := newIndexUnderTest(t, nil)
	var nodes []*Node
	grew := 0
	for i := 0; i < 50_000; i++ {
		size := len(u.ix.slots)
		nodes = append(nodes, u.add(uint16(i%3), fmt.Sprint("key-", i)))
		if len(u.ix.slots) == size {
			continue
		}
		grew++
		if len(u.ix.slots) != 2*size || u.ix.live*8 > len(u.ix.slots)*3+8 {
			t.Fatalf("at %d keys: %d slots became %d", len(nodes), size, len(u.ix.slots))
		}
		u.checkLoad()
		for _, n := range nodes {
			u.mustFind(n)
		}
	}
	if grew < 12 {
		t.Fatalf("grew %d times to %d slots", grew, len(u.ix.slots))
	}
}

// Adding and removing keys forever, with few alive, keeps the table small:
// tombstones are cleared when it is rebuilt.
func TestIndexChurnStaysSmall(t *testing.T) {
	u := newIndexUnderTest(t, nil)
	rng := rand.New(rand.NewSource(1))
	var alive []*Node
	for i := 0; i < 200_000; i++ {
		if len(alive) < 100 || rng.Intn(2) == 0 && len(alive) < 200 {
			alive = append(alive, u.add(uint16(i%3), fmt.Sprint("key-", i)))
			continue
		}
		j := rng.Intn(len(alive))
		u.remove(alive[j])
		alive[j] = alive[len(alive)-1]
		alive = alive[:len(alive)-1]
	}
	u.checkLoad()
	if len(u.ix.slots) > 1024 {
		t.Fatalf("%d slots for %d keys", len(u.ix.slots), len(alive))
	}
	for _, n := range alive {
		u.mustFind(n)
	}
}

// Through the graph: a removed node's key is gone, its id given again.
func TestGraphIndexRemoveAndReuse(t *testing.T) {
	g := New()
	a, _ := g.Input(Key{"config", "a"})
	b, _ := g.Input(Key{"config", "b"})
	if err := g.Remove(a); err != nil {
		t.Fatal(err)
	}
	if g.Node(Key{"config", "a"}) != nil || g.Len() != 1 {
		t.Fatalf("after removing a: found it, or %d nodes", g.Len())
	}
	c, _ := g.Input(Key{"need", "a"})
	if c.ID() != a.ID() || g.Node(Key{"need", "a"}) != c || g.Node(Key{"config", "b"}) != b {
		t.Fatalf("the new node %v numbered %d (the removed %d), or not found", c, c.ID(), a.ID())
	}
	if g.Node(Key{"no such kind", "a"}) != nil {
		t.Fatal("found a node of a kind no node has")
	}
}
