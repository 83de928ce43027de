package bustest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is a JetStream cluster of nats-servers in the test process, on
// loopback ports that stay theirs when a server is started again.
type Cluster struct {
	Servers []*server.Server
	Tweaks  []func(*server.Options) // each server's name, ports and routes
	Ports   []int                   // each server's client port
	URLs    string                  // every server's client URL, comma-separated
}

// StartCluster starts n servers named s0, s1, … as the cluster "mesh".
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	client, route := make([]int, n), make([]int, n)
	for i := range n {
		client[i], route[i] = FreePort(t), FreePort(t)
	}
	c := &Cluster{Ports: client}
	var urls []string
	for i := range n {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", client[i]))
	}
	c.URLs = strings.Join(urls, ",")
	for i := range n {
		tweak := func(o *server.Options) {
			o.ServerName = fmt.Sprintf("s%d", i)
			o.Port = client[i]
			o.Cluster = server.ClusterOpts{Name: "mesh", Host: "127.0.0.1", Port: route[i]}
			for j := range n {
				if j != i {
					o.Routes = append(o.Routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", route[j])})
				}
			}
		}
		c.Tweaks = append(c.Tweaks, tweak)
		c.Servers = append(c.Servers, Start(t, tweak))
	}
	return c
}

// Stop stops server i and returns what starts it again on its ports
// and store.
func (c *Cluster) Stop(t testing.TB, i int) (startAgain func()) {
	t.Helper()
	again := Same(c.Servers[i])
	Stop(c.Servers[i])
	return func() {
		t.Helper()
		c.Servers[i] = Start(t, c.Tweaks[i], again)
	}
}

// PutEventually puts value at key, tried again for up to 30 s: a bucket
// of a cluster just made, or on a loaded machine, may have no leader yet
// or answer late.
func PutEventually(t testing.TB, kv jetstream.KeyValue, key string, value []byte) {
	t.Helper()
	Eventually(t, 30*time.Second, func() error {
		_, err := kv.Put(context.Background(), key, value)
		return err
	})
}

// Follower is the index of a server that holds stream and is not its
// leader, once it has one (waited for up to 30 s).
func (c *Cluster) Follower(t testing.TB, js jetstream.JetStream, stream string) int {
	t.Helper()
	var leader string
	Eventually(t, 30*time.Second, func() error {
		st, err := js.Stream(context.Background(), stream)
		if err != nil {
			return err
		}
		if ci := st.CachedInfo().Cluster; ci == nil || ci.Leader == "" {
			return fmt.Errorf("stream %s has no leader yet", stream)
		} else {
			leader = ci.Leader
		}
		return nil
	})
	for i, s := range c.Servers {
		if s.Name() != leader {
			return i
		}
	}
	t.Fatalf("every server of the cluster leads %s", stream)
	return 0
}

// Connect connects to every server of the cluster, reconnecting for ever.
func (c *Cluster) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return connectAll(t, c.URLs)
}

// connectAll connects to urls (comma-separated), reconnecting for ever.
func connectAll(t testing.TB, urls string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// PutOthers puts n values to bucket under 500 keys of other nodes
// (n<i>.x), a thousand in flight at a time, as a fleet's other nodes
// write: what a member stopped meanwhile has to catch up on.
func PutOthers(t testing.TB, js jetstream.JetStream, bucket string, n int) {
	t.Helper()
	for i := range n {
		if _, err := js.PublishAsync(fmt.Sprintf("$KV.%s.n%d.x", bucket, i%500), fmt.Append(nil, i)); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 || i == n-1 { // within the publisher's bound on acks awaited
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				t.Fatal("the other nodes' puts not acknowledged within a minute")
			}
		}
	}
}

// KV makes bucket with a replica on every server, tried again for up to
// 30 s while the cluster elects its leaders.
func (c *Cluster) KV(t testing.TB, js jetstream.JetStream, bucket string) jetstream.KeyValue {
	t.Helper()
	return replicatedKV(t, js, bucket, len(c.Servers))
}

// replicatedKV makes bucket with n replicas, tried again for up to 30 s
// while the cluster elects its leaders.
func replicatedKV(t testing.TB, js jetstream.JetStream, bucket string, n int) jetstream.KeyValue {
	t.Helper()
	var kv jetstream.KeyValue
	Eventually(t, 30*time.Second, func() (err error) {
		kv, err = js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: bucket, Replicas: n})
		return err
	})
	return kv
}

// MissedByAMember stops a server holding bucket's stream that does not
// lead it, runs missed (what it is to miss), puts 20,000 of other nodes'
// values to bucket (PutOthers) and starts it again: it then catches up
// with all of it, for a second or so. It returns the server's index.
func (c *Cluster) MissedByAMember(t testing.TB, js jetstream.JetStream, bucket string, missed func()) int {
	t.Helper()
	lag := c.Follower(t, js, "KV_"+bucket)
	startAgain := c.Stop(t, lag)
	missed()
	PutOthers(t, js, bucket, 20000)
	startAgain()
	return lag
}
