package server

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A bus that refuses the server's user (a wrong password here; a revoked
// user alike) makes nats.go close the connection for good: Run says the
// bus's reason and returns an error within seconds, rather than retry a
// closed connection for ever (and leave /metrics unanswered).
func TestRunEndsWhenTheBusRefusesItsUser(t *testing.T) {
	s := bustest.Run(t, authtest.ConfigOptions(t, "../../../examples/nats/server.conf"))
	u, _ := url.Parse(s.ClientURL())
	u.User = url.UserPassword("mesh-provisioner", "not-its-password")
	var logs bustest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- Run(ctx, Config{NATSURL: u.String(), RegistryEvery: time.Hour, Log: zerolog.New(&logs)})
	}()

	select {
	case err := <-done:
		t.Logf("Run returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
		t.Logf("it logged:\n%s", logs.String())
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
			t.Errorf("Run returned %v; want an error naming the authorization violation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Run still running 10 s after the bus refused its user; it logged:\n%s", logs.String())
	}
	if !strings.Contains(strings.ToLower(logs.String()), "authorization violation") {
		t.Errorf("the log does not say the bus refused the user:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "not-its-password") {
		t.Errorf("the log holds the password:\n%s", logs.String())
	}
}
