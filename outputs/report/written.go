package report

import (
	"sort"
	"strings"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// table is what was last written of one module's keys in one bucket, in
// few allocations (issue 20: a map of key strings to two SHA-256 prefixes
// held ~750 B a file at 10k files, a module's ~530 needs each a map entry
// and a key string). A key is held by its name, what is left of it
// without what every key of the module shares (affixes); the names are
// sorted and back to back in one string. For each, the sum of the bytes
// written and, for a need, the sum of the fields they encode (0: not
// known, so a need adopted by Sweep is encoded again).
//
// A table changes in place when only sums change (a need that moved); a
// key added or deleted makes a new one (with), at most once per module
// per sync.
type table struct {
	names  string
	ends   []uint32 // name i is names[ends[i-1]:ends[i]]
	bytes  []uint64
	fields []uint64 // needs only (nil for items)
}

// entry is one key of a table being made.
type entry struct {
	name          string
	bytes, fields uint64
}

func (t *table) len() int {
	if t == nil {
		return 0
	}
	return len(t.ends)
}

func (t *table) name(i int) string {
	start := uint32(0)
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.names[start:t.ends[i]]
}

// find is the index of name, and whether it is there.
func (t *table) find(name string) (int, bool) {
	n := t.len()
	i := sort.Search(n, func(i int) bool { return t.name(i) >= name })
	return i, i < n && t.name(i) == name
}

// fieldsAt is the fields' sum of name i (0 when not known).
func (t *table) fieldsAt(i int) uint64 {
	if t.fields == nil {
		return 0
	}
	return t.fields[i]
}

// set records what name i now holds.
func (t *table) set(i int, bytes, fields uint64) {
	t.bytes[i] = bytes
	if t.fields != nil {
		t.fields[i] = fields
	}
}

// with is t with add's entries in and drop's names out, each sorted by
// name (an entry of add replaces the one t has of its name); needs says
// whether fields are kept. It is nil when nothing is left.
func (t *table) with(add []entry, drop []string, needs bool) *table {
	n, size := t.len(), 0
	if n > 0 {
		size = len(t.names)
	}
	for _, e := range add {
		size += len(e.name)
	}
	for _, d := range drop {
		size -= len(d)
	}
	// Made to size (a name of add that t has makes them larger than need be).
	count := max(n+len(add)-len(drop), 0)
	var names strings.Builder
	names.Grow(max(size, 0))
	out := &table{ends: make([]uint32, 0, count), bytes: make([]uint64, 0, count)}
	if needs {
		out.fields = make([]uint64, 0, count)
	}
	push := func(name string, bytes, fields uint64) {
		names.WriteString(name)
		out.ends = append(out.ends, uint32(names.Len()))
		out.bytes = append(out.bytes, bytes)
		if needs {
			out.fields = append(out.fields, fields)
		}
	}
	for i, a := 0, 0; i < n || a < len(add); {
		if a < len(add) && (i == n || add[a].name <= t.name(i)) {
			if i < n && add[a].name == t.name(i) {
				i++
			}
			push(add[a].name, add[a].bytes, add[a].fields)
			a++
			continue
		}
		name := t.name(i)
		for len(drop) > 0 && drop[0] < name {
			drop = drop[1:]
		}
		if len(drop) > 0 && drop[0] == name {
			drop = drop[1:]
		} else {
			push(name, t.bytes[i], t.fieldsAt(i))
		}
		i++
	}
	if len(out.ends) == 0 {
		return nil
	}
	out.names = names.String()
	return out
}

// affixes are what every key of module in bucket has around its name:
// <node>.<module>.<kind>.<name> in the needs bucket, <node>.<collection>.<module>
// in the collect bucket.
func (p *Publisher) affixes(bucket, module string) (prefix, suffix string) {
	if bucket == spec.CollectBucket {
		return spec.EncodeToken(p.Node) + ".", "." + spec.EncodeToken(module)
	}
	return spec.EncodeToken(p.Node) + "." + spec.EncodeToken(module) + ".", ""
}

// nameOf is key's name among module's keys in bucket, if key has the
// module's affixes.
func (p *Publisher) nameOf(bucket, module, key string) (string, bool) {
	prefix, suffix := p.affixes(bucket, module)
	if len(key) < len(prefix)+len(suffix) || !strings.HasPrefix(key, prefix) || !strings.HasSuffix(key, suffix) {
		return "", false
	}
	return key[len(prefix) : len(key)-len(suffix)], true
}
