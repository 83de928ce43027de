package server

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// Buckets that exist are left as they are, whatever --replicas says; a
// bucket with fewer replicas than asked is said at the start, naming it
// and how to raise it, so an operator who asked for 3 does not believe
// the buckets outlive a server.
func TestServeSaysABucketWithFewerReplicasThanAsked(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js) // made with 1 replica
	var logs bustest.Buffer
	ctx := testCtx(t)
	if err := ensureUntilDone(ctx, js, bustest.Connect(t, s), 3, zerolog.New(&logs)); err != nil {
		t.Fatal(err)
	}
	for _, b := range Buckets {
		if !strings.Contains(logs.String(), `"bucket":"`+b+`","replicas":1,"asked":3`) ||
			!strings.Contains(logs.String(), "nats stream edit KV_"+b+" --replicas 3") {
			t.Errorf("bucket %s with 1 replica against --replicas 3 not said:\n%s", b, logs.String())
		}
	}
	var again bustest.Buffer
	if err := ensureUntilDone(ctx, js, bustest.Connect(t, s), 1, zerolog.New(&again)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(again.String(), "fewer replicas") {
		t.Errorf("buckets with the replicas asked are warned of:\n%s", again.String())
	}
}
