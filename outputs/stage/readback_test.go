package stage

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/outputs/report"
)

// The start's Sweeps hand over what the last run left, however many it
// took: a Sweep that read the applied bucket (the reports: who held each
// path) but not the collect bucket (its consumer refused) keeps what it
// read, and the next one, which reads the collect bucket, adds its items.
// What HeldBefore and ItemsBefore then hand over is what the buckets
// held. Before, each Sweep replaced what the last one read: the second,
// given no report it had already read, left HeldBefore empty.
func TestTheStartsSweepsTogetherHandOverWhatTheBucketsHeld(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	rep, _ := json.Marshal(report.Report{Node: "n1", Module: "web", State: "applied",
		Files: []report.File{{Path: "/etc/web.conf", Action: "written", Digest: "sha256:1"}}})
	item, _ := json.Marshal(report.Item{Collection: "hosts", Contributor: "web", Item: "10.0.0.1 web"})
	for b, kv := range map[string][2]string{
		"mesh-provisioner_applied": {"n1.web", string(rep)},
		"mesh-provisioner_collect": {"n1.hosts.web", string(item)},
	} {
		k, err := r.js.KeyValue(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Put(ctx, kv[0], []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	// The collect bucket's reads are refused: its stream takes one
	// consumer, and holds one.
	stream, err := r.js.Stream(ctx, "KV_mesh-provisioner_collect")
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	cfg.MaxConsumers = 1
	if _, err := r.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "holder"}); err != nil {
		t.Fatal(err)
	}
	live := func(m string) bool { return m == "web" }

	r.s.Sweep(ctx, live)
	if r.s.swept {
		t.Fatal("the Sweep held though the collect bucket was not read")
	}
	if r.s.ReadBack() {
		t.Fatal("ReadBack says all was read though the collect bucket was not")
	}

	if err := stream.DeleteConsumer(ctx, "holder"); err != nil {
		t.Fatal(err)
	}
	r.s.Sweep(ctx, live)
	if !r.s.swept || !r.s.ReadBack() {
		t.Fatalf("the next Sweep did not read every bucket:\n%s", r.log)
	}
	if got, want := r.s.HeldBefore(), map[string]string{"/etc/web.conf": "web"}; !maps.Equal(got, want) {
		t.Errorf("HeldBefore is %v, want %v", got, want)
	}
	got := r.s.ItemsBefore()
	if len(got) != 1 || string(got["web"]["hosts"]) != "10.0.0.1 web" {
		t.Errorf("ItemsBefore is %q, want web's hosts item", got)
	}
	// Handed over once: a later Sweep keeps nothing more.
	r.s.Forget()
	r.s.Sweep(ctx, live)
	if h, it := r.s.HeldBefore(), r.s.ItemsBefore(); h != nil || it != nil {
		t.Errorf("handed over again: %v %q", h, it)
	}
}

// A bucket that does not exist (a node started before the server made the
// provisioner's buckets) holds nothing of the last run: the start's Sweep
// counts it as read, so the first fill does not wait for it.
func TestABucketThatDoesNotExistIsReadBackAsEmpty(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if err := r.js.DeleteKeyValue(ctx, "mesh-provisioner_collect"); err != nil {
		t.Fatal(err)
	}
	r.s.Sweep(ctx, func(string) bool { return true })
	if !r.s.ReadBack() {
		t.Fatalf("ReadBack waits for %v", r.s.Unread())
	}
	if it := r.s.ItemsBefore(); len(it) != 0 {
		t.Fatalf("ItemsBefore is %q", it)
	}
}
