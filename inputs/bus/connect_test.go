package bus

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/rs/zerolog"
)

func TestConnectWaitsForABusStartedLater(t *testing.T) {
	port := bustest.FreePort(t)
	var connects atomic.Int32
	var logs bustest.Buffer // not t.Log: the closed handler may log after the test
	nc, err := Connect(Options{
		URL:         fmt.Sprintf("nats://127.0.0.1:%d", port),
		Name:        "provisioner.ace",
		Log:         zerolog.New(&logs),
		OnReconnect: func() { connects.Add(1) },
	})
	if err != nil {
		t.Fatalf("Connect with no bus yet: %v", err)
	}
	t.Cleanup(nc.Close)
	if nc.IsConnected() {
		t.Fatal("connected before any server was there")
	}

	time.Sleep(300 * time.Millisecond) // the bus comes up a moment later
	bustest.Start(t, func(o *server.Options) { o.Port = port })
	bustest.Eventually(t, 5*time.Second, func() error {
		if !nc.IsConnected() {
			return fmt.Errorf("status %v", nc.Status())
		}
		if connects.Load() != 1 {
			return fmt.Errorf("OnReconnect called %d times, want 1", connects.Load())
		}
		return nil
	})
}

func TestConnectReportsDisconnectAndReconnect(t *testing.T) {
	s := bustest.Start(t)
	again := bustest.Same(s)
	var disconnects, reconnects atomic.Int32
	var logs bustest.Buffer
	nc := connect(t, Options{
		URL:          s.ClientURL(),
		Log:          zerolog.New(&logs),
		OnDisconnect: func(error) { disconnects.Add(1) },
		OnReconnect:  func() { reconnects.Add(1) },
	})
	if reconnects.Load() != 0 {
		t.Fatal("OnReconnect called on a first connect that succeeded at once")
	}

	bustest.Stop(s)
	bustest.Eventually(t, 5*time.Second, func() error {
		if disconnects.Load() != 1 {
			return fmt.Errorf("OnDisconnect called %d times", disconnects.Load())
		}
		return nil
	})
	bustest.Start(t, again)
	bustest.Eventually(t, 5*time.Second, func() error {
		if !nc.IsConnected() || reconnects.Load() != 1 {
			return fmt.Errorf("connected %v, OnReconnect called %d times", nc.IsConnected(), reconnects.Load())
		}
		return nil
	})
	for _, want := range []string{"disconnected from the bus", "reconnected to the bus"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

func TestConnectRepliesComeOnTheNamedInboxAndViolationsAreWarned(t *testing.T) {
	const secret = "s3cret-pw-Value"
	s := bustest.Start(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "ace", Password: secret, Permissions: &server.Permissions{
				Publish:   &server.SubjectPermission{Allow: []string{"svc"}},
				Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.provisioner.ace.>"}},
			}},
			{Username: "svc", Password: "svc"},
		}
	})
	responder := bustest.Connect(t, s, nats.UserInfo("svc", "svc"))
	if _, err := responder.Subscribe("svc", func(m *nats.Msg) { m.Respond([]byte("pong")) }); err != nil {
		t.Fatal(err)
	}
	responder.Flush()

	var logs bustest.Buffer
	nc := connect(t, Options{URL: s.ClientURL(), Name: "provisioner.ace", User: "ace", Password: secret, Log: zerolog.New(&logs)})
	if in := nc.NewInbox(); !strings.HasPrefix(in, "_INBOX.provisioner.ace.") {
		t.Errorf("inbox %q does not start with _INBOX.provisioner.ace.", in)
	}
	reply, err := nc.Request("svc", nil, 2*time.Second)
	if err != nil || string(reply.Data) != "pong" {
		t.Fatalf("request through the restricted inbox: %v", err)
	}

	if err := nc.Publish("forbidden", nil); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	bustest.Eventually(t, 5*time.Second, func() error {
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var ev struct{ Level, Error string }
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Level == "warn" &&
				strings.Contains(ev.Error, `Permissions Violation for Publish to "forbidden"`) {
				return nil
			}
		}
		return fmt.Errorf("no warn line naming the violation in:\n%s", logs.String())
	})
	if strings.Contains(logs.String(), secret) {
		t.Fatal("the password reached the log")
	}
}

