package report

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

const (
	needsBucket   = "mesh-provisioner_needs"
	appliedBucket = "mesh-provisioner_applied"
	collectBucket = "mesh-provisioner_collect"
)

// bus is a real nats-server with JetStream, a connection to it, and a
// publisher for node n1 writing on it.
type bus struct {
	t   testing.TB
	nc  *nats.Conn
	js  jetstream.JetStream
	pub *Publisher
}

// newBus starts a nats-server and creates the given buckets.
func newBus(t testing.TB, buckets ...string) *bus {
	t.Helper()
	return newBusLimited(t, 0, buckets...)
}

// newBusLimited is newBus with a server whose max_payload is maxPayload
// (0: the default).
// newBusWithoutAcks is newBus with bucket's stream never acknowledging a
// put (the put is stored, no ack comes: as when a connection or a stream's
// leader is lost) and ackWait cut to 200 ms for the test; acksBack makes
// the stream acknowledge again.
func newBusWithoutAcks(t *testing.T, bucket string) (b *bus, acksBack func()) {
	t.Helper()
	b = newBus(t, bucket)
	was := ackWait
	ackWait = 200 * time.Millisecond
	t.Cleanup(func() { ackWait = was })
	ctx := context.Background()
	stream, err := b.js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	cfg.NoAck = true
	if _, err := b.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	return b, func() {
		t.Helper()
		cfg.NoAck = false
		if _, err := b.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
}

func newBusLimited(t testing.TB, maxPayload int32, buckets ...string) *bus {
	t.Helper()
	nc, js := bustest.JetStream(t, bustest.Start(t, func(o *server.Options) {
		if maxPayload > 0 {
			o.MaxPayload = maxPayload
		}
	}))
	b := &bus{t: t, nc: nc, js: js}
	for _, name := range buckets {
		b.bucket(name)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b.pub = &Publisher{NC: nc, JS: js, Node: "n1", Now: func() time.Time { at = at.Add(time.Second); return at }}
	return b
}

func (b *bus) bucket(name string) jetstream.KeyValue {
	b.t.Helper()
	return bustest.CreateKV(b.t, b.js, jetstream.KeyValueConfig{Bucket: name, History: 5})
}

func (b *bus) kv(name string) jetstream.KeyValue {
	b.t.Helper()
	kv, err := b.js.KeyValue(context.Background(), name)
	if err != nil {
		b.t.Fatal(err)
	}
	return kv
}

// get is key's value and revision in bucket; revision 0 when it is not
// there (never written, or deleted).
func (b *bus) get(bucket, key string) (string, uint64) {
	b.t.Helper()
	e, err := b.kv(bucket).Get(context.Background(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", 0
	}
	if err != nil {
		b.t.Fatalf("%s %s: %v", bucket, key, err)
	}
	return string(e.Value()), e.Revision()
}

func (b *bus) put(bucket, key, value string) {
	b.t.Helper()
	if _, err := b.kv(bucket).PutString(context.Background(), key, value); err != nil {
		b.t.Fatal(err)
	}
}

// keys lists bucket's keys (none: empty).
func (b *bus) keys(bucket string) []string {
	b.t.Helper()
	ks, err := b.kv(bucket).Keys(context.Background())
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		b.t.Fatal(err)
	}
	return ks
}

// subscribe collects the messages on subject.
func (b *bus) subscribe(subject string) *nats.Subscription {
	b.t.Helper()
	sub, err := b.nc.SubscribeSync(subject)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := b.nc.Flush(); err != nil {
		b.t.Fatal(err)
	}
	return sub
}

// next is the next message on sub (fails after a second).
func (b *bus) next(sub *nats.Subscription) *nats.Msg {
	b.t.Helper()
	m, err := sub.NextMsg(time.Second)
	if err != nil {
		b.t.Fatalf("no message on %s: %v", sub.Subject, err)
	}
	return m
}

// none says no message came on sub (after a round trip to the server).
func (b *bus) none(sub *nats.Subscription) {
	b.t.Helper()
	if err := b.nc.Flush(); err != nil {
		b.t.Fatal(err)
	}
	if m, err := sub.NextMsg(50 * time.Millisecond); err == nil {
		b.t.Fatalf("unexpected message on %s: %s", m.Subject, m.Data)
	}
}

// decode unmarshals s into a new T.
func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}
