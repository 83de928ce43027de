package bus

import (
	"runtime"
	"sync"
	"weak"

	"github.com/nats-io/nats.go"
)

// perConn is what this package keeps of each connection (its refusals
// heard: refusals.go; the servers it was on: crashed.go); an entry goes
// with its connection, holding nothing of it.
type perConn[T any] struct {
	mu sync.Mutex
	by map[weak.Pointer[nats.Conn]]*T
}

// of is nc's entry, made by made (under the lock: called once per
// connection) on first use.
func (p *perConn[T]) of(nc *nats.Conn, made func() *T) *T {
	key := weak.Make(nc)
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.by[key]; t != nil {
		return t
	}
	if p.by == nil {
		p.by = map[weak.Pointer[nats.Conn]]*T{}
	}
	t := made()
	p.by[key] = t
	runtime.AddCleanup(nc, func(k weak.Pointer[nats.Conn]) {
		p.mu.Lock()
		delete(p.by, k)
		p.mu.Unlock()
	}, key)
	return t
}

// on is nc's entry if it has one.
func (p *perConn[T]) on(nc *nats.Conn) *T {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.by[weak.Make(nc)]
}
