package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// clusterMesh is a mesh on a three-server JetStream cluster on loopback
// ports, every bucket R3: m.s is the first server, cluster all three.
type clusterMesh struct {
	*mesh
	cluster *bustest.Cluster
}

func newClusterMesh(t *testing.T) *clusterMesh {
	t.Helper()
	c := bustest.StartCluster(t, 3)
	cm := &clusterMesh{cluster: c}
	m := &mesh{t: t, s: cm.cluster.Servers[0], fills: &fillLog{}, logs: &bustest.Buffer{}}
	cm.mesh = m
	t.Cleanup(func() {
		for _, c := range m.cancel {
			c()
		}
	})
	nc, err := nats.Connect(cm.cluster.URLs, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	m.nc = nc
	m.js, _ = jetstream.New(nc)

	// The cluster is ready once it has a meta leader: buckets can be made.
	ctx := context.Background()
	bustest.Eventually(m.t, 30*time.Second, func() error {
		_, err := m.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: spec.AssignmentsBucket, Replicas: 3})
		return err
	})
	m.provision(3)
	return cm
}

// assign is mesh.assign through a cluster that may be electing the
// assignments bucket's leader (a put there timed out at once).
func (cm *clusterMesh) assign(node, module string, p nodes.Plan, templates map[string]string) {
	cm.t.Helper()
	if len(templates) > 0 {
		p.Templates.Ref, p.Templates.Digest = cm.archive(node+"-"+module, templates)
	}
	b, _ := json.Marshal(nodes.Assignment{Node: node, Module: module, Provisioning: p})
	cm.putEventually(spec.AssignmentsBucket, spec.EncodeKey(node, module), string(b))
}

// putEventually puts through a cluster that may be electing a leader.
func (cm *clusterMesh) putEventually(bucket, key, value string) {
	cm.t.Helper()
	bustest.Eventually(cm.t, 30*time.Second, func() error {
		kv, err := cm.js.KeyValue(context.Background(), bucket)
		if err != nil {
			return err
		}
		_, err = kv.Put(context.Background(), key, []byte(value))
		return err
	})
}

// connectedTo is the index of the server d is connected to.
func (cm *clusterMesh) connectedTo(d *Daemon) int {
	cm.t.Helper()
	var at int
	bustest.Eventually(cm.t, 10*time.Second, func() error {
		if !d.ready.Load() {
			return fmt.Errorf("client not ready")
		}
		u, err := url.Parse(d.nc.ConnectedUrl())
		if err != nil {
			return fmt.Errorf("client not connected")
		}
		for i, port := range cm.cluster.Ports {
			if u.Port() == fmt.Sprint(port) {
				at = i
				return nil
			}
		}
		return fmt.Errorf("connected to %s, none of the cluster's", u)
	})
	return at
}

// A three-server JetStream cluster with R3 buckets: the server the client
// is connected to is killed; the client fails over to another (its URL is
// the list of all three) and keeps filling. The killed server comes back:
// nothing breaks, and the module never reports failed.
func TestInAClusterTheClientFailsOverAndKeepsFilling(t *testing.T) {
	cm := newClusterMesh(t)
	cm.putEventually(spec.ConfigBucket, "ace.web.model", "opus")
	cm.putEventually(spec.ConfigBucket, "ace.web.flavour", "vanilla")
	cm.assign("ace", "web", webPlan(), webTemplates)
	states := cm.statesOf("ace", "web")
	d := cm.client("ace", func(c *Config) { c.Bus.URL = cm.cluster.URLs })
	cm.waitFile("/etc/web/c.conf", "flavour = vanilla\n")
	cm.waitState("ace", "web", "applied")

	k := cm.connectedTo(d)
	again := bustest.Same(cm.cluster.Servers[k])
	bustest.Stop(cm.cluster.Servers[k])
	start := time.Now()
	cm.putEventually(spec.ConfigBucket, "ace.web.flavour", "mint")
	cm.waitFileFor("/etc/web/c.conf", "flavour = mint\n", 45*time.Second)
	t.Logf("server s%d killed: the change was filled %v later", k, time.Since(start).Round(time.Millisecond))
	if now := cm.connectedTo(d); now == k {
		t.Fatalf("still connected to the killed server s%d", k)
	}

	cm.cluster.Servers[k] = bustest.Start(t, cm.cluster.Tweaks[k], again)
	cm.putEventually(spec.ConfigBucket, "ace.web.model", "sonnet")
	cm.waitFileFor("/etc/web/a.conf", "model = sonnet\nport = 8080\n", 45*time.Second)
	bustest.Eventually(cm.t, 30*time.Second, func() error {
		if r, _ := cm.report("ace", "web"); r["state"] != "applied" {
			return fmt.Errorf("report %v", r)
		}
		return nil
	})
	for _, s := range states() {
		if s == "failed" {
			t.Fatalf("the module reported failed during the failover: %v", states())
		}
	}
	if !contains(cm.logs.String(), "reconnected to the bus") {
		t.Fatal("the client's log does not say it reconnected")
	}
}

