package bus

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// refusingBus runs a bus with a user "ace" that may do anything but look
// up the bucket "closed" (its STREAM.INFO request is denied), the user
// "admin" unrestricted, and both buckets "open" and "closed" made.
func refusingBus(t *testing.T) *server.Server {
	t.Helper()
	s, js := aceDenied(t, "$JS.API.STREAM.INFO.KV_closed")
	createBucket(t, js, "open")
	createBucket(t, js, "closed")
	return s
}

// TestARefusedLookupEndsAtOnce: a bucket whose lookup the bus refuses
// (a permission violation on $JS.API.STREAM.INFO.KV_<bucket>) is said
// refused as soon as the bus says so, with an error of the refusal's kind
// naming the bucket; before, nats.go waited its whole request timeout
// (5 s) for a reply the bus would never send, and the lookup failed as a
// timeout. A context whose deadline is under that timeout must not
// expire; the bucket the user may read is looked up as ever.
func TestARefusedLookupEndsAtOnce(t *testing.T) {
	s := refusingBus(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL(), User: "ace", Password: "ace", Log: zerolog.Nop()}))

	for range 2 { // a second lookup, on the same connection, too
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := LookupKV(ctx, js, "closed")
		expired := ctx.Err()
		cancel()
		var refused *RefusedError
		if !errors.As(err, &refused) || !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("looking up a refused bucket: %v (context: %v), want a RefusedError", err, expired)
		}
		if expired != nil {
			t.Fatalf("the refused lookup ran out the context: %v", expired)
		}
		if refused.Bucket != "closed" || !strings.Contains(err.Error(), "closed") || !strings.Contains(err.Error(), "refused") {
			t.Errorf("the refusal says %q (bucket %q), want it to name the bucket closed and say refused", err, refused.Bucket)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := LookupKV(ctx, js, "open"); err != nil {
		t.Fatalf("looking up a bucket the user may read: %v", err)
	}
}

// TestARefusedLookupOnAPlainConnectionEndsAtOnce: a connection not made
// by Connect (the sweep command's, a test's) has its refusals heard too,
// and its own error handler still gets them.
func TestARefusedLookupOnAPlainConnectionEndsAtOnce(t *testing.T) {
	s := refusingBus(t)
	heard := make(chan error, 4)
	nc := bustest.Connect(t, s, nats.UserInfo("ace", "ace"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case heard <- err:
		default:
		}
	}))
	js := newJS(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := LookupKV(ctx, js, "closed")
	var refused *RefusedError
	if !errors.As(err, &refused) || ctx.Err() != nil {
		t.Fatalf("looking up a refused bucket: %v (context: %v), want a RefusedError before the deadline", err, ctx.Err())
	}
	select {
	case err := <-heard:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("the connection's own handler heard %v, want the violation", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the connection's own error handler did not hear the violation")
	}
}

// TestAWatchOfARefusedBucketSaysNotPermittedAtOnce: a watch of a bucket
// whose lookup the bus refuses says NotPermitted as soon as the bus says
// so, not once the lookup's 5 s timeout has run out.
func TestAWatchOfARefusedBucketSaysNotPermittedAtOnce(t *testing.T) {
	s := refusingBus(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL(), User: "ace", Password: "ace", Log: zerolog.Nop()}))
	out := make(chan Update, 16)
	w := NewWatch(js, "closed", ">", out, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	deadline, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	select {
	case u := <-out:
		if !u.NotPermitted {
			t.Fatalf("first update %+v, want NotPermitted", u)
		}
	case <-deadline.Done():
		t.Fatal("no NotPermitted before the 3 s deadline")
	}
}

// TestWaitingForARefusedBucketSaysTheRefusal: WaitBucket (the lab's wait
// for the applied bucket) on a bucket the bus refuses the user looks again
// until its context ends, as ever, and its error then says the bus refused
// the lookup; before, each look waited out nats.go's 5 s timeout (or the
// context's end) and the error said only "context deadline exceeded".
func TestWaitingForARefusedBucketSaysTheRefusal(t *testing.T) {
	s := refusingBus(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL(), User: "ace", Password: "ace", Log: zerolog.Nop()}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := WaitBucket(ctx, js, "closed", 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "the bus refused the lookup of bucket closed") {
		t.Fatalf("waiting for a bucket the bus refuses: %v, want the refusal said", err)
	}
}
