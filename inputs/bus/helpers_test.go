package bus

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/rs/zerolog"
)

// aceDenied runs a bus with a user "ace" (password "ace") that may
// publish anything but the subjects deny names, and "admin", unrestricted;
// it returns the bus and admin's JetStream, to make the buckets with.
func aceDenied(t *testing.T, deny ...string) (*server.Server, jetstream.JetStream) {
	t.Helper()
	s := bustest.Start(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "ace", Password: "ace", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: deny},
			}},
			{Username: "admin", Password: "admin"},
		}
	})
	_, js := bustest.JetStream(t, s, nats.UserInfo("admin", "admin"))
	return s, js
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
	bustest.Eventually(t, 5*time.Second, func() error {
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
	return bustest.CreateKV(t, js, jetstream.KeyValueConfig{Bucket: bucket})
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

func testLog(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

func keySubject(bucket string, i int) string { return "$KV." + bucket + ".ace.k" + strconv.Itoa(i) }
