package chaos

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// leakWatch holds every secret value planted and where one was seen: in
// any message on the bus (every subject, so reports, events, needs, items
// and the buckets' writes), in the buckets afterwards, in a log or a
// state dir. Only the filled files may hold one.
type leakWatch struct {
	mu      sync.Mutex
	planted [][]byte
	names   map[string]string // value → a name for it (never the value)
	seen    []string
	heard   int // messages heard on the bus
}

func newLeakWatch(w *world) *leakWatch {
	l := &leakWatch{names: map[string]string{}}
	for name, v := range w.secrets {
		l.planted = append(l.planted, []byte(v))
		l.names[v] = name
	}
	return l
}

// plant adds a value before it is given to the vault.
func (l *leakWatch) plant(v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.planted = append(l.planted, []byte(v))
	l.names[v] = fmt.Sprintf("rotated value #%d", len(l.planted))
}

// scan notes each planted value data holds, saying where.
func (l *leakWatch) scan(where string, data []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.planted {
		if bytes.Contains(data, v) {
			l.seen = append(l.seen, fmt.Sprintf("the value of %s in %s", l.names[string(v)], where))
		}
	}
}

// listen scans every message on the bus behind urls until the test ends.
func (l *leakWatch) listen(urls string) (stop func(), err error) {
	nc, err := nats.Connect(urls, nats.Name("chaos leak watch"), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		return nil, err
	}
	if _, err := nc.Subscribe(">", func(m *nats.Msg) {
		l.mu.Lock()
		l.heard++
		l.mu.Unlock()
		l.scan("a message on "+m.Subject, m.Data)
	}); err != nil {
		nc.Close()
		return nil, err
	}
	return nc.Close, nil
}

// scanBuckets scans the keys and values of every key-value bucket of bus.
func (l *leakWatch) scanBuckets(bus *cluster, who string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := bus.js.KeyValueStoreNames(ctx)
	for b := range names.Name() {
		entries, err := bus.entries(b)
		if err != nil {
			return err
		}
		for k, v := range entries {
			l.scan(fmt.Sprintf("%s bucket %s key %s", who, b, k), append([]byte(k+" "), v...))
		}
	}
	return names.Error()
}

// scanDir scans every file under dir but the roots mesh-fill writes.
func (l *leakWatch) scanDir(dir, who string, roots map[string]bool) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && roots[p] {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if data, err := os.ReadFile(p); err == nil {
				l.scan(who+" "+p, data)
			}
		}
		return nil
	})
}

// holds says how many planted values the files under dir hold: the leak
// scan's own check, that what it looks for is what the files hold.
func (l *leakWatch) holds(dir string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			for _, v := range l.planted {
				if bytes.Contains(data, v) {
					n++
				}
			}
		}
		return nil
	})
	return n
}

// messages is how many messages were heard on the bus.
func (l *leakWatch) messages() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.heard
}

func (l *leakWatch) found() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}
