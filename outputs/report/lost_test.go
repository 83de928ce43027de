package report

import (
	"context"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// LostBuckets names a bucket that lost what this node wrote there (gone,
// made again, purged whole while this node holds keys there, even once
// other nodes wrote there again) and no other: not one untouched, one
// where only this node's own puts or other nodes' keys moved, one purged
// while this node holds nothing there, nor one it could not look at.
func TestLostBucketsNamesEachBucketThatLostThisNodesKeys(t *testing.T) {
	b := newBus(t, needsBucket, collectBucket)
	ctx := context.Background()
	// One value a key, as the server makes its buckets: a report put again
	// takes the place of the one before.
	if _, err := b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: appliedBucket, History: 1}); err != nil {
		t.Fatal(err)
	}
	p := b.pub
	write := func() {
		t.Helper()
		if err := p.Needs(ctx, "web", []Need{{Node: "n1", Module: "web", Kind: "db", Name: "main", State: "met"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Report(ctx, Report{Module: "web", State: "applied"}); err != nil {
			t.Fatal(err)
		}
		if err := p.Items(ctx, "web", map[string][]byte{"hosts": []byte("10.0.0.1 web")}); err != nil {
			t.Fatal(err)
		}
	}
	lost := func(want ...string) {
		t.Helper()
		if got := p.LostBuckets(ctx); !slices.Equal(got, want) {
			t.Fatalf("lost %v, want %v", got, want)
		}
	}
	write()
	lost()
	// This node's only report put again: every message that stood at the
	// last look is gone, but by this node's own put.
	if _, err := p.Report(ctx, Report{Module: "web", State: "waiting"}); err != nil {
		t.Fatal(err)
	}
	lost()
	b.put(collectBucket, "n2.hosts.db", "x") // another node's keys move
	lost()

	// A look that fails (here its context is done) says nothing, and keeps
	// the handles.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if got := p.LostBuckets(done); got != nil {
		t.Fatalf("a look that failed says %v lost", got)
	}
	lost()

	// Deleted and made again, another node writing there before the look:
	// only the stream's creation time tells.
	if err := b.js.DeleteKeyValue(ctx, needsBucket); err != nil {
		t.Fatal(err)
	}
	b.bucket(needsBucket)
	b.put(needsBucket, "n2.db.db.main", "{}")
	lost(needsBucket)
	// Its handle is dropped and the bucket opened anew: its creation time
	// is the new stream's, so it is not said lost again.
	p.Forget()
	write()
	if v, _ := b.get(needsBucket, "n1.web.db.main"); v == "" {
		t.Fatal("the need was not written again after Forget")
	}
	lost()

	// Purged whole while this node has a report there.
	purge(t, b.js, appliedBucket)
	lost(appliedBucket)
	// Purged whole, then another node wrote there before this node looked
	// (a fleet's first client to look writes its reports again): every
	// message that stood at the last look is gone, this node's too.
	p.Forget()
	write()
	lost()
	purge(t, b.js, appliedBucket)
	b.put(appliedBucket, "n2.db", "{}")
	lost(appliedBucket)

	// Gone.
	if err := b.js.DeleteKeyValue(ctx, collectBucket); err != nil {
		t.Fatal(err)
	}
	lost(collectBucket)

	// Purged whole once this node deleted its keys there: nothing it
	// wrote was lost.
	if err := p.Needs(ctx, "web", nil); err != nil {
		t.Fatal(err)
	}
	purge(t, b.js, needsBucket)
	lost()
}

func purge(t *testing.T, js jetstream.JetStream, bucket string) {
	t.Helper()
	st, err := js.Stream(context.Background(), "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
}
