package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// cluster is n nats-servers on loopback ports forming one JetStream
// cluster (n = 3, every bucket R3) or a lone server (n = 1, the fresh
// render's own bus). Members are stopped and started again on their store
// directories; the driver's connection knows every URL.
type cluster struct {
	t       *testing.T
	servers []*server.Server // nil while stopped
	tweaks  []func(*server.Options)
	agains  []func(*server.Options) // port and store of each, taken at its first start
	urls    string
	nc      *nats.Conn
	js      jetstream.JetStream
}

func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{t: t}
	client, route := make([]int, n), make([]int, n)
	for i := range n {
		client[i], route[i] = bustest.FreePort(t), bustest.FreePort(t)
	}
	var urls []string
	for i := range n {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", client[i]))
	}
	c.urls = strings.Join(urls, ",")
	// A name of its own: a member of another run's cluster found on one
	// of these ports (it cannot be, see FreePort, but if) is refused as a
	// route instead of joining this cluster.
	name := fmt.Sprintf("chaos-%x", rand.Uint64())
	for i := range n {
		tweak := func(o *server.Options) {
			o.ServerName = fmt.Sprintf("s%d", i)
			o.Port = client[i]
			if n == 1 {
				return
			}
			o.Cluster = server.ClusterOpts{Name: name, Host: "127.0.0.1", Port: route[i]}
			for j := range n {
				if j != i {
					o.Routes = append(o.Routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", route[j])})
				}
			}
		}
		s := bustest.Start(t, tweak)
		c.tweaks, c.servers = append(c.tweaks, tweak), append(c.servers, s)
		c.agains = append(c.agains, bustest.Same(s))
	}
	nc, err := nats.Connect(c.urls, nats.Name("chaos driver"), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	c.js, _ = jetstream.New(nc)
	return c
}

// replicas is how many copies each bucket keeps.
func (c *cluster) replicas() int { return len(c.servers) }

// stop stops member i.
func (c *cluster) stop(i int) {
	if c.servers[i] != nil {
		bustest.Stop(c.servers[i])
		c.servers[i] = nil
	}
}

// start starts member i again on its port and store.
func (c *cluster) start(i int) {
	if c.servers[i] == nil {
		c.servers[i] = bustest.Start(c.t, c.tweaks[i], c.agains[i])
	}
}

// stopAll stops every member.
func (c *cluster) stopAll() {
	for i := range c.servers {
		c.stop(i)
	}
}

// startAll starts every member stopped (all at once: a cluster restarted
// whole needs a quorum back before any of it answers).
func (c *cluster) startAll() {
	done := make(chan struct{}, len(c.servers))
	for i := range c.servers {
		go func() { defer func() { done <- struct{}{} }(); c.start(i) }()
	}
	for range c.servers {
		<-done
	}
}

// retry runs op until it succeeds (each try with a 5 s context), through
// leader elections and restarts; it fails the test after a minute.
func (c *cluster) retry(what string, op func(ctx context.Context) error) {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := op(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: %v\nthe cluster: %s", what, err, c.state())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// state says, for a failure's message, what each member thinks of the
// cluster: stopped, or its meta leader and its streams with and without
// a leader.
func (c *cluster) state() string {
	var b strings.Builder
	for i, s := range c.servers {
		fmt.Fprintf(&b, "\n  s%d: ", i)
		if s == nil {
			b.WriteString("stopped")
			continue
		}
		info, err := s.Jsz(&server.JSzOptions{Accounts: true, Streams: true, RaftGroups: true})
		if err != nil {
			fmt.Fprintf(&b, "jsz: %v", err)
			continue
		}
		if info.Meta != nil {
			fmt.Fprintf(&b, "meta leader %q (quorum %d of %d, %d pending); ", info.Meta.Leader, info.Meta.QuorumNeeded, info.Meta.Size, info.Meta.Pending)
		}
		var led, leaderless []string
		for _, a := range info.AccountDetails {
			for _, st := range a.Streams {
				if st.Cluster != nil && st.Cluster.Leader != "" {
					led = append(led, st.Name)
				} else {
					leaderless = append(leaderless, st.Name)
				}
			}
		}
		fmt.Fprintf(&b, "%d streams with a leader, without: %v", len(led), leaderless)
	}
	return b.String()
}

// kv opens bucket (which must exist).
func (c *cluster) kv(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	return c.js.KeyValue(ctx, bucket)
}

// put puts key=value in bucket, retrying.
func (c *cluster) put(bucket, key string, value []byte) {
	c.t.Helper()
	c.retry("putting "+bucket+" "+key, func(ctx context.Context) error {
		kv, err := c.kv(ctx, bucket)
		if err == nil {
			_, err = kv.Put(ctx, key, value)
		}
		return err
	})
}

// del deletes key of bucket, retrying.
func (c *cluster) del(bucket, key string) {
	c.t.Helper()
	c.retry("deleting "+bucket+" "+key, func(ctx context.Context) error {
		kv, err := c.kv(ctx, bucket)
		if err == nil {
			err = kv.Delete(ctx, key)
		}
		return err
	})
}

// makeBuckets creates the other domains' buckets and the object store
// (the server makes its own four), each with every member as a replica.
func (c *cluster) makeBuckets(kvs []string, store string) {
	c.t.Helper()
	for _, b := range kvs {
		c.retry("creating bucket "+b, func(ctx context.Context) error {
			_, err := c.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b, Replicas: c.replicas()})
			return err
		})
	}
	c.retry("creating object store "+store, func(ctx context.Context) error {
		_, err := c.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: store, Replicas: c.replicas()})
		return err
	})
}

// putObject puts an object in store, retrying.
func (c *cluster) putObject(store, name string, data []byte) {
	c.t.Helper()
	c.retry("putting object "+name, func(ctx context.Context) error {
		obs, err := c.js.ObjectStore(ctx, store)
		if err == nil {
			_, err = obs.PutBytes(ctx, name, data)
		}
		return err
	})
}

// entries is every key and value bucket holds now (none when the bucket
// is not there).
func (c *cluster) entries(bucket string) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := c.kv(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", bucket, err)
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", bucket, err)
	}
	out := map[string][]byte{}
	for k := range lister.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			if err == jetstream.ErrKeyNotFound {
				continue
			}
			return nil, fmt.Errorf("reading %s %s: %w", bucket, k, err)
		}
		out[k] = e.Value()
	}
	return out, nil
}

// disconnect cuts the connection named name on whichever member holds it.
func (c *cluster) disconnect(name string) int {
	cut := 0
	for _, s := range c.servers {
		if s == nil {
			continue
		}
		cz, err := s.Connz(&server.ConnzOptions{})
		if err != nil {
			continue
		}
		for _, conn := range cz.Conns {
			if conn.Name == name && s.DisconnectClientByID(conn.Cid) == nil {
				cut++
			}
		}
	}
	return cut
}
