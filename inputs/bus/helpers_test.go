package bus

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsserver "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// runServer starts a nats-server with JetStream storing in dir, on port (-1:
// any free port), listening on loopback.
func runServer(t *testing.T, dir string, port int) *server.Server {
	t.Helper()
	o := natsserver.DefaultTestOptions
	o.Port = port
	o.JetStream = true
	o.StoreDir = dir
	s := natsserver.RunServer(&o)
	t.Cleanup(s.Shutdown)
	return s
}

// stopServer shuts s down and waits until it is gone.
func stopServer(s *server.Server) {
	s.Shutdown()
	s.WaitForShutdown()
}

// freePort is a loopback port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// connect opens a bus connection through Connect and waits until it is up.
func connect(t *testing.T, o Options) *nats.Conn {
	t.Helper()
	if o.Name == "" {
		o.Name = "provisioner.test"
	}
	nc, err := Connect(o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	checkFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if !nc.IsConnected() {
			return fmt.Errorf("not connected (status %v)", nc.Status())
		}
		return nil
	})
	return nc
}

// newJS is a JetStream context on nc.
func newJS(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// createBucket makes a key-value bucket the way the server or lab would.
func createBucket(t *testing.T, js jetstream.JetStream, bucket string) jetstream.KeyValue {
	t.Helper()
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: bucket})
	if err != nil {
		t.Fatalf("creating bucket %s: %v", bucket, err)
	}
	return kv
}

func put(t *testing.T, kv jetstream.KeyValue, key, value string) uint64 {
	t.Helper()
	rev, err := kv.PutString(context.Background(), key, value)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return rev
}

// startWatch runs a Watch until the test ends and checks that Run returns
// when its context does.
func startWatch(t *testing.T, js jetstream.JetStream, bucket, filter string, recheck time.Duration, buf int) (*Watch, chan Update) {
	t.Helper()
	out := make(chan Update, buf)
	w := NewWatch(js, bucket, filter, out, testLog(t))
	w.Recheck = recheck
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("Run did not return after its context ended")
		}
	})
	return w, out
}

// next is the next update, failing the test if none comes within d.
func next(t *testing.T, ch <-chan Update, d time.Duration) Update {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(d):
		t.Fatalf("no update within %s", d)
		return Update{}
	}
}

// nextSnapshot skips live updates up to the next Snapshot.
func nextSnapshot(t *testing.T, ch <-chan Update, d time.Duration) Update {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		u := next(t, ch, time.Until(deadline))
		if u.Snapshot {
			return u
		}
	}
}

// quiet fails if an update arrives within d.
func quiet(t *testing.T, ch <-chan Update, d time.Duration) {
	t.Helper()
	select {
	case u := <-ch:
		t.Fatalf("unexpected update: %s", describe(u))
	case <-time.After(d):
	}
}

// describe renders an update compactly: "snapshot{a=1 b=2}", "put a=1",
// "delete a", "missing".
func describe(u Update) string {
	switch {
	case u.Missing:
		return "missing"
	case u.Snapshot:
		return "snapshot{" + render(u.Entries) + "}"
	case u.Deleted && len(u.Entries) == 1:
		return "delete " + u.Entries[0].Key
	default:
		return "put " + render(u.Entries)
	}
}

func render(es []Entry) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, e.Key+"="+string(e.Value))
	}
	return strings.Join(parts, " ")
}

// mirror is the state a daemon would hold from the updates it got.
type mirror map[string]string

func (m mirror) apply(u Update) {
	switch {
	case u.Missing:
		clear(m)
	case u.Snapshot:
		clear(m)
		for _, e := range u.Entries {
			m[e.Key] = string(e.Value)
		}
	case u.Deleted:
		delete(m, u.Entries[0].Key)
	default:
		m[u.Entries[0].Key] = string(u.Entries[0].Value)
	}
}

func (m mirror) String() string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// checkFor polls fn every sleep until it returns nil, failing after total.
func checkFor(t *testing.T, total, sleep time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	var err error
	for time.Now().Before(deadline) {
		if err = fn(); err == nil {
			return
		}
		time.Sleep(sleep)
	}
	t.Fatalf("condition not met after %s: %v", total, err)
}

// logBuffer is a log sink safe for the connection's callback goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testLog(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

func keySubject(bucket string, i int) string { return "$KV." + bucket + ".ace.k" + strconv.Itoa(i) }
