package server

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestMetricsSayWhichBucketsTheSweepCouldNotRead: a sweep judges a bucket
// it cannot read as empty (SPEC §6.2's reply names it in missing_buckets
// or unreadable_buckets); /metrics showed the same gauges as of a mesh
// with nothing in that bucket, so a server whose user may not read the
// assignments looked, to a dashboard, like a mesh with no module, and no
// alert could tell. Each bucket the sweep did not read is a series of
// mesh_provisioner_sweep_unread_buckets{bucket,why}: why is not_permitted
// (the bus refuses the server) or missing (not made yet).
func TestMetricsSayWhichBucketsTheSweepCouldNotRead(t *testing.T) {
	s, srvCreds, _, js := assignmentsUnreadable(t)
	put(t, assignmentsKV(t, js), "ace.web", `{"provisioning":{}}`)
	putNeed(t, bucket(t, js, spec.NeedsBucket), "ace", "web", "config", "port", "waiting", "not written yet")

	addr := fmt.Sprintf("127.0.0.1:%d", bustest.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{NATSURL: s.ClientURL(), Creds: srvCreds, RegistryEvery: time.Hour, Metrics: addr, Log: quietLog()})
	}()
	t.Cleanup(func() { cancel(); <-done })
	bustest.Eventually(t, 10*time.Second, func() error {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/metrics: %s", resp.Status)
		}
		return nil
	})
	fams, text := scrape(t, addr)
	if f := fams["mesh_provisioner_sweep_unread_buckets"]; f == nil || len(f.Metric) != 1 {
		t.Fatalf("mesh_provisioner_sweep_unread_buckets: want one series, for the assignments:\n%s", text)
	}
	if got := value(t, fams, "mesh_provisioner_sweep_unread_buckets", "bucket", spec.AssignmentsBucket, "why", "not_permitted"); got != 1 {
		t.Errorf("the assignments bucket the server may not read: %v, want 1", got)
	}
	// What the example rules read: every family they name is served here.
	checkRules(t, text)
}

// TestMetricsSayABucketNotMadeYet: the assignments bucket is the
// controller's; before it makes it, the sweep judges it empty and /metrics
// says it is missing.
func TestMetricsSayABucketNotMadeYet(t *testing.T) {
	s := bustest.Start(t)
	addr := fmt.Sprintf("127.0.0.1:%d", bustest.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{NATSURL: s.ClientURL(), RegistryEvery: time.Hour, Metrics: addr, Log: quietLog()})
	}()
	t.Cleanup(func() { cancel(); <-done })
	bustest.Eventually(t, 10*time.Second, func() error {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/metrics: %s", resp.Status)
		}
		return nil
	})
	fams, text := scrape(t, addr)
	if f := fams["mesh_provisioner_sweep_unread_buckets"]; f == nil || len(f.Metric) != 1 {
		t.Fatalf("mesh_provisioner_sweep_unread_buckets: want one series, for the assignments:\n%s", text)
	}
	if got := value(t, fams, "mesh_provisioner_sweep_unread_buckets", "bucket", spec.AssignmentsBucket, "why", "missing"); got != 1 {
		t.Errorf("the assignments bucket not made yet: %v, want 1", got)
	}
}