// A three-server cluster, the client connected to one server only; the
// server that holds its config watch's consumer is another, and is killed.
// The client's connection stays up, so nothing resyncs the watch, and the
// consumer is gone with the server: the watch's own look at its bucket
// (every 6 Rechecks, 0.6 s here) finds the value written meanwhile
// undelivered and makes the watcher again (inputs/bus lost.go), well
// before the consumer's heartbeats (minutes) would have.
func TestInAClusterAWatchWhoseConsumersServerIsKilledIsMadeAgain(t *testing.T) {
	cm := newClusterMesh(t)
	cm.putEventually(spec.ConfigBucket, "ace.web.model", "opus")
	cm.putEventually(spec.ConfigBucket, "ace.web.flavour", "vanilla")
	cm.assign("ace", "web", webPlan(), webTemplates)

	d, host, other := cm.clientBesideItsConsumer(t, "KV_"+spec.ConfigBucket)
	bustest.Stop(cm.cluster.Servers[host])
	start := time.Now()
	cm.putEventually(spec.ConfigBucket, "ace.web.flavour", "mint")
	cm.waitFileFor("/etc/web/c.conf", "flavour = mint\n", 20*time.Second)
	t.Logf("server s%d (the consumer's) killed: the change was filled %v later", host, time.Since(start).Round(time.Millisecond))
	if now := cm.connectedTo(d); now != other {
		t.Fatalf("the client moved from server %d to %d: this is not the case of a lost consumer", other, now)
	}
	if !contains(cm.logs.String(), "consumer was lost") {
		t.Errorf("the client's log does not say the consumer was lost:\n%s", cm.logs.String())
	}
}

// clientBesideItsConsumer starts node ace's client connected to one server
// alone, once it has filled its files, such that its watch's consumer on
// stream is held by another server: it says which server holds the
// consumer and which the client is connected to. The bus places an R1
// consumer on any of the stream's servers (seen: the client's own, the
// stream's leader or the third, about a third each), so a client whose
// consumer landed on its own server is stopped and another started, on
// the next server in turn, up to 12 times.
func (cm *clusterMesh) clientBesideItsConsumer(t *testing.T, stream string) (d *Daemon, host, other int) {
	t.Helper()
	ctx := context.Background()
	const tries = 12
	for try := 0; try < tries; try++ {
		var leader string
		var consumers []string // the servers holding the stream's consumers
		// awaitConsumers waits until the stream has a leader and n
		// consumers, each with its leader.
		awaitConsumers := func(n int) {
			bustest.Eventually(cm.t, 30*time.Second, func() error {
				st, err := cm.js.Stream(ctx, stream)
				if err != nil {
					return err
				}
				if c := st.CachedInfo().Cluster; c == nil || c.Leader == "" {
					return fmt.Errorf("no leader yet")
				} else {
					leader = c.Leader
				}
				consumers = nil
				for ci := range st.ListConsumers(ctx).Info() {
					if ci.Cluster == nil || ci.Cluster.Leader == "" {
						return fmt.Errorf("consumer %s has no leader yet", ci.Name)
					}
					consumers = append(consumers, ci.Cluster.Leader)
				}
				if len(consumers) != n {
					return fmt.Errorf("%d consumers, want %d", len(consumers), n)
				}
				return nil
			})
		}
		awaitConsumers(0) // a client stopped before this try deletes its own
		other = try % len(cm.cluster.Servers)
		var stop func()
		d, stop = cm.startClient("ace", func(c *Config) { c.Bus.URL = fmt.Sprintf("nats://127.0.0.1:%d", cm.cluster.Ports[other]) })
		cm.waitFile("/etc/web/c.conf", "flavour = vanilla\n")
		awaitConsumers(1)
		for i, s := range cm.cluster.Servers {
			if s.Name() == consumers[0] {
				host = i
			}
		}
		t.Logf("try %d: stream leader %s, client on s%d, its consumer on s%d", try, leader, other, host)
		if host != other {
			return d, host, other
		}
		stop()
	}
	t.Fatalf("the client's consumer was placed with the server it is connected to in %d tries", tries)
	return nil, 0, 0
}
