package report

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// Two clients for one node (another host given the same --node, a cloned
// machine): each overwrites the other's reports, and nothing said so (an
// outside audit). A put made on the sequence of its last put that the
// stream refuses says it, in an error line and in Why (/healthz); the
// report is lost and put again at the next call, which lands.
func TestAReportOverwrittenBySomeoneElseIsSaid(t *testing.T) {
	b := newBus(t, appliedBucket)
	ctx := context.Background()
	var log bustest.Buffer
	b.pub.Overwritten = &Overwritten{Node: "n1", Log: zerolog.New(&log)}
	other := &Publisher{NC: b.nc, JS: b.js, Node: "n1", Now: time.Now}
	report := func(state string) Report {
		return Report{Module: "web", State: state, Reason: fmt.Sprint(state, " ", time.Now().UnixNano())}
	}
	put := func(p *Publisher, r Report) {
		t.Helper()
		if w := p.PutReports(ctx, []Report{r}); w[0].Err != nil || !w[0].Wrote {
			t.Fatalf("put %+v: %+v", r, w[0])
		}
		if !p.Settle(5 * time.Second) {
			t.Fatal("a put not acknowledged")
		}
	}

	put(b.pub, report("applied"))
	put(b.pub, report("waiting")) // its own puts, one after another: no condition refused
	if why := b.pub.Overwritten.Why(); why != "" || log.String() != "" {
		t.Fatalf("a client's own puts said overwritten: %q\n%s", why, log.String())
	}
	put(other, report("failed")) // the second client
	if w := b.pub.PutReports(ctx, []Report{report("applied")}); !w[0].Wrote {
		t.Fatalf("%+v", w[0])
	}
	b.pub.Settle(5 * time.Second)
	lost := b.pub.TakeLost()
	if len(lost) != 1 || !strings.Contains(lost[0].Err.Error(), "wrong last sequence") {
		t.Fatalf("the put over the other client's report: lost %v, want it refused for its sequence", lost)
	}
	if why := b.pub.Overwritten.Why(); !strings.Contains(why, `"web"`) || !strings.Contains(why, "second client") {
		t.Errorf("Why() = %q", why)
	}
	if n := strings.Count(log.String(), "is a second client running for node"); n != 1 {
		t.Errorf("%d error lines, want 1:\n%s", n, log.String())
	}
	again := report("applied")
	put(b.pub, again) // put again, unconditionally
	if val, _ := b.get(appliedBucket, "n1.web"); !strings.Contains(val, again.Reason) {
		t.Errorf("the report put again is not in the bucket: %s", val)
	}
	// The other client's next put is refused in its turn (it knows the
	// key at its own last put): it says so too, and puts again.
	if w := other.PutReports(ctx, []Report{report("failed")}); !w[0].Wrote {
		t.Fatalf("%+v", w[0])
	}
	other.Settle(5 * time.Second)
	if lost := other.TakeLost(); len(lost) != 1 {
		t.Fatalf("the other client's put over this one's: lost %v", lost)
	}
	put(other, report("failed"))
	b.pub.PutReports(ctx, []Report{report("waiting")})
	b.pub.Settle(5 * time.Second)
	if lost := b.pub.TakeLost(); len(lost) != 1 {
		t.Errorf("a second overwrite: lost %v", lost)
	}
	if n := strings.Count(log.String(), "is a second client running for node"); n != 1 {
		t.Errorf("%d error lines within 10 minutes, want 1:\n%s", n, log.String())
	}
}

// A client's own puts of one report in flight together, its removal
// (a delete) and a put after it, and what it wrote forgotten (the bus
// back) are no overwrite.
func TestAClientsOwnPutsAndDeletesAreNoOverwrite(t *testing.T) {
	b := newBus(t, appliedBucket)
	ctx := context.Background()
	var log bustest.Buffer
	b.pub.Overwritten = &Overwritten{Node: "n1", Log: zerolog.New(&log)}
	for i := range 50 { // not waited for: several in flight at once
		b.pub.PutReports(ctx, []Report{{Module: "web", State: "applied", Reason: fmt.Sprint(i)}})
		if i%7 == 0 {
			b.pub.Settle(5 * time.Second)
		}
	}
	b.pub.Settle(5 * time.Second)
	if _, err := b.pub.Report(ctx, Report{Module: "web", State: "removed"}); err != nil {
		t.Fatal(err)
	}
	b.pub.PutReports(ctx, []Report{{Module: "web", State: "applied", Reason: "back"}})
	b.pub.Settle(5 * time.Second)
	b.pub.Forget()
	b.pub.PutReports(ctx, []Report{{Module: "web", State: "applied", Reason: "after forget"}})
	b.pub.Settle(5 * time.Second)
	if lost := b.pub.TakeLost(); len(lost) != 0 || b.pub.Overwritten.Why() != "" || log.String() != "" {
		t.Errorf("lost %v, why %q, log:\n%s", lost, b.pub.Overwritten.Why(), log.String())
	}
	if val, _ := b.get(appliedBucket, "n1.web"); !strings.Contains(val, "after forget") {
		t.Errorf("bucket holds %s", val)
	}
}

