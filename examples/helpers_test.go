package examples

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// failWait is how long a call expected to be refused waits: a refused
// publish is not answered, so the call ends at its timeout.
const failWait = 1500 * time.Millisecond

// The two ways the example bus knows its users, both with the rights of
// nodes/spec RightsOf: the passwords of nats/server.conf (generated from
// it), and JWT users of an operator made from it, as a real fleet runs.
const (
	configUsers = "config users"
	jwtUsers    = "JWT users"
)

// forEachBus runs test once with each way of knowing the users.
func forEachBus(t *testing.T, test func(t *testing.T, mode string)) {
	for _, mode := range []string{configUsers, jwtUsers} {
		t.Run(mode, func(t *testing.T) { test(t, mode) })
	}
}

// exampleNodes and exampleProviders are the mesh nats/server.conf is made for.
var (
	exampleNodes     = []string{"ace", "g14"}
	exampleProviders = []string{"gitea"}
)

// fleet is every user of the example mesh by name, with its rights.
func fleet(t *testing.T) map[string]spec.Rights {
	t.Helper()
	users, err := spec.Fleet(exampleNodes, exampleProviders)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]spec.Rights{}
	for _, r := range users {
		m[r.User] = r
	}
	return m
}

// credsOf holds the .creds file of each user of a bus in operator mode.
var credsOf sync.Map // *server.Server -> map[user]path

// startBus runs nats-server in the test process on a free loopback port
// with a temporary store: with examples/nats/server.conf (mode
// configUsers), or in operator mode with a JWT user per user of it.
func startBus(t *testing.T, mode string) *server.Server {
	t.Helper()
	if mode == jwtUsers {
		return startOperatorBus(t)
	}
	return bustest.Run(t, authtest.ConfigOptions(t, "nats/server.conf"))
}

// startOperatorBus runs a bus in operator mode whose users are JWTs made
// from nodes/spec RightsOf, each written to a .creds file.
func startOperatorBus(t *testing.T) *server.Server {
	t.Helper()
	s, creds := authtest.Bus(t, slices.Collect(maps.Values(fleet(t))))
	credsOf.Store(s, creds)
	t.Cleanup(func() { credsOf.Delete(s) })
	return s
}

// asyncErrs keeps what the server said asynchronously to one connection,
// where a permissions violation arrives.
type asyncErrs struct {
	mu   sync.Mutex
	errs []string
}

func (a *asyncErrs) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs = append(a.errs, err.Error())
}

func (a *asyncErrs) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.errs...)
}

// user is one connection of one user of the config.
type user struct {
	name string
	nc   *nats.Conn
	js   jetstream.JetStream
	errs *asyncErrs
}

// connect logs in as name, with its .creds file on a bus in operator mode
// and its dev password otherwise, and with its inbox prefix.
func connect(t *testing.T, s *server.Server, name string) *user {
	t.Helper()
	r, ok := fleet(t)[name]
	if !ok {
		t.Fatalf("no user %s in the example mesh", name)
	}
	u := &user{name: name, errs: &asyncErrs{}}
	opts := []nats.Option{
		nats.Name(name),
		nats.ErrorHandler(u.errs.handler),
	}
	if creds, ok := credsOf.Load(s); ok {
		opts = append(opts, nats.UserCredentials(creds.(map[string]string)[name]))
	} else {
		opts = append(opts, nats.UserInfo(name, auth.DevPassword(name)))
	}
	if p := r.Inbox; p != "" {
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connecting as %s: %v", name, err)
	}
	t.Cleanup(nc.Close)
	u.nc = nc
	if u.js, err = jetstream.New(nc); err != nil {
		t.Fatalf("jetstream as %s: %v", name, err)
	}
	return u
}

// refused waits until the server has said that u may not publish (verb
// "Publish") or subscribe (verb "Subscription") to subject.
func (u *user) refused(t *testing.T, verb, subject string) {
	t.Helper()
	want := fmt.Sprintf("Permissions Violation for %s to \"%s\"", verb, subject)
	bustest.Eventually(t, 10*time.Second, func() error {
		for _, e := range u.errs.all() {
			if strings.Contains(e, want) {
				return nil
			}
		}
		return fmt.Errorf("%s: no %q; the server said %q", u.name, want, u.errs.all())
	})
}

// refusedLike is refused for a subject known by its start and end only
// (a consumer's name in the middle is random).
func (u *user) refusedLike(t *testing.T, verb, prefix, suffix string) {
	t.Helper()
	head := fmt.Sprintf("Permissions Violation for %s to \"%s", verb, prefix)
	tail := suffix + `"`
	bustest.Eventually(t, 10*time.Second, func() error {
		for _, e := range u.errs.all() {
			if i := strings.Index(e, head); i >= 0 && strings.Contains(e[i:], tail) {
				return nil
			}
		}
		return fmt.Errorf("%s: no violation %s…%s; the server said %q", u.name, head, tail, u.errs.all())
	})
}

// clean fails the test when the server refused anything of u: a right the
// user needs is missing from the config.
func (u *user) clean(t *testing.T) {
	t.Helper()
	if err := u.nc.Flush(); err != nil {
		t.Fatalf("%s: flush: %v", u.name, err)
	}
	if errs := u.errs.all(); len(errs) > 0 {
		t.Fatalf("%s was refused something it needs: %q", u.name, errs)
	}
}

func (u *user) kv(t *testing.T, ctx context.Context, bucket string) jetstream.KeyValue {
	t.Helper()
	kv, err := u.js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatalf("%s: opening bucket %s: %v", u.name, bucket, err)
	}
	return kv
}

// watchSnapshot watches filter of kv until the "initial values done" nil
// and returns the keys seen.
func watchSnapshot(t *testing.T, kv jetstream.KeyValue, filter string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := kv.Watch(ctx, filter)
	if err != nil {
		t.Fatalf("watching %s of %s: %v", filter, kv.Bucket(), err)
	}
	defer func() { _ = w.Stop() }()
	var keys []string
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e := <-w.Updates():
			if e == nil {
				return keys
			}
			keys = append(keys, e.Key())
		case <-timeout:
			t.Fatalf("watching %s of %s: no end of the initial values within 5s (saw %q)", filter, kv.Bucket(), keys)
		}
	}
}

// meshFS is the example mesh directory.
func meshFS() fs.FS { return os.DirFS("mesh") }