func TestInboxPrefixKeepsNameTokensSafe(t *testing.T) {
	for name, want := range map[string]string{
		"provisioner.ace":    "_INBOX.provisioner.ace",
		"provisioner.a b*>":  "_INBOX.provisioner.a_b__",
		"..x..y.":            "_INBOX.x.y",
		"provisioner.sh=3Ax": "_INBOX.provisioner.sh=3Ax",
		"":                   "",
		"...":                "",
	} {
		if got := InboxPrefix(name); got != want {
			t.Errorf("InboxPrefix(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestReconnectDelayDoublesFrom100msTo5sWithJitter(t *testing.T) {
	for attempts, base := range map[int]time.Duration{
		1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond,
		6: 3200 * time.Millisecond, 7: 5 * time.Second, 100: 5 * time.Second,
	} {
		seen := map[time.Duration]bool{}
		for range 50 {
			d := reconnectDelay(attempts)
			if d < base*4/5 || d > base*6/5 {
				t.Fatalf("reconnectDelay(%d) = %s, want within 20%% of %s", attempts, d, base)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("reconnectDelay(%d) has no jitter", attempts)
		}
	}
}

func TestRedactURLHidesThePassword(t *testing.T) {
	got := RedactURL("nats://ace:pw@h1:4222,nats://h2:4222")
	if got != "nats://[redacted]@h1:4222,nats://h2:4222" {
		t.Fatalf("redactURL = %q", got)
	}
}

// A publish line over the server's max_control_line makes the server
// answer "maximum control line exceeded" and nats.go close the connection
// for good: OnClosed says so, with the error (issue 19.1).
func TestOnClosedSaysWhyTheConnectionClosedForGood(t *testing.T) {
	s := bustest.Start(t)
	closed := make(chan error, 1)
	var logs bustest.Buffer
	nc := connect(t, Options{URL: s.ClientURL(), Log: zerolog.New(&logs), OnClosed: func(err error) { closed <- err }})
	_ = nc.Publish(strings.Repeat("s", 5000), []byte("x"))
	_ = nc.Flush()
	select {
	case err := <-closed:
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "maximum control line exceeded") {
			t.Fatalf("OnClosed(%v), want the server's maximum control line exceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("OnClosed not called; connection status %v, last error %v", nc.Status(), nc.LastError())
	}
	if !nc.IsClosed() {
		t.Fatalf("status %v after OnClosed", nc.Status())
	}
}

// A bus that refuses the user at the first try is not one that is down:
// the "not reachable yet" line carries the bus's reason.
func TestConnectSaysWhyTheFirstTryFailed(t *testing.T) {
	s := bustest.Start(t, func(o *server.Options) { o.Username, o.Password = "ace", "right" })
	var logs bustest.Buffer
	nc, err := Connect(Options{URL: s.ClientURL(), User: "ace", Password: "wrong", Log: zerolog.New(&logs)})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	if !strings.Contains(logs.String(), "bus not reachable yet") {
		t.Fatalf("logged:\n%s", logs.String())
	}
	// The reason is in that line, or (nats.go having moved it on to its
	// reconnect loop already) in one that follows it.
	bustest.Eventually(t, 5*time.Second, func() error {
		if !strings.Contains(strings.ToLower(logs.String()), "authorization violation") {
			return fmt.Errorf("no reason logged:\n%s", logs.String())
		}
		return nil
	})
	if out := logs.String(); strings.Contains(out, "wrong") {
		t.Errorf("the password was logged:\n%s", out)
	}
}
