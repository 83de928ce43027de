package examples

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// failWait is how long a call expected to be refused waits: a refused
// publish is not answered, so the call ends at its timeout.
const failWait = 1500 * time.Millisecond

// startBus runs nats-server in the test process with examples/nats/server.conf,
// only moved to a free loopback port and a temporary store.
func startBus(t *testing.T) *server.Server {
	t.Helper()
	o, err := server.ProcessConfigFile("nats/server.conf")
	if err != nil {
		t.Fatalf("nats/server.conf: %v", err)
	}
	o.Host, o.Port = "127.0.0.1", -1
	o.HTTPHost, o.HTTPPort = "", 0
	o.StoreDir = t.TempDir()
	return bustest.Run(t, o)
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

// inboxOf is the inbox prefix nats/server.conf gives each user.
func inboxOf(name string) string {
	for _, p := range []string{"provisioner-", "toolrunner-"} {
		if node, ok := strings.CutPrefix(name, p); ok {
			return "_INBOX." + strings.TrimSuffix(p, "-") + "." + node
		}
	}
	if name == "lab" {
		return ""
	}
	return "_INBOX." + name
}

// connect logs in as name with its dev password and its inbox prefix.
func connect(t *testing.T, s *server.Server, name string) *user {
	t.Helper()
	u := &user{name: name, errs: &asyncErrs{}}
	opts := []nats.Option{
		nats.Name(name),
		nats.UserInfo(name, "dev-only-"+name),
		nats.ErrorHandler(u.errs.handler),
	}
	if p := inboxOf(name); p != "" {
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
	bustest.Eventually(t, 3*time.Second, func() error {
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
	bustest.Eventually(t, 3*time.Second, func() error {
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