// The bucket purged (an operator's purge, noticed at the next refill tick)
// refuses the next conditional put as "wrong last sequence: 0": no client
// wrote the key, so no second client is said (an outside audit: every node
// said one for 10 minutes); the put is lost and goes again.
func TestAPurgedBucketIsNoSecondClient(t *testing.T) {
	b := newBus(t, appliedBucket)
	ctx := context.Background()
	var log bustest.Buffer
	b.pub.Overwritten = &Overwritten{Node: "n1", Log: zerolog.New(&log)}
	b.pub.PutReports(ctx, []Report{{Module: "web", State: "applied", Reason: "1"}})
	b.pub.Settle(5 * time.Second)
	stream, err := b.js.Stream(ctx, "KV_"+appliedBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	b.pub.PutReports(ctx, []Report{{Module: "web", State: "applied", Reason: "2"}})
	b.pub.Settle(5 * time.Second)
	if lost := b.pub.TakeLost(); len(lost) != 1 {
		t.Fatalf("the put after the purge: lost %v", lost)
	}
	if why := b.pub.Overwritten.Why(); why != "" || log.String() != "" {
		t.Errorf("a purge said as a second client: %q\n%s", why, log.String())
	}
	b.pub.PutReports(ctx, []Report{{Module: "web", State: "applied", Reason: "2"}})
	b.pub.Settle(5 * time.Second)
	if val, _ := b.get(appliedBucket, "n1.web"); !strings.Contains(val, `"reason":"2"`) {
		t.Errorf("the report put again after the purge: bucket holds %q", val)
	}
}

// Once a report was overwritten, the refill tick (ForgetReports) has
// every report put again, so a second client that stops leaves no report
// of its own standing (an outside audit: its failed reports stood for
// good over this client's applied ones). Without an overwrite heard, it
// puts nothing.
func TestReportsArePutAgainAtTheTickWhileOverwritten(t *testing.T) {
	b := newBus(t, appliedBucket)
	ctx := context.Background()
	b.pub.Overwritten = &Overwritten{Node: "n1", Log: zerolog.Nop()}
	mine := Report{Module: "web", State: "applied", Reason: "mine"}
	b.pub.PutReports(ctx, []Report{mine})
	b.pub.Settle(5 * time.Second)
	b.pub.ForgetReports()
	if w := b.pub.PutReports(ctx, []Report{mine}); w[0].Wrote {
		t.Fatal("with no overwrite heard, the same report was put again")
	}
	other := &Publisher{NC: b.nc, JS: b.js, Node: "n1", Now: time.Now}
	other.PutReports(ctx, []Report{{Module: "web", State: "failed", Reason: "theirs"}})
	other.Settle(5 * time.Second)
	b.pub.PutReports(ctx, []Report{{Module: "web", State: "waiting", Reason: "heard"}}) // refused: heard
	b.pub.Settle(5 * time.Second)
	b.pub.TakeLost()
	b.pub.PutReports(ctx, []Report{mine}) // put again, unconditionally
	b.pub.Settle(5 * time.Second)
	other.PutReports(ctx, []Report{{Module: "web", State: "failed", Reason: "theirs again"}}) // refused: said on its side
	other.Settle(5 * time.Second)
	other.TakeLost()
	other.PutReports(ctx, []Report{{Module: "web", State: "failed", Reason: "theirs again"}}) // and it stops after this one
	other.Settle(5 * time.Second)
	b.pub.ForgetReports() // this client's refill tick
	if w := b.pub.PutReports(ctx, []Report{mine}); !w[0].Wrote {
		t.Fatal("while overwritten, the tick did not put the report again")
	}
	b.pub.Settle(5 * time.Second)
	if val, _ := b.get(appliedBucket, "n1.web"); !strings.Contains(val, `"reason":"mine"`) {
		t.Errorf("the bucket holds %q, not this client's report", val)
	}
}
