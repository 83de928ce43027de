package bus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestAnOldRefusalIsNotALaterTimeoutsReason: the bus refuses a lookup
// (said at once, a RefusedError), the operator gives the right back (the
// server's configuration reloaded, as its SIGHUP does, the connection
// kept), and a later lookup of the same subject times out for another
// reason (a stream whose server does not answer: a subscriber that never
// replies stands for it). That timeout is a timeout, not a refusal:
// Refused no longer reads the connection's LastError, which still held the
// old violation and made any later timeout on the stream "not permitted".
func TestAnOldRefusalIsNotALaterTimeoutsReason(t *testing.T) {
	const subject = "$JS.API.STREAM.INFO.KV_closed"
	users := func(deny ...string) []*server.User {
		return []*server.User{
			{Username: "ace", Password: "ace", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: deny},
			}},
			{Username: "admin", Password: "admin"},
		}
	}
	o := bustest.Options(t)
	o.JetStream = false // no server answers the stream's requests
	o.Users = users(subject)
	s := bustest.Run(t, &o)
	admin := bustest.Connect(t, s, nats.UserInfo("admin", "admin"))
	silent, err := admin.SubscribeSync(subject) // takes the request, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = silent.Unsubscribe() }()
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	nc := connect(t, Options{URL: s.ClientURL(), User: "ace", Password: "ace", Log: zerolog.Nop()})
	js := newJS(t, nc)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = LookupKV(ctx, js, "closed")
	cancel()
	if refused := (*RefusedError)(nil); !errors.As(err, &refused) {
		t.Fatalf("the refused lookup: %v, want a RefusedError", err)
	}
	if !errors.Is(nc.LastError(), nats.ErrPermissionViolation) {
		t.Fatalf("the connection's last error is %v, want the violation (the test's premise)", nc.LastError())
	}

	given := o
	given.Users = users()
	if err := s.ReloadOptions(&given); err != nil {
		t.Fatalf("reloading the server's options: %v", err)
	}
	// The right is back once the silent subscriber takes the request.
	ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err = LookupKV(ctx, js, "closed")
	cancel()
	if _, got := silent.NextMsg(10 * time.Second); got != nil {
		t.Fatalf("the lookup did not reach the stream's (silent) server once the right was back: %v (lookup: %v)", got, err)
	}
	if refused := (*RefusedError)(nil); errors.As(err, &refused) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the lookup with the right back: %v, want a timeout", err)
	}
	if Refused(js, err, "KV_closed") {
		t.Fatalf("the timeout (%v) is said a refusal: the connection's old violation (%v) was taken for its reason", err, nc.LastError())
	}
}

// TestLookupsInFlightTogetherEachHearTheirRefusal: each refusal is heard
// by one lookup, so lookups of a refused bucket in flight together on one
// connection each take their own and each is said refused, none left to
// time out.
func TestLookupsInFlightTogetherEachHearTheirRefusal(t *testing.T) {
	s := refusingBus(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL(), User: "ace", Password: "ace", Log: zerolog.Nop()}))
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := LookupKV(ctx, js, "closed")
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; !errors.As(err, new(*RefusedError)) {
			t.Errorf("a lookup in flight with others: %v, want a RefusedError", err)
		}
	}
}

// TestARefusalIsHeardByEveryCallInFlightOnItsSubject: two calls await a
// refusal of one subject and one refusal comes (the first call's context
// ended by it before its own request went out, as happened under load to
// one of TestLookupsInFlightTogetherEachHearTheirRefusal's eight: no
// second refusal ever came). Both are refused: the bus refuses the
// connection that subject now. It was handed to the oldest alone, and
// the other waited out its 30 s.
func TestARefusalIsHeardByEveryCallInFlightOnItsSubject(t *testing.T) {
	const subject = "$JS.API.STREAM.INFO.KV_closed"
	h := &hearing{}
	var got []string
	for range 2 {
		forget := h.await(func(s string) bool { return s == subject }, func(s string) { got = append(got, s) })
		defer forget()
	}
	other := h.await(func(s string) bool { return s == "$JS.API.STREAM.INFO.KV_open" }, func(s string) { t.Errorf("a call on another subject heard %s", s) })
	defer other()
	h.heard(fmt.Errorf("%w: Permissions Violation for Publish to %q", nats.ErrPermissionViolation, subject))
	if len(got) != 2 {
		t.Fatalf("one refusal with two calls in flight on its subject was heard by %d of them, want both", len(got))
	}
	if h.take(func(s string) bool { return s == subject }) {
		t.Fatal("a refusal the calls in flight heard was also kept for a later timeout")
	}
}

// TestARefusalNoCallAwaitedIsTakenByOneTimeout: a refusal no call awaited
// (a plain request, not LookupKV's or HearKV's) is the reason of the
// timeout asked of first, and of that same timeout asked again at once,
// but not of a timeout asked of later: one refusal, one request.
func TestARefusalNoCallAwaitedIsTakenByOneTimeout(t *testing.T) {
	s := refusingBus(t)
	nc := connect(t, Options{URL: s.ClientURL(), User: "ace", Password: "ace", Log: zerolog.Nop()})
	js := newJS(t, nc)
	_, err := nc.Request("$JS.API.STREAM.INFO.KV_closed", nil, 300*time.Millisecond)
	if !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("a plain request the bus refuses: %v, want nats' timeout", err)
	}
	h := heardOn(nc)
	if h == nil {
		t.Fatal("Connect's connection has no hearing")
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.kept) == 0 {
			return errors.New("the refusal is not heard yet")
		}
		return nil
	})
	if !Refused(js, err, "KV_closed") {
		t.Fatal("the refused request's timeout is not said refused")
	}
	if !Refused(js, err, "KV_closed") {
		t.Fatal("the same timeout asked of again at once is not said refused")
	}
	defer func(d time.Duration) { askedAgain = d }(askedAgain)
	askedAgain = 0 // what follows is later
	if Refused(js, err, "KV_closed") {
		t.Fatal("a later timeout is said refused by a refusal an earlier one took")
	}
}
