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
