package bus

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// deleteConsumers deletes every consumer of the bucket's stream on the
// server, as a server restarting under a live connection loses them:
// nothing tells the subscription.
func deleteConsumers(t *testing.T, js jetstream.JetStream, bucket string) {
	t.Helper()
	ctx := context.Background()
	stream, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name := range stream.ListConsumers(ctx).Info() {
		if err := stream.DeleteConsumer(ctx, name.Name); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("the bucket's stream had no consumer to lose")
	}
}

// A watcher whose consumer the bus lost, the connection staying up, is
// made again once a value it should have delivered is found missing at
// its look at the bucket (every replacedChecks Rechecks, 600 ms here), not
// after the consumer's heartbeats (Heartbeat): the reader gets the value
// through a fresh snapshot.
func TestAWatcherWhoseConsumerWasLostIsMadeAgainWithWhatItMissed(t *testing.T) {
	js, out, first := followed(t, "1")
	m := mirror{}
	m.apply(first)

	deleteConsumers(t, js, "assign")
	kv, err := js.KeyValue(context.Background(), "assign")
	if err != nil {
		t.Fatal(err)
	}
	put(t, kv, "ace.a", "2")
	put(t, kv, "other.x", "3") // outside the filter: not the reader's
	deadline := time.Now().Add(5 * time.Second)
	for m.String() != "ace.a=2 ace.b=1" {
		m.apply(next(t, out, time.Until(deadline)))
	}
	quiet(t, out, time.Second) // made again once, then followed as ever
	put(t, kv, "ace.c", "4")
	if u := next(t, out, 3*time.Second); describe(u) != "put ace.c=4" {
		t.Fatalf("after the watcher was made again: %s, want put ace.c=4", describe(u))
	}
}

// Values written outside the filter move the stream's last sequence past
// what the watcher delivered; the newest value under the filter says it
// missed nothing, so it is not made again (no second snapshot).
func TestWritesOutsideTheFilterAreNotTakenForALostWatcher(t *testing.T) {
	js, out, _ := followed(t, "1")
	kv, err := js.KeyValue(context.Background(), "assign")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 { // across several looks (600 ms apart)
		put(t, kv, "other.k"+strconv.Itoa(i), "x")
		time.Sleep(200 * time.Millisecond)
	}
	quiet(t, out, time.Second)
	put(t, kv, "ace.b", "2")
	if u := next(t, out, 3*time.Second); describe(u) != "put ace.b=2" {
		t.Fatalf("%s, want put ace.b=2", describe(u))
	}
	quiet(t, out, 2*time.Second)
}

// A reader busy for several looks (the daemon rendering) holds the
// watcher's callback once the channel is full (16): the values behind it
// wait in the subscription, and that is not a lost consumer. They come as
// live puts, in order, up to the last (a value the bucket replaced before
// it was delivered is skipped: the bucket keeps one per key), with no
// snapshot.
func TestABusyReaderIsNotTakenForALostWatcher(t *testing.T) {
	js, out, _ := followed(t, "0")
	kv, err := js.KeyValue(context.Background(), "assign")
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := 1; i <= n; i++ {
		put(t, kv, "ace.a", strconv.Itoa(i))
	}
	time.Sleep(2 * time.Second) // three looks and their Rechecks, unread
	for last := 0; last < n; {
		u := next(t, out, 3*time.Second)
		v := 0
		if !u.Snapshot && !u.Deleted && len(u.Entries) == 1 && u.Entries[0].Key == "ace.a" {
			v, _ = strconv.Atoi(string(u.Entries[0].Value))
		}
		if v <= last {
			t.Fatalf("after put ace.a=%d: %s, want a later put of ace.a", last, describe(u))
		}
		last = v
	}
	quiet(t, out, time.Second)
}

// The rule a look's suspicion is judged by, on real subscriptions: a
// message not delivered is a loss only if nothing waits in the
// subscription. A busy reader's values can all be held on the bus rather
// than in the subscription (the consumer's flow control waits until the
// message before its request was delivered), so the message the callback
// is handing on must count as pending: nats.go counts it until the
// callback returns.
func TestASuspicionIsALossOnlyWithNothingPending(t *testing.T) {
	s := bustest.Start(t)
	nc := connect(t, Options{URL: s.ClientURL()})
	sub, err := nc.Subscribe("nothing.comes", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	f := &feed{}
	f.last.Store(7)
	if f.lost(sub, 7) {
		t.Error("the message suspected was delivered: no loss")
	}
	if !f.lost(sub, 9) {
		t.Error("message 9 undelivered, nothing pending: a loss")
	}

	// A callback held by a busy reader, then one more message behind it.
	release := make(chan struct{})
	defer close(release)
	held, err := nc.Subscribe("held", func(*nats.Msg) { <-release })
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if err := nc.Publish("held", nil); err != nil {
			t.Fatal(err)
		}
		bustest.Eventually(t, 5*time.Second, func() error {
			if n, _, _ := held.Pending(); n != i {
				return fmt.Errorf("%d pending, want %d (the one the callback holds counted)", n, i)
			}
			return nil
		})
		if f.lost(held, 9) {
			t.Errorf("a reader busy with the callback's message, %d pending: no loss", i)
		}
	}
}
