package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestAPagedAnswerIsOfOneReadOfTheBucket: a key on page 0 deleted, and
// another written, between two page requests: every key that stood when
// page 0 was asked is seen exactly once (before, the later pages read the
// bucket afresh and cut it by position: a key there all along was not
// seen), and page 0 asked again reads the bucket afresh.
func TestAPagedAnswerIsOfOneReadOfTheBucket(t *testing.T) {
	_, nc, js, needs := smallPayloadBus(t, 4096)
	serveQuery(t, nc, js)
	var all []string
	for i := range 100 {
		node := fmt.Sprintf("n%03d", i)
		putNeed(t, needs, node, "m", "config", "key", "met", "")
		all = append(all, spec.EncodeKey(node, "m", "config", "key"))
	}
	seen := map[string]int{}
	var pages int
	for page := 0; page == 0 || page < pages; page++ {
		r, _ := askRaw(t, nc, []byte(fmt.Sprintf(`{"what":"needs","page":%d}`, page)))
		pages = r.Pages
		for _, e := range r.Entries {
			seen[str(t, e["key"])]++
		}
		if page == 0 {
			if pages < 3 {
				t.Fatalf("%d pages; the test needs three or more", pages)
			}
			// another client's module leaves: its need, on page 0, is
			// deleted; a new one is written, on the last page
			if err := needs.Delete(testCtx(t), all[0]); err != nil {
				t.Fatal(err)
			}
			putNeed(t, needs, "z999", "m", "config", "key", "met", "")
		}
	}
	for _, k := range all {
		if seen[k] != 1 {
			t.Errorf("%s, there when page 0 was asked, seen %d times", k, seen[k])
		}
	}
	if n := seen[spec.EncodeKey("z999", "m", "config", "key")]; n != 0 {
		t.Errorf("a key written after page 0 was seen %d times among its pages", n)
	}
	r, _ := askRaw(t, nc, []byte(`{"what":"needs"}`))
	if got := str(t, r.Entries[0]["key"]); got != all[1] {
		t.Errorf("page 0 asked again starts with %s; want %s (%s was deleted since)", got, all[1], all[0])
	}
}

// TestAPagedSweepWithTwoServersOnTheBusIsJoined: two servers answer the
// verb (its queue group: a rolling upgrade), and a sweep of several pages
// keeps its later pages to the server that made page 0 by asking a page
// again when another sweep answered it. Before, three to five sweeps of
// five failed with "pages kept coming from different sweeps".
func TestAPagedSweepWithTwoServersOnTheBusIsJoined(t *testing.T) {
	s, nc, js, needs := smallPayloadBus(t, 4096)
	for i := range 60 {
		putNeed(t, needs, fmt.Sprintf("node-%03d", i), "m", "config", fmt.Sprintf("k%d", i), "failed", "own why")
	}
	serveQuery(t, nc, js)
	nc2, js2 := bustest.JetStream(t, s)
	serveQuery(t, nc2, js2)
	client := bustest.Connect(t, s)
	for i := range 5 {
		r, err := AskSweep(testCtx(t), client, "", "", "")
		if err != nil {
			t.Fatalf("sweep %d with two servers: %v", i, err)
		}
		if n := len(r.Findings); n != 60 {
			t.Fatalf("sweep %d: %d findings, want 60", i, n)
		}
	}
}

// TestTheSweepAnswersDespiteALongWhy: one need whose why is nearly a payload long: the sweep still
// answers, within the payload, the why cut.
func TestTheSweepAnswersDespiteALongWhy(t *testing.T) {
	_, nc, js, needs := smallPayloadBus(t, 8192)
	putNeed(t, needs, "ace", "m", "config", "k", "failed", strings.Repeat("w", 8000))
	putNeed(t, needs, "ace", "m", "config", "k2", "failed", "short")
	serveQuery(t, nc, js)
	m, err := nc.Request(spec.QuerySubject, []byte(`{"what":"sweep"}`), 3*time.Second)
	if err != nil {
		t.Fatalf("sweep: %v (one need's long why leaves the whole mesh without a sweep)", err)
	}
	if int64(len(m.Data)) > nc.MaxPayload() {
		t.Fatalf("reply of %d bytes", len(m.Data))
	}
	r, err := AskSweep(testCtx(t), nc, "", "", "")
	if err != nil || len(r.Findings) != 2 || !strings.Contains(r.Findings[0].Why+r.Findings[1].Why, "(cut: 8000 bytes in all)") {
		t.Fatalf("sweep %v: %+v", err, r.Findings)
	}
	for _, f := range r.Findings {
		if len(f.Needs) != 1 || f.NeedsLeftOut != 0 {
			t.Errorf("finding %q names %d needs and leaves %d out; want its one need named", f.Name, len(f.Needs), f.NeedsLeftOut)
		}
	}
}

// smallPayloadBus is a bus whose max payload is maxPayload bytes, with
// the server's buckets made, and its needs bucket.
func smallPayloadBus(t *testing.T, maxPayload int32) (*natsd.Server, *nats.Conn, jetstream.JetStream, jetstream.KeyValue) {
	t.Helper()
	s := bustest.Start(t, func(o *natsd.Options) { o.MaxPayload = maxPayload })
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	return s, nc, js, bucket(t, js, spec.NeedsBucket)
}
