package graph

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
)

// A node keeps its kind as a number in this process-wide table (2 bytes
// beside its flags) rather than the string (16 bytes): a node's graph
// holds 100k+ nodes of a dozen kinds. The table only grows; graphs in
// other goroutines read it without a lock.
var kindTable struct {
	mu  sync.Mutex // held by whoever adds a kind
	cur atomic.Pointer[kindSet]
}

type kindSet struct {
	names []string
	index map[string]uint16
}

// kindName is the kind numbered i.
func kindName(i uint16) string { return kindTable.cur.Load().names[i] }

// kindNumber is kind k's number; a kind not seen yet is numbered when add
// is set (ok is false otherwise).
func kindNumber(k string, add bool) (i uint16, ok bool) {
	if s := kindTable.cur.Load(); s != nil {
		if i, ok := s.index[k]; ok {
			return i, true
		}
	}
	if !add {
		return 0, false
	}
	kindTable.mu.Lock()
	defer kindTable.mu.Unlock()
	old := kindTable.cur.Load()
	next := &kindSet{index: map[string]uint16{}}
	if old != nil {
		if i, ok := old.index[k]; ok {
			return i, true
		}
		next.names = append(next.names, old.names...)
		for name, j := range old.index {
			next.index[name] = j
		}
	}
	if len(next.names) > math.MaxUint16 {
		panic("graph: more than 65,536 node kinds")
	}
	i = uint16(len(next.names))
	k = strings.Clone(k) // the table outlives the caller's string
	next.names = append(next.names, k)
	next.index[k] = i
	kindTable.cur.Store(next)
	return i, true
}
