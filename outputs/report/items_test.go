package report

import (
	"context"
	"slices"
	"testing"
)

func TestItemsArePutWhenTheyDifferAndDeletedWhenGone(t *testing.T) {
	b := newBus(t, collectBucket)
	ctx := context.Background()
	const hostsKey, peersKey = "n1.hosts.web", "n1.peers.web"

	// A nil text writes nothing (no text in this run yet); an empty one is an item.
	if err := b.pub.Items(ctx, "web", map[string][]byte{"hosts": []byte("10.0.0.1 web"), "peers": nil, "empty": {}}); err != nil {
		t.Fatal(err)
	}
	if got := b.keys(collectBucket); !sameSet(got, []string{hostsKey, "n1.empty.web"}) {
		t.Fatalf("keys %v, want %s and n1.empty.web", got, hostsKey)
	}
	val, rev := b.get(collectBucket, hostsKey)
	if got := decode[Item](t, val); got != (Item{Collection: "hosts", Contributor: "web", Item: "10.0.0.1 web"}) {
		t.Errorf("%s holds %+v", hostsKey, got)
	}
	if val, _ := b.get(collectBucket, "n1.empty.web"); decode[Item](t, val).Item != "" {
		t.Errorf("empty item holds %s", val)
	}

	// Same text: not put again. A nil text keeps what is written.
	if err := b.pub.Items(ctx, "web", map[string][]byte{"hosts": []byte("10.0.0.1 web"), "peers": []byte("p")}); err != nil {
		t.Fatal(err)
	}
	if _, rev2 := b.get(collectBucket, hostsKey); rev2 != rev {
		t.Errorf("%s put again with the same bytes (revision %d → %d)", hostsKey, rev, rev2)
	}
	if err := b.pub.Items(ctx, "web", map[string][]byte{"hosts": []byte("10.0.0.1 web"), "peers": nil}); err != nil {
		t.Fatal(err)
	}
	if val, _ := b.get(collectBucket, peersKey); decode[Item](t, val).Item != "p" {
		t.Errorf("a nil text did not keep %s: %s", peersKey, val)
	}

	// A collection no longer contributed: deleted.
	if err := b.pub.Items(ctx, "web", map[string][]byte{"peers": nil}); err != nil {
		t.Fatal(err)
	}
	if got := b.keys(collectBucket); !slices.Equal(got, []string{peersKey}) {
		t.Errorf("keys %v, want only %s", got, peersKey)
	}
	if err := b.pub.Items(ctx, "web", nil); err != nil {
		t.Fatal(err)
	}
	if got := b.keys(collectBucket); len(got) != 0 {
		t.Errorf("keys %v after the module's items went", got)
	}
}

func TestDeleteStaleItems(t *testing.T) {
	b := newBus(t, collectBucket)
	ctx := context.Background()
	web := `{"collection":"hosts","contributor":"web","item":"10.0.0.1 web"}`
	b.put(collectBucket, "n1.hosts.web", web)
	b.put(collectBucket, "n1.hosts.gone", `{"collection":"hosts","contributor":"gone","item":"x"}`)
	b.put(collectBucket, "n2.hosts.gone", `{"collection":"hosts","contributor":"gone","item":"y"}`)
	b.put(collectBucket, "n1.out=of=shape.x", `{}`)
	_, webRev := b.get(collectBucket, "n1.hosts.web")

	n, err := b.pub.DeleteStaleItems(ctx, func(m string) bool { return m == "web" })
	if err != nil || n != 1 {
		t.Fatalf("deleted %d, %v; want 1", n, err)
	}
	if got := b.keys(collectBucket); !sameSet(got, []string{"n1.hosts.web", "n2.hosts.gone", "n1.out=of=shape.x"}) {
		t.Errorf("keys %v: want this node's gone module's item deleted, the rest kept", got)
	}

	// The live item is remembered as written: the same text is not put
	// again, and the next Items without it deletes it.
	if err := b.pub.Items(ctx, "web", map[string][]byte{"hosts": []byte("10.0.0.1 web")}); err != nil {
		t.Fatal(err)
	}
	if _, rev := b.get(collectBucket, "n1.hosts.web"); rev != webRev {
		t.Errorf("an item already on the bus was put again (revision %d → %d)", webRev, rev)
	}
	if err := b.pub.Items(ctx, "web", map[string][]byte{}); err != nil {
		t.Fatal(err)
	}
	if _, rev := b.get(collectBucket, "n1.hosts.web"); rev != 0 {
		t.Error("an item the module no longer contributes was kept")
	}
}

func TestDeleteStaleItemsWithoutBucketFails(t *testing.T) {
	b := newBus(t)
	if _, err := b.pub.DeleteStaleItems(context.Background(), func(string) bool { return true }); err == nil {
		t.Fatal("no error with no collect bucket")
	}
}
