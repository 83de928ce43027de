package report

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// threeServers starts a three-server JetStream cluster on loopback ports
// and returns its servers, each one's tweak (to start it again on its
// port and store) and a connection to all three.
func threeServers(t *testing.T) ([]*server.Server, []func(*server.Options), string) {
	t.Helper()
	const n = 3
	var client, route [n]int
	for i := range n {
		client[i], route[i] = bustest.FreePort(t), bustest.FreePort(t)
	}
	var servers []*server.Server
	var tweaks []func(*server.Options)
	urls := ""
	for i := range n {
		if i > 0 {
			urls += ","
		}
		urls += fmt.Sprintf("nats://127.0.0.1:%d", client[i])
	}
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
		tweaks = append(tweaks, tweak)
		servers = append(servers, bustest.Start(t, tweak))
	}
	return servers, tweaks, urls
}

// A member of an R3 cluster started again lags behind its stream while it
// catches up. A start's sweep whose read lands on it must not take the
// older report it still holds for the last one written: the new client's
// report equal to that older one would never be put, and the bucket would
// keep the newer one (a "failed" while the file is fine) for good.
func TestASweepAfterAMemberRestartReadsTheLastReportWritten(t *testing.T) {
	servers, tweaks, urls := threeServers(t)
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	var kv jetstream.KeyValue
	for _, b := range []string{needsBucket, collectBucket, appliedBucket} {
		bustest.Eventually(t, 30*time.Second, func() error {
			kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b, Replicas: 3})
			return err
		})
	}
	const modules = 20
	report := func(m int, state, at string) []byte {
		return fmt.Appendf(nil, `{"node":"ace","module":"m%d","state":"%s","at":"%s"}`, m, state, at)
	}
	for m := range modules {
		if _, err := kv.Put(ctx, fmt.Sprintf("ace.m%d", m), report(m, "applied", "2026-01-01T00:00:00Z")); err != nil {
			t.Fatal(err)
		}
	}
	// Which member lags: one the bucket's leader is not.
	info, err := js.Stream(ctx, "KV_"+appliedBucket)
	if err != nil {
		t.Fatal(err)
	}
	lag := 0
	for i, s := range servers {
		if s.Name() != info.CachedInfo().Cluster.Leader {
			lag = i
			break
		}
	}
	bustest.Stop(servers[lag])
	for m := range modules {
		if _, err := kv.Put(ctx, fmt.Sprintf("ace.m%d", m), report(m, "failed", "2026-01-01T00:00:09Z")); err != nil {
			t.Fatal(err)
		}
	}
	// Other nodes' writes while it was down: it has them to catch up on too.
	for i := range 20000 {
		if _, err := js.PublishAsync(fmt.Sprintf("$KV.%s.n%d.x", appliedBucket, i%500), fmt.Append(nil, i)); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 { // within the publisher's bound on acks awaited
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				t.Fatal("other nodes' writes not acknowledged within a minute")
			}
		}
	}
	servers[lag] = bustest.Start(t, tweaks[lag])
	// Sweeps one after another while it catches up, as clients starting
	// then would: each reads through a consumer placed on any member.
	read, unread := 0, 0
	for try := 0; read < 30; try++ {
		if try == 300 {
			t.Fatalf("%d of %d sweeps read the applied bucket", read, try)
		}
		p := &Publisher{NC: nc, JS: js, Node: "ace", Now: time.Now}
		sw, err := p.Sweep(ctx, func(string) bool { return true })
		if !slices.Contains(sw.Read, appliedBucket) {
			// Not read this time: the error says which replica lags.
			if err == nil || !strings.Contains(err.Error(), "entries behind its leader") {
				t.Fatalf("try %d: the applied bucket not read, and the error says %v", try, err)
			}
			unread++
			continue
		}
		read++
		for m := range modules {
			if at := sw.At[fmt.Sprintf("m%d", m)]; at != "2026-01-01T00:00:09Z" {
				t.Fatalf("try %d: m%d's report read was written at %q (%d reports read), not the last one written (at 09)", try, m, at, len(sw.At))
			}
		}
	}
	t.Logf("%d sweeps read the last reports; %d found a replica catching up and did not read", read, unread)
}

// Under other nodes' steady writes a healthy follower is a few entries
// behind at any instant: it lags only if it has not stored, by one look,
// what was stored at the look before.
func TestAReplicaLagsOnlyIfItHasNotStoredWhatTheLookBeforeSaw(t *testing.T) {
	look := func(last uint64, current bool, lag uint64, offline bool) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{
			State: jetstream.StreamState{LastSeq: last},
			Cluster: &jetstream.ClusterInfo{Leader: "s0", Replicas: []*jetstream.PeerInfo{
				{Name: "s1", Current: true},
				{Name: "s2", Current: current, Lag: lag, Offline: offline},
			}},
		}
	}
	for _, c := range []struct {
		name      string
		prev, now *jetstream.StreamInfo
		lags      bool
	}{
		{"every replica current", nil, look(100, true, 0, false), false},
		{"behind at the first look", nil, look(100, false, 3, false), true},
		{"behind by less than stored since the look before", look(100, false, 3, false), look(110, false, 4, false), false},
		{"behind by more than stored since", look(100, false, 3, false), look(102, false, 3, false), true},
		{"catching up after a restart", look(20040, false, 20021, false), look(20040, false, 15000, false), true},
		{"offline: no consumer is placed on it", nil, look(100, false, 50, true), false},
		{"not clustered", nil, &jetstream.StreamInfo{}, false},
	} {
		if r := laggingReplica(c.prev, c.now); (r != nil) != c.lags {
			t.Errorf("%s: lagging %v, want %v", c.name, r, c.lags)
		}
	}
}
