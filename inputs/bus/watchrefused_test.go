package bus

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// watchOfRefused runs a Watch of bucket "closed" (holding one key, ace.k)
// under filter as the user ace, whose permissions are perms, on a connection made by Connect
// (named provisioner.test: its inbox prefix is _INBOX.provisioner.test),
// and returns its updates and what it logged.
func watchOfRefused(t *testing.T, filter string, perms *server.Permissions) (<-chan Update, *bustest.Buffer) {
	t.Helper()
	s := bustest.Start(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "ace", Password: "ace", Permissions: perms},
			{Username: "admin", Password: "admin"},
		}
	})
	_, ajs := bustest.JetStream(t, s, nats.UserInfo("admin", "admin"))
	put(t, createBucket(t, ajs, "closed"), "ace.k", "v")
	js := newJS(t, connect(t, Options{URL: s.ClientURL(), User: "ace", Password: "ace", Log: zerolog.Nop()}))
	logs := &bustest.Buffer{}
	out := make(chan Update, 16)
	w := NewWatch(js, "closed", filter, out, zerolog.New(logs).Level(zerolog.WarnLevel))
	w.Recheck = time.Hour // one look: what it says is the first look's
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return out, logs
}

// notPermittedSaid waits for the watch's NotPermitted (no snapshot before
// it: the watch never read the bucket) and for the warning that says why,
// and returns that warning.
func notPermittedSaid(t *testing.T, out <-chan Update, logs *bustest.Buffer) string {
	t.Helper()
	u := next(t, out, 15*time.Second)
	if !u.NotPermitted {
		t.Fatalf("first update %s, want NotPermitted", describe(u))
	}
	var said string
	bustest.Eventually(t, 5*time.Second, func() error {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "does not permit reading this bucket") {
				said = line
				return nil
			}
		}
		return errors.New("not said yet")
	})
	return said
}

// TestAWatchWhoseConsumerIsRefusedSaysNotPermittedAtOnce: the bus lets
// the user look the bucket up but refuses the watch's consumer (its
// $JS.API.CONSUMER.CREATE.KV_<bucket>… request). The watch says
// NotPermitted as soon as the bus says so, heard on the connection,
// naming the refused request; before, nats.go waited out its 5 s request
// timeout and the watch said a "context deadline exceeded" the refusal
// kept on the connection was then taken to explain.
func TestAWatchWhoseConsumerIsRefusedSaysNotPermittedAtOnce(t *testing.T) {
	out, logs := watchOfRefused(t, ">", &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"$JS.API.CONSUMER.CREATE.KV_closed.>"}},
	})
	said := notPermittedSaid(t, out, logs)
	for _, want := range []string{"the bus refused the read of bucket closed", `for publish to \"$JS.API.CONSUMER.CREATE.KV_closed.`} {
		if !strings.Contains(said, want) {
			t.Errorf("the watch said %s\nwant it to say %s", said, want)
		}
	}
	if strings.Contains(said, "deadline") {
		t.Errorf("the watch waited out a timeout: %s", said)
	}
}

// TestAWatchWhoseDeliverySubscriptionIsRefusedSaysNotPermitted: the bus
// lets the user make the watch's consumer but not subscribe to its
// delivery subject (the user may hear replies, _INBOX.<name>.<id>.<n>, but
// not a subject one token shorter, where a watcher's values come). The
// watch says NotPermitted, naming the refused subscription; before, no
// value ever came, and the watch restarted every init timeout (30 s) for
// ever saying no end of its initial values, or, on a filter that held
// nothing, said an empty snapshot and was deaf after it.
func TestAWatchWhoseDeliverySubscriptionIsRefusedSaysNotPermitted(t *testing.T) {
	for _, filter := range []string{">", "nobody.>"} { // values to deliver, and none
		t.Run(filter, func(t *testing.T) {
			out, logs := watchOfRefused(t, filter, &server.Permissions{
				Publish:   &server.SubjectPermission{Allow: []string{">"}},
				Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.provisioner.test.*.*"}},
			})
			said := notPermittedSaid(t, out, logs)
			for _, want := range []string{"the bus refused the read of bucket closed", `for subscription to \"_INBOX.provisioner.test.`} {
				if !strings.Contains(said, want) {
					t.Errorf("the watch said %s\nwant it to say %s", said, want)
				}
			}
		})
	}
}

// TestAWatchWhoseFlowControlIsRefusedSaysNotPermitted: the bus lets the
// user make the watch's consumer and hear its values, but not answer the
// consumer's flow control ($JS.FC.KV_<bucket>.…, the right NATS-NOTES
// calls easy to miss): the server stops delivering after the first few
// hundred values. The watch says NotPermitted, naming the refused
// subject; before, it restarted at every init timeout (30 s) for ever,
// saying no end of its initial values, and never said why.
func TestAWatchWhoseFlowControlIsRefusedSaysNotPermitted(t *testing.T) {
	s, ajs := aceDenied(t, "$JS.FC.KV_closed.>")
	kv := createBucket(t, ajs, "closed")
	value := strings.Repeat("v", 4096)
	for i := range 1000 {
		if _, err := kv.PutString(context.Background(), "ace.k"+strconv.Itoa(i), value); err != nil {
			t.Fatal(err)
		}
	}
	js := newJS(t, connect(t, Options{URL: s.ClientURL(), User: "ace", Password: "ace", Log: zerolog.Nop()}))
	logs := &bustest.Buffer{}
	out := make(chan Update, 16)
	w := NewWatch(js, "closed", ">", out, zerolog.New(logs).Level(zerolog.WarnLevel))
	w.Recheck = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	said := notPermittedSaid(t, out, logs)
	for _, want := range []string{"the bus refused the read of bucket closed", `for publish to \"$JS.FC.KV_closed.`} {
		if !strings.Contains(said, want) {
			t.Errorf("the watch said %s\nwant it to say %s", said, want)
		}
	}
}
