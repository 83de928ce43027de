package server

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A client may write only keys under its own node in the needs, applied
// and collect buckets, but a JetStream KV stream takes rollups: one write of
// its own key carrying "Nats-Rollup: all" removed every key of the bucket,
// every other node's needs, reports or items (examples/nats/server.conf
// cannot refuse a header). No one of the mesh purges these buckets by
// rollup (deletes are markers; the server purges old markers by the API),
// so the buckets the server makes refuse rollups, and a bucket it made
// earlier is set so at its next start. Writes and deletes still work.
func TestAClientWriteCannotRollUpAnotherNodesKeys(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ctx := testCtx(t)
	if err := EnsureBuckets(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{spec.NeedsBucket, spec.AppliedBucket, spec.CollectBucket} {
		kv := bucket(t, js, name)
		put(t, kv, "ace.web.x", `{}`)
		m := nats.NewMsg("$KV." + name + ".g14.m.x")
		m.Header.Set("Nats-Rollup", "all")
		m.Data = []byte(`{}`)
		r, err := nc.RequestMsg(m, 10*time.Second)
		if err != nil || !strings.Contains(string(r.Data), `"error"`) {
			t.Errorf("%s: a rollup of every key was taken: %v %s", name, err, r.Data)
		}
		if e, err := kv.Get(ctx, "ace.web.x"); err != nil || string(e.Value()) != `{}` {
			t.Errorf("%s: another node's key is gone after a rollup: %v", name, err)
		}
		put(t, kv, "g14.m.x", `{"a":1}`)
		if err := kv.Delete(ctx, "g14.m.x"); err != nil {
			t.Errorf("%s: delete: %v", name, err)
		}
	}
}
