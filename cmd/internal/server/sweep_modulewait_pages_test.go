package server

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module waiting on its archive on more nodes than a page can name is
// one finding whose parts go on over the pages, joined whole by AskSweep;
// one that still leaves nodes out says where to find them: its nodes
// wrote reports, not needs, so the verb's what=needs lists none of them;
// what=applied does.
func TestAModuleWaitTooLargeForAPageSaysWhereTheRestAre(t *testing.T) {
	s := bustest.Start(t, func(o *natsd.Options) { o.MaxPayload = 8 * 1024 })
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	assignmentsKV(t, js)
	bucket(t, js, spec.AppliedBucket)
	ctx := testCtx(t)
	ajs, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 600 {
		node := fmt.Sprintf("node-%04d", i)
		must(t, ajs, "$KV."+spec.AssignmentsBucket+"."+node+".web", `{"provisioning":{}}`)
		must(t, ajs, "$KV."+spec.AppliedBucket+"."+node+".web", `{"node":"`+node+`","module":"web","state":"waiting","files":[],`+
			`"waiting":[{"kind":"module","name":"web","why":"templates archive obj://mesh-artifacts/web.tar.gz: not there yet"}]}`)
	}
	select {
	case <-ajs.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("puts not acknowledged")
	}
	serveQuery(t, nc, js)
	// Every report must be older than stood_after when the sweep is made:
	// on a loaded machine the last ones acknowledged may be younger than a
	// millisecond by then (the test saw 596 of 600 stood asked).
	time.Sleep(20 * time.Millisecond)
	r, err := AskSweep(ctx, nc, "", "", (time.Millisecond).String())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Count != 600 || len(r.Findings[0].Needs) != 600 || r.Findings[0].NeedsLeftOut != 0 || r.Summary.StoodModules != 600 {
		t.Fatalf("summary %+v, %d findings", r.Summary, len(r.Findings))
	}
	// A part that left needs out (not even one fitting beside its text)
	// sends the operator to the reports, not to the needs.
	r.Findings[0].Needs, r.Findings[0].NeedsLeftOut = r.Findings[0].Needs[:10], 590
	var text bytes.Buffer
	WriteSweep(&text, r)
	if strings.Contains(text.String(), "what=needs lists them") || !strings.Contains(text.String(), "what=applied") {
		t.Errorf("the left-out modules are sent where they are not:\n%s", text.String())
	}
}
