package report

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// PutReports does not wait for the acks: the event follows the ack (so
// it says what the bucket holds), and a report unchanged, acknowledged or
// still in flight, is not put again.
func TestAReportPutWithoutWaitingIsPublishedOnceAcknowledgedAndNotPutAgain(t *testing.T) {
	b := newBus(t, appliedBucket)
	ctx := context.Background()
	sub := b.subscribe("prov.applied.n1.web")
	applied := Report{Module: "web", State: "applied", Files: []File{{Path: "/etc/a", Action: "created", Digest: "sha256:aa"}}}

	if w := b.pub.PutReports(ctx, []Report{applied}); w[0].Err != nil || !w[0].Wrote {
		t.Fatalf("first report: %+v", w[0])
	}
	// Before its ack is in: the same report is not put a second time.
	if w := b.pub.PutReports(ctx, []Report{applied}); w[0].Err != nil || w[0].Wrote {
		t.Fatalf("same report while in flight: %+v", w[0])
	}
	m := b.next(sub)
	val, rev := b.get(appliedBucket, "n1.web")
	if string(m.Data) != val {
		t.Errorf("prov.applied says %s, the bucket %s", m.Data, val)
	}
	if r := decode[Report](t, val); r.Node != "n1" || r.State != "applied" || len(r.Files) != 1 || r.At == "" {
		t.Errorf("bucket holds %+v", r)
	}
	if !b.pub.Settle(time.Second) || b.pub.Acked("web") != "applied" {
		t.Errorf("acked state %q", b.pub.Acked("web"))
	}
	if w := b.pub.PutReports(ctx, []Report{applied}); w[0].Err != nil || w[0].Wrote {
		t.Fatalf("same report once acknowledged: %+v", w[0])
	}
	if _, rev2 := b.get(appliedBucket, "n1.web"); rev2 != rev {
		t.Errorf("the same report was put again: revision %d → %d", rev, rev2)
	}
	b.none(sub)
	if lost := b.pub.TakeLost(); len(lost) != 0 {
		t.Errorf("lost %v", lost)
	}

	waiting := Report{Module: "web", State: "waiting", Waiting: []Waiting{{Kind: "vault", Name: "tls", Why: "no answer"}}}
	if w := b.pub.PutReports(ctx, []Report{waiting}); !w[0].Wrote {
		t.Fatalf("changed report: %+v", w[0])
	}
	if r := decode[Report](t, string(b.next(sub).Data)); r.State != "waiting" {
		t.Errorf("event says %+v", r)
	}
}

// Acks lost: no event is published, the puts of many modules are lost
// together after one ackWait (nothing waits for them meanwhile), each is
// listed once by TakeLost, and the next call puts the same report again.
func TestReportsWhoseAcksAreLostAreListedAfterOneAckWaitAndPutAgain(t *testing.T) {
	b, acksBack := newBusWithoutAcks(t, appliedBucket)
	ctx := context.Background()
	sub := b.subscribe("prov.applied.n1.*")
	const modules = 30
	var rs []Report
	for i := range modules {
		rs = append(rs, Report{Module: fmt.Sprintf("m%02d", i), State: "applied"})
	}
	start := time.Now()
	for i, w := range b.pub.PutReports(ctx, rs) {
		if w.Err != nil || !w.Wrote {
			t.Fatalf("%s: %+v", rs[i].Module, w)
		}
	}
	if took := time.Since(start); took > ackWait/2 {
		t.Errorf("PutReports took %v: it waited for acks", took)
	}
	if b.pub.Quiet() {
		t.Error("quiet while puts await their acks: the daemon's retry tick would sleep through their loss")
	}
	var lost []LostReport
	bustest.Eventually(t, 5*time.Second, func() error {
		lost = append(lost, b.pub.TakeLost()...)
		if len(lost) < modules {
			return fmt.Errorf("%d lost", len(lost))
		}
		return nil
	})
	if took := time.Since(start); took > modules*ackWait/10 {
		t.Errorf("every put lost after %v: they waited in turn", took)
	}
	if len(lost) != modules || lost[0].Err == nil || b.pub.Acked("m00") != "" {
		t.Errorf("lost %d (%v), acked %q", len(lost), lost[0].Err, b.pub.Acked("m00"))
	}
	if !b.pub.Quiet() {
		t.Error("not quiet once every lost report was taken")
	}
	b.none(sub)

	acksBack()
	for i, w := range b.pub.PutReports(ctx, rs) {
		if w.Err != nil || !w.Wrote {
			t.Fatalf("%s put again: %+v", rs[i].Module, w)
		}
	}
	for range modules {
		b.next(sub)
	}
	if !b.pub.Settle(time.Second) || b.pub.Acked("m29") != "applied" || len(b.pub.TakeLost()) != 0 {
		t.Errorf("once acks come back: acked %q", b.pub.Acked("m29"))
	}
}

// A put the bus has no stream for (the bucket deleted) is lost at once,
// not after ackWait.
func TestAReportPutToABucketGoneIsLostAtOnce(t *testing.T) {
	b := newBus(t, appliedBucket)
	ctx := context.Background()
	if w := b.pub.PutReports(ctx, []Report{{Module: "web", State: "waiting"}}); !w[0].Wrote || !b.pub.Settle(time.Second) {
		t.Fatalf("first: %+v", w[0])
	}
	if err := b.js.DeleteKeyValue(ctx, appliedBucket); err != nil {
		t.Fatal(err)
	}
	if w := b.pub.PutReports(ctx, []Report{{Module: "web", State: "applied"}}); !w[0].Wrote {
		t.Fatalf("second: %+v", w[0])
	}
	if !b.pub.Settle(2 * time.Second) {
		t.Fatal("the put to a bucket gone is still awaiting its ack")
	}
	if b.pub.Quiet() {
		t.Error("quiet with a lost report not taken yet")
	}
	if lost := b.pub.TakeLost(); len(lost) != 1 || lost[0].Module != "web" || lost[0].State != "applied" || b.pub.Acked("web") != "waiting" {
		t.Errorf("lost %+v, acked %q", lost, b.pub.Acked("web"))
	}
	if !b.pub.Quiet() {
		t.Error("not quiet once the lost report was taken")
	}
}

// An ack is not settled while its event is still going out: Settle waits
// for the acknowledged state and Quiet says not quiet (a CI run once saw
// Settle return with Acked still "").
func TestSettleWaitsForAnAckWhoseEventIsStillGoingOut(t *testing.T) {
	b := newBus(t, appliedBucket)
	landing := make(chan struct{})
	release := make(chan struct{})
	ackLanding = func() { landing <- struct{}{}; <-release }
	t.Cleanup(func() { ackLanding = nil })

	r := Report{Module: "web", State: "applied"}
	if w := b.pub.PutReports(context.Background(), []Report{r}); w[0].Err != nil || !w[0].Wrote {
		t.Fatalf("put: %+v", w[0])
	}
	<-landing
	if b.pub.Quiet() {
		t.Error("quiet while an ack's event is still going out")
	}
	if b.pub.Settle(50 * time.Millisecond) {
		t.Errorf("settled while an ack's event is still going out (acked %q)", b.pub.Acked("web"))
	}
	close(release)
	if !b.pub.Settle(time.Second) || b.pub.Acked("web") != "applied" {
		t.Errorf("acked state %q after settling", b.pub.Acked("web"))
	}
}
