package bustest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsserver "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options returns the options Start uses: nats-server's test defaults on
// loopback, any free port, JetStream storing in a new temporary directory.
func Options(t testing.TB) server.Options {
	t.Helper()
	o := natsserver.DefaultTestOptions
	o.Port = -1
	o.JetStream = true
	o.StoreDir = t.TempDir()
	return o
}

// Start runs a nats-server with JetStream in the test process, shut down
// when the test ends. tweak, when given, changes the options first (a fixed
// port to restart on, users and permissions, a max payload …).
func Start(t testing.TB, tweak ...func(*server.Options)) *server.Server {
	t.Helper()
	o := Options(t)
	for _, f := range tweak {
		f(&o)
	}
	return Run(t, &o)
}

// Run starts a nats-server with exactly o (for a restart on the same port
// and store directory), shut down when the test ends.
func Run(t testing.TB, o *server.Options) *server.Server {
	t.Helper()
	o.NoLog, o.NoSigs = true, true
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatalf("starting nats-server: %v", err)
	}
	go s.Start()
	// A restart on a store recovers it first: under -race on a loaded
	// machine that took over 10 s.
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server not ready within 30s")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// Stop shuts s down and waits until it is gone.
func Stop(s *server.Server) {
	s.Shutdown()
	s.WaitForShutdown()
}

// FreePort is a loopback port nobody listens on right now, for a server
// that will be stopped and started again on it. It is drawn below the
// kernel's ephemeral range (where every outgoing connection's local port
// and every ":0" listener's port come from): a port from that range, free
// while its server is down, could be taken in between by any connection
// of the test process or of another one on the machine (a chaos run's
// clients found another cluster's member on their member's port).
func FreePort(t testing.TB) int {
	t.Helper()
	lo, hi := stablePorts()
	for range 1000 {
		port := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: draw again
		}
		l.Close()
		return port
	}
	t.Fatalf("no free loopback port in %d–%d", lo, hi)
	return 0
}

// stablePorts is the range FreePort draws from: from 10000 up to the
// start of the kernel's ephemeral range (32768 on Linux by default).
func stablePorts() (lo, hi int) {
	lo, hi = 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var first, last int
		if _, err := fmt.Sscan(string(b), &first, &last); err == nil && first > lo+1000 {
			hi = first
		}
	}
	return lo, hi
}

// Connect opens a connection to s, closed when the test ends.
func Connect(t testing.TB, s *server.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connecting to %s: %v", s.ClientURL(), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream connects to s and returns the connection's JetStream context.
func JetStream(t testing.TB, s *server.Server, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := Connect(t, s, opts...)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// Bucket makes (or finds) the key-value bucket name with default settings.
func Bucket(t testing.TB, js jetstream.JetStream, name string) jetstream.KeyValue {
	t.Helper()
	return CreateKV(t, js, jetstream.KeyValueConfig{Bucket: name})
}

// CreateKV makes (or finds) the key-value bucket cfg says. A stream
// deleted a moment ago may still be having its store removed: the server
// then refuses to create one of that name ("error creating store for
// stream", 10049) for a few milliseconds, which tests that delete a bucket
// and make it again at once meet now and then; CreateKV tries again for up
// to 3 s on that error alone.
func CreateKV(t testing.TB, js jetstream.JetStream, cfg jetstream.KeyValueConfig) jetstream.KeyValue {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		kv, err := js.CreateKeyValue(context.Background(), cfg)
		var apiErr *jetstream.APIError
		if err != nil && errors.As(err, &apiErr) && apiErr.ErrorCode == 10049 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("creating bucket %s: %v", cfg.Bucket, err)
		}
		return kv
	}
}

// Same is a tweak giving a new server s's port and JetStream store
// directory: one started with it after Stop(s) is s restarted, so clients
// reconnect to the same URL and find the same streams. Take it while s runs.
func Same(s *server.Server) func(*server.Options) {
	port := s.Addr().(*net.TCPAddr).Port
	dir := filepath.Dir(s.StoreDir()) // the server stores under <StoreDir>/jetstream
	return func(o *server.Options) { o.Port, o.StoreDir = port, dir }
}

// Restart stops s and starts it again on the same port and store; tweak
// repeats whatever else s was started with (users, limits …).
func Restart(t testing.TB, s *server.Server, tweak ...func(*server.Options)) *server.Server {
	t.Helper()
	again := Same(s)
	Stop(s)
	return Start(t, append([]func(*server.Options){again}, tweak...)...)
}
