package report

import (
	"context"
	"reflect"
	"testing"
)

func TestReportIsWrittenAndPublishedOnlyWhenItDiffers(t *testing.T) {
	b := newBus(t, appliedBucket)
	ctx := context.Background()
	sub := b.subscribe("prov.applied.n1.web")
	applied := Report{Module: "web", State: "applied", Files: []File{{Path: "/etc/a", Action: "created", Digest: "sha256:aa"}}}

	wrote, err := b.pub.Report(ctx, applied)
	if err != nil || !wrote {
		t.Fatalf("first report: wrote %v, %v", wrote, err)
	}
	val, rev := b.get(appliedBucket, "n1.web")
	got := decode[Report](t, val)
	want := applied
	want.Node, want.At, want.Waiting = "n1", "2026-01-02T03:04:06Z", []Waiting{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bucket holds %+v\nwant          %+v", got, want)
	}
	if m := b.next(sub); string(m.Data) != val {
		t.Errorf("prov.applied says %s, the bucket %s", m.Data, val)
	}

	// The same report at another time: nothing written, nothing said.
	if wrote, err := b.pub.Report(ctx, applied); err != nil || wrote {
		t.Fatalf("same report again: wrote %v, %v", wrote, err)
	}
	if _, rev2 := b.get(appliedBucket, "n1.web"); rev2 != rev {
		t.Errorf("the same report was put again: revision %d → %d", rev, rev2)
	}
	b.none(sub)

	// A report with no files says an empty list, not null.
	waiting := Report{Module: "web", State: "waiting", Waiting: []Waiting{{Kind: "vault", Name: "tls", Why: "no answer"}}}
	if wrote, err := b.pub.Report(ctx, waiting); err != nil || !wrote {
		t.Fatalf("changed report: wrote %v, %v", wrote, err)
	}
	val, _ = b.get(appliedBucket, "n1.web")
	if m := b.next(sub); string(m.Data) != val {
		t.Errorf("prov.applied says %s, the bucket %s", m.Data, val)
	}
	if raw := decode[map[string]any](t, val); raw["files"] == nil || raw["state"] != "waiting" {
		t.Errorf("waiting report %s: want state waiting and files []", val)
	}

	// Removed: the key goes, the event says removed.
	if wrote, err := b.pub.Report(ctx, Report{Module: "web", State: "removed"}); err != nil || !wrote {
		t.Fatalf("removed: wrote %v, %v", wrote, err)
	}
	if val, rev := b.get(appliedBucket, "n1.web"); rev != 0 {
		t.Errorf("removed module's key still holds %s", val)
	}
	if r := decode[Report](t, string(b.next(sub).Data)); r.State != "removed" || r.Module != "web" || r.Node != "n1" {
		t.Errorf("removed event %+v", r)
	}
	// Reported again after removal: written again (nothing is remembered of it).
	if wrote, err := b.pub.Report(ctx, waiting); err != nil || !wrote {
		t.Fatalf("after removal: wrote %v, %v", wrote, err)
	}
}

func TestReportsWriteManyAndForgetWritesAgain(t *testing.T) {
	b := newBus(t, appliedBucket)
	ctx := context.Background()
	sub := b.subscribe("prov.applied.n1.>")
	rs := []Report{{Module: "a", State: "applied"}, {Module: "b.c", State: "failed", Reason: "bad"}}
	for i, w := range b.pub.Reports(ctx, rs) {
		if w.Err != nil || !w.Wrote {
			t.Fatalf("report %d: %+v", i, w)
		}
	}
	seen := map[string]bool{}
	for range rs {
		seen[b.next(sub).Subject] = true
	}
	if !seen["prov.applied.n1.a"] || !seen["prov.applied.n1.b=2Ec"] {
		t.Errorf("events on %v, want prov.applied.n1.a and prov.applied.n1.b=2Ec", seen)
	}
	if _, rev := b.get(appliedBucket, "n1.b=2Ec"); rev == 0 {
		t.Error("module b.c's report not at its encoded key")
	}
	for i, w := range b.pub.Reports(ctx, rs) {
		if w.Err != nil || w.Wrote {
			t.Fatalf("report %d again: %+v", i, w)
		}
	}
	b.pub.Forget()
	for i, w := range b.pub.Reports(ctx, rs) {
		if w.Err != nil || !w.Wrote {
			t.Fatalf("report %d after Forget: %+v (want written again)", i, w)
		}
	}
}

func TestReportWithoutBucketFails(t *testing.T) {
	b := newBus(t)
	sub := b.subscribe("prov.applied.>")
	if _, err := b.pub.Report(context.Background(), Report{Module: "web", State: "applied"}); err == nil {
		t.Fatal("no error with no applied bucket")
	}
	b.none(sub)
	b.bucket(appliedBucket)
	if wrote, err := b.pub.Report(context.Background(), Report{Module: "web", State: "applied"}); err != nil || !wrote {
		t.Fatalf("once the bucket is there: wrote %v, %v (want tried again)", wrote, err)
	}
}

func TestChangedNeverCarriesAValue(t *testing.T) {
	b := newBus(t)
	sub := b.subscribe("prov.changed.n1.web")
	if err := b.pub.Changed("web", "config", "db.password"); err != nil {
		t.Fatal(err)
	}
	if err := b.pub.Changed("web", "config", ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []map[string]string{{"kind": "config", "key": "db.password"}, {"kind": "config"}} {
		if got := decode[map[string]string](t, string(b.next(sub).Data)); !reflect.DeepEqual(got, want) {
			t.Errorf("prov.changed %v, want %v", got, want)
		}
	}
}

// prov.changed's bytes are what encoding a map gave (the keys sorted), a
// key needing escapes included.
func TestChangedSaysWhatAMapEncodedSays(t *testing.T) {
	for _, c := range [][2]string{{"config", "db.host"}, {"config", ""}, {"vault", `we"ird\key` + "\x01é<&>"}} {
		msg := map[string]string{"kind": c[0]}
		if c[1] != "" {
			msg["key"] = c[1]
		}
		if got, want := string(changedMsg(c[0], c[1])), string(encode(msg)); got != want {
			t.Errorf("changedMsg(%q, %q) = %s, want %s", c[0], c[1], got, want)
		}
	}
}
