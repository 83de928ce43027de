package report

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// limit is the max_payload of the limited test servers: small, so that a
// report over it is quick to make.
const limit = 64 << 10

func TestAReportOverTheMaxPayloadIsCutToFitAndSaysHowManyFilesItLeftOut(t *testing.T) {
	b := newBusLimited(t, limit, appliedBucket)
	ctx := context.Background()
	sub := b.subscribe("prov.applied.n1.big")
	b.put(appliedBucket, "n1.big", `{"node":"n1","module":"big","state":"waiting"}`)

	const n = 9000
	files := make([]File, n)
	for i := range files {
		files[i] = File{Path: fmt.Sprintf("/srv/big/f%05d.conf", i), Action: "written", Digest: "sha256:" + strings.Repeat("a", 64)}
	}
	wrote, err := b.pub.Report(ctx, Report{Module: "big", State: "applied", Files: files})
	if err != nil || !wrote {
		t.Fatalf("a report of %d files: wrote %v, %v", n, wrote, err)
	}
	val, _ := b.get(appliedBucket, "n1.big")
	if len(val) > limit {
		t.Fatalf("the report is %d bytes, over the max payload %d", len(val), limit)
	}
	got := decode[Report](t, val)
	if got.State != "applied" || len(got.Files) == 0 || len(got.Files)+got.FilesMore != n {
		t.Fatalf("report: state %s, %d files and files_more %d; want applied, %d in all", got.State, len(got.Files), got.FilesMore, n)
	}
	if got.Files[0] != files[0] || got.Files[len(got.Files)-1] != files[len(got.Files)-1] {
		t.Errorf("the files kept are not the first of the list")
	}
	if len(val) < limit-200 {
		t.Errorf("cut to %d bytes: far more than needed left out (limit %d)", len(val), limit)
	}
	if m := b.next(sub); string(m.Data) != val {
		t.Errorf("prov.applied says another report than the bucket's")
	}

	// A waiting list over the limit is cut the same way.
	waiting := make([]Waiting, n)
	for i := range waiting {
		waiting[i] = Waiting{Kind: "vault", Name: fmt.Sprintf("s%05d", i), Why: "no answer from the vault yet"}
	}
	if _, err := b.pub.Report(ctx, Report{Module: "big", State: "waiting", Waiting: waiting}); err != nil {
		t.Fatal(err)
	}
	val, _ = b.get(appliedBucket, "n1.big")
	got = decode[Report](t, val)
	if len(val) > limit || got.State != "waiting" || len(got.Waiting) == 0 || len(got.Waiting)+got.WaitingMore != n {
		t.Errorf("waiting report of %d bytes: %d waiting and waiting_more %d", len(val), len(got.Waiting), got.WaitingMore)
	}
}

func TestReasonsAndWhysAreCutWithAMarker(t *testing.T) {
	b := newBus(t, appliedBucket, needsBucket)
	ctx := context.Background()
	long := strings.Repeat("é", 3000) // 6000 bytes, 2 a character: the cut must not split one
	if _, err := b.pub.Report(ctx, Report{Module: "web", State: "failed", Reason: long,
		Waiting: []Waiting{{Kind: "vault", Name: "x", Why: long}}}); err != nil {
		t.Fatal(err)
	}
	val, _ := b.get(appliedBucket, "n1.web")
	r := decode[Report](t, val)
	for what, s := range map[string]string{"reason": r.Reason, "why": r.Waiting[0].Why} {
		if len(s) > MaxText+64 || !strings.Contains(s, "(cut: 6000 bytes in all)") || !utf8.ValidString(s) {
			t.Errorf("%s is %d bytes: %.80q…", what, len(s), s)
		}
	}
	if err := b.pub.Needs(ctx, "web", []Need{{Node: "n1", Module: "web", Kind: "vault", Name: "x", State: "failed", Why: long}}); err != nil {
		t.Fatal(err)
	}
	val, _ = b.get(needsBucket, "n1.web.vault.x")
	if why := decode[Need](t, val).Why; len(why) > MaxText+64 || !strings.Contains(why, "cut:") {
		t.Errorf("need's why is %d bytes", len(why))
	}
}

func TestItemsAreNotHTMLEscapedAndOneTheBusCannotHoldIsRefusedNamingItsCollection(t *testing.T) {
	b := newBusLimited(t, limit, collectBucket)
	ctx := context.Background()

	// 40 KiB of markup: 40 KiB on the wire, not 240 KiB of \u003c.
	markup := strings.Repeat("<a&b>", 8<<10)
	if err := b.pub.Items(ctx, "web", map[string][]byte{"html": []byte(markup)}); err != nil {
		t.Fatalf("an item of %d bytes of markup: %v", len(markup), err)
	}
	val, _ := b.get(collectBucket, "n1.html.web")
	if !strings.Contains(val, "<a&b>") || decode[Item](t, val).Item != markup {
		t.Errorf("the item is escaped or changed: %.80s…", val)
	}

	// 20 KiB of control characters is 120 KiB encoded: refused before it
	// is sent, naming the collection and the limit; what was recorded goes.
	b.put(collectBucket, "n1.ctl.web", `{"collection":"ctl","contributor":"web","item":"old"}`)
	b.pub.Forget()
	if sw, _ := b.pub.Sweep(ctx, func(string) bool { return true }); len(sw.Adopted) != 1 {
		t.Fatalf("swept %+v, want web's item adopted", sw)
	}
	err := b.pub.Items(ctx, "web", map[string][]byte{"html": []byte(markup), "ctl": []byte(strings.Repeat("\x01", 20<<10))})
	var tl *TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "collection ctl") || !strings.Contains(err.Error(), fmt.Sprint(limit)) {
		t.Fatalf("an item over the max payload once encoded: %v; want a TooLargeError naming collection ctl and %d", err, limit)
	}
	if val, rev := b.get(collectBucket, "n1.ctl.web"); rev != 0 {
		t.Errorf("the item that cannot be recorded left %.60s in the bucket", val)
	}
	if _, rev := b.get(collectBucket, "n1.html.web"); rev == 0 {
		t.Error("the module's other item is gone")
	}
}

// A reason cut to MaxText keeps its end as well as its start: a
// node-engine's error is "<status> from <socket>: … <program>'s last
// words", and the last words say why it failed. Cut at its head alone, a
// long socket path or unit name pushed them out of the report.
func TestAReasonCutKeepsItsLastWords(t *testing.T) {
	b := newBus(t, appliedBucket, needsBucket)
	ctx := context.Background()
	long := "fill 500 from /run/a/very/long/socket: " + strings.Repeat("é", 1000) + " the last words"
	if _, err := b.pub.Report(ctx, Report{Module: "web", State: "failed", Reason: long}); err != nil {
		t.Fatal(err)
	}
	val, _ := b.get(appliedBucket, "n1.web")
	r := decode[Report](t, val)
	if len(r.Reason) > MaxText+64 || !strings.HasPrefix(r.Reason, "fill 500 from /run/a/very/long/socket: ") ||
		!strings.HasSuffix(r.Reason, "the last words") || !strings.Contains(r.Reason, "(cut: ") || !utf8.ValidString(r.Reason) {
		t.Errorf("reason is %d bytes: %q", len(r.Reason), r.Reason)
	}
}
