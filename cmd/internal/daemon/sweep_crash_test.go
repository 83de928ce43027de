package daemon

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// The bus server the client is connected to crashes (SIGKILL) in an R3
// cluster. For about 3 s the cluster takes the crashed member for online
// and caught up, and may place a new consumer on it, which never answers:
// the reconnect's Sweep (read before any output, so that an unchanged
// report is not put again) waited out its whole 10 s bound on the watcher
// of one bucket, read none of the rest, and the fills waited with it (an
// outside audit: a change reached the file 9–14 s after the crash in
// half its trials). Sweeps run back to back from the reconnect on must
// each read every bucket.
func TestSweepsRightAfterTheClientsServerCrashesReadEveryBucket(t *testing.T) {
	c := bustest.StartProcessCluster(t, 3)
	admin, ajs := c.Connect(t)
	ctx := context.Background()
	buckets := []string{spec.NeedsBucket, spec.CollectBucket, spec.AppliedBucket}
	for _, b := range buckets {
		bustest.PutEventually(t, c.KV(t, ajs, b), "ace.m", []byte(`{}`))
	}
	victim := 0
	for c.Names[victim] == c.MetaLeader(t, 0) {
		victim++
	}
	for _, b := range buckets {
		for c.Leader(t, ajs, "KV_"+b) == victim {
			_, _ = admin.Request("$JS.API.STREAM.LEADER.STEPDOWN.KV_"+b, nil, 2*time.Second)
			time.Sleep(500 * time.Millisecond)
		}
	}
	nc, err := bus.Connect(bus.Options{URL: c.URL(victim), Name: "provisioner.ace"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c.AwaitKnown(t, nc)
	js, _ := jetstream.New(nc)
	c.Kill(t, victim)
	killed := time.Now()
	bustest.Eventually(t, 10*time.Second, func() error {
		if s := nc.ConnectedServerName(); s == "" || s == c.Names[victim] {
			return fmt.Errorf("not reconnected to another member yet (%q)", s)
		}
		return nil
	})
	p := &report.Publisher{NC: nc, JS: js, Node: "ace", Now: time.Now,
		Caught: func(ctx context.Context, kv jetstream.KeyValue, wait time.Duration) error {
			return bus.AwaitReplicasOn(ctx, nc, kv, wait)
		}}
	sweeps, slowest := 0, time.Duration(0)
	for time.Since(killed) < 5*time.Second {
		p.Forget() // as the reconnect does: every key is read again
		start := time.Now()
		sw, err := p.Sweep(ctx, func(string) bool { return true })
		took := time.Since(start)
		if err != nil || len(sw.Read) != len(buckets) {
			t.Fatalf("%v after the crash, a sweep took %v, read %v of %v: %v",
				start.Sub(killed).Round(time.Millisecond), took.Round(time.Millisecond), sw.Read, buckets, err)
		}
		sweeps++
		slowest = max(slowest, took)
	}
	t.Logf("%d sweeps in the 5 s after the crash read every bucket; the slowest took %v", sweeps, slowest.Round(time.Millisecond))
}
