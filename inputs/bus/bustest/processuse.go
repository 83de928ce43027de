package bustest

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Connect connects to every server of the cluster, reconnecting for ever:
// the other nodes and the controller, whom no crash of one member stops.
func (c *ProcessCluster) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return connectAll(t, c.URLs)
}

// KV makes bucket with a replica on every server, tried again for up to
// 30 s while the cluster elects its leaders.
func (c *ProcessCluster) KV(t testing.TB, js jetstream.JetStream, bucket string) jetstream.KeyValue {
	t.Helper()
	return replicatedKV(t, js, bucket, len(c.Names))
}

// Bystander is the index of the first server that leads neither the
// cluster's JetStream nor any of streams: its crash costs no election.
func (c *ProcessCluster) Bystander(t testing.TB, js jetstream.JetStream, streams ...string) int {
	t.Helper()
	leads := map[string]bool{c.MetaLeader(t, 0): true}
	for _, s := range streams {
		leads[c.Names[c.Leader(t, js, s)]] = true
	}
	for i, n := range c.Names {
		if !leads[n] {
			return i
		}
	}
	t.Fatalf("every server of the cluster leads something of %v", streams)
	return 0
}

// AwaitKnown waits up to 10 s until nc has heard of every server of the
// cluster from the one it connected to, so that it can reconnect to any.
func (c *ProcessCluster) AwaitKnown(t testing.TB, nc *nats.Conn) {
	t.Helper()
	Eventually(t, 10*time.Second, func() error {
		if n := len(nc.Servers()); n != len(c.Names) {
			return fmt.Errorf("the client knows %d servers of %d", n, len(c.Names))
		}
		return nil
	})
}
